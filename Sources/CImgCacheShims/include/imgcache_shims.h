// Thin C edge of imgcache.
//
// What Swift cannot do on its own lives here:
//  * call libcurl's variadic setopt/getinfo functions (one wrapper per argument type);
//  * reach <sys/xattr.h> and fcntl's open-file-description locks, which Swift's
//    Glibc module does not import;
//  * own the setjmp that libpng and libjpeg need, whose default error handlers
//    longjmp or call exit().
// Every library is opened with dlopen on first use, so a process that only reads
// the cache never maps libcurl and its dozens of dependencies.
#ifndef IMGCACHE_SHIMS_H
#define IMGCACHE_SHIMS_H

#include <stddef.h>
#include <stdint.h>
#include <curl/curl.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

// MARK: - Loading

/// Loads libcurl and runs curl_global_init exactly once. Returns 0, or -1 with a
/// message in `error`.
int ic_curl_load(char *error, size_t error_size);

/// Loads libpng (and libjpeg) for header probes. Returns 0, or -1 with a message.
int ic_png_load(char *error, size_t error_size);
int ic_jpeg_load(char *error, size_t error_size);

// MARK: - libcurl easy interface

CURL *ic_curl_easy_init(void);
void ic_curl_easy_cleanup(CURL *handle);
void ic_curl_easy_reset(CURL *handle);
CURLcode ic_curl_easy_perform(CURL *handle);
const char *ic_curl_easy_strerror(CURLcode code);
const char *ic_curl_version(void);

CURLcode ic_curl_easy_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode ic_curl_easy_setopt_string(CURL *handle, CURLoption option, const char *value);
CURLcode ic_curl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value);
CURLcode ic_curl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value);

typedef size_t (*ic_curl_data_callback)(char *data, size_t size, size_t count, void *user);
typedef int (*ic_curl_progress_callback)(void *user, curl_off_t dltotal, curl_off_t dlnow,
                                         curl_off_t ultotal, curl_off_t ulnow);
CURLcode ic_curl_easy_setopt_data_callback(CURL *handle, CURLoption option, ic_curl_data_callback cb);
CURLcode ic_curl_easy_setopt_progress_callback(CURL *handle, ic_curl_progress_callback cb);

CURLcode ic_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value);
CURLcode ic_curl_easy_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value);
CURLcode ic_curl_easy_getinfo_string(CURL *handle, CURLINFO info, const char **value);

/// What the handle's own socket callback keeps and checks: socket()'s errno (0 when it
/// succeeded; libcurl keeps none), and, when `refuses_private` is set, whether it refused to
/// connect to a private address (and which).
struct ic_socket_guard {
    int error;
    int refuses_private;
    int refused;
    char address[64];
};

/// Opens the handle's sockets through imgcache's own callback, which fills `guard`.
CURLcode ic_curl_easy_guard_sockets(CURL *handle, struct ic_socket_guard *guard);

/// 1 when `address` is loopback, private, shared, link-local, multicast, unspecified or
/// reserved (an IPv4 address inside an IPv6 one judged as itself); 0 when public.
int ic_address_is_private(const struct sockaddr *address);

struct curl_slist *ic_curl_slist_append(struct curl_slist *list, const char *value);
void ic_curl_slist_free_all(struct curl_slist *list);

// MARK: - libcurl multi interface

CURLM *ic_curl_multi_init(void);
CURLMcode ic_curl_multi_cleanup(CURLM *multi);
CURLMcode ic_curl_multi_add_handle(CURLM *multi, CURL *handle);
CURLMcode ic_curl_multi_remove_handle(CURLM *multi, CURL *handle);
CURLMcode ic_curl_multi_perform(CURLM *multi, int *running);
CURLMcode ic_curl_multi_poll(CURLM *multi, int timeout_ms, int *numfds);
CURLMcode ic_curl_multi_wakeup(CURLM *multi);
/// Returns the next finished transfer: its handle and result. 0 when none is left.
int ic_curl_multi_next_done(CURLM *multi, CURL **handle, CURLcode *result);
CURLMcode ic_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value);
const char *ic_curl_multi_strerror(CURLMcode code);

// MARK: - libcurl share interface

/// A share handle lets the easy handles of one multi handle use one cookie store.
CURLSH *ic_curl_share_init(void);
CURLSHcode ic_curl_share_setopt_long(CURLSH *share, CURLSHoption option, long value);
CURLSHcode ic_curl_share_cleanup(CURLSH *share);

// MARK: - Image header probes

/// What a header probe learns without decoding pixels.
typedef struct {
    uint32_t width;
    uint32_t height;
    uint32_t bit_depth;
    uint32_t channels;
    int has_alpha;
    int interlaced;
} ic_image_header;

/// Reads a PNG's IHDR through libpng. Returns 0, or -1 with libpng's message in `error`.
int ic_png_read_header(const uint8_t *data, size_t size, ic_image_header *out,
                       char *error, size_t error_size);

/// Reads a JPEG's frame header through libjpeg. Returns 0, or -1 with libjpeg's message.
int ic_jpeg_read_header(const uint8_t *data, size_t size, ic_image_header *out,
                        char *error, size_t error_size);

// MARK: - Full decoders

/// A decoded image: every frame composited onto the canvas, as RGBA8.
typedef struct {
    uint32_t width;
    uint32_t height;
    uint32_t frame_count;
    /// frame_count x width x height x 4 bytes (malloc'd).
    uint8_t *pixels;
    /// frame_count display times in milliseconds (malloc'd); 0 for a still image.
    uint32_t *delays_ms;
    /// Times an animation plays (0: forever); -1 for a still image.
    int32_t loop_count;
    /// The embedded ICC profile (malloc'd), NULL when there is none: the pixels
    /// are in its colours, turned into sRGB by `ic_color_icc_to_srgb` when shown.
    uint8_t *icc;
    size_t icc_size;
    /// Without a profile, the colour description of AVIF and HEIF (ITU-T H.273
    /// code points; 0: none given, taken as sRGB).
    int32_t color_primaries;
    int32_t transfer_characteristics;
} ic_decoded_image;

/// Frees what a decoder allocated (safe on a zeroed struct).
void ic_decoded_image_free(ic_decoded_image *image);

/// Offset of the first JPEG marker 0xFF `code` in `bytes` at or after `start`, or -1.
long ic_jpeg_find_marker(const uint8_t *bytes, size_t count, size_t start, uint8_t code);

/// Each decoder fills `out` and returns 0, or returns -1 with the library's
/// message in `error` (nothing to free). `max_pixels` bounds width x height x
/// frames, checked before each allocation, so a hostile file cannot make one
/// that large ("more pixels than the limit" in `error`). `max_frames` stops an
/// animation after that many frames (0: every frame). A library error never
/// exits or longjmps past the caller.
int ic_png_decode(const uint8_t *data, size_t size, uint64_t max_pixels, uint32_t max_frames,
                  ic_decoded_image *out, char *error, size_t error_size);
int ic_jpeg_decode(const uint8_t *data, size_t size, uint64_t max_pixels, uint32_t max_frames,
                   ic_decoded_image *out, char *error, size_t error_size);
/// As the decoders above, at a reduced size that is still at least `min_width` x `min_height`
/// (0: any): PNG shrunk row by row as it is read, JPEG through its DCT scaling, WebP through
/// libwebp's scaled decoding (straight to that size). The full-size picture is never made.
/// A picture asked for at a size is one to be shown: a JPEG's damaged scan data is concealed
/// (grey, as browsers show it) where the whole decode, also the full check, refuses it.
int ic_png_decode_reduced(const uint8_t *data, size_t size, uint64_t max_pixels, uint32_t min_width, uint32_t min_height,
                          ic_decoded_image *out, char *error, size_t error_size);
int ic_jpeg_decode_reduced(const uint8_t *data, size_t size, uint64_t max_pixels, uint32_t min_width, uint32_t min_height,
                           ic_decoded_image *out, char *error, size_t error_size);
int ic_webp_decode_reduced(const uint8_t *data, size_t size, uint64_t max_pixels, uint32_t min_width, uint32_t min_height,
                           ic_decoded_image *out, char *error, size_t error_size);
int ic_webp_decode(const uint8_t *data, size_t size, uint64_t max_pixels, uint32_t max_frames,
                   ic_decoded_image *out, char *error, size_t error_size);
int ic_gif_decode(const uint8_t *data, size_t size, uint64_t max_pixels, uint32_t max_frames,
                  ic_decoded_image *out, char *error, size_t error_size);

int ic_avif_decode(const uint8_t *data, size_t size, uint64_t max_pixels, uint32_t max_frames,
                   ic_decoded_image *out, char *error, size_t error_size);
int ic_heif_decode(const uint8_t *data, size_t size, uint64_t max_pixels, uint32_t max_frames,
                   ic_decoded_image *out, char *error, size_t error_size);
int ic_jxl_decode(const uint8_t *data, size_t size, uint64_t max_pixels, uint32_t max_frames,
                  ic_decoded_image *out, char *error, size_t error_size);
int ic_tiff_decode(const uint8_t *data, size_t size, uint64_t max_pixels, uint32_t max_frames,
                   ic_decoded_image *out, char *error, size_t error_size);
/// An SVG document laid out at `shown_width` x `shown_height` (its size as shown; 0 for the canvas) and
/// stretched onto a `width` x `height` canvas.
int ic_svg_render(const uint8_t *data, size_t size, uint32_t width, uint32_t height, double shown_width,
                  double shown_height, uint64_t max_pixels, ic_decoded_image *out, char *error, size_t error_size);

/// Where `needle` first occurs in `data[start..<count]` (memmem), or -1: markup is searched
/// as bytes, at the speed of the C library, since a hostile document may be megabytes of comment.
ptrdiff_t ic_find_bytes(const uint8_t *data, size_t count, size_t start, const uint8_t *needle, size_t needle_count);

// MARK: - Headers read through a library
/// What libjxl says of a JPEG XL file's start (or all of it): size (upright),
/// bit depth, alpha, animation and, when the input holds them all, the frames.
typedef struct {
    uint32_t width;
    uint32_t height;
    uint32_t bit_depth;
    int has_alpha;
    int animated;
    /// Frames counted (0 when the input ends first).
    uint32_t frame_count;
    uint32_t orientation;
    /// 1 when its colours are not sRGB's (an ICC profile, or other primaries or transfer), or not
    /// known from the bytes at hand; 0 when they are sRGB.
    int has_colour_profile;
} ic_jxl_header;
/// `complete`: 0 the header from what has arrived, 1 the whole file with its frames
/// counted from their headers (no pixel decoded; a frame's data is skipped by its
/// table of contents, and the last one's is not looked at).
/// 0; 1 when more bytes are needed for the header; 2 when `complete` and the
/// file ends inside a frame (the header filled, the frames counted so far); -1 with a message.
int ic_jxl_read_header(const uint8_t *data, size_t size, int complete, ic_jxl_header *out, char *error, size_t error_size);

// MARK: - Colour
/// Turns `count` RGBA8 pixels in the colours of an ICC profile into sRGB in
/// place (alpha kept): 0; 1 when nothing was done (no usable profile); -1
/// when lcms2 cannot be loaded (its message in `error`).
int ic_color_icc_to_srgb(uint8_t *rgba, uint64_t count, const uint8_t *icc, size_t icc_size,
                         char *error, size_t error_size);
/// The same for pixels described by H.273 colour primaries and transfer (AVIF, HEIF).
int ic_color_primaries_to_srgb(uint8_t *rgba, uint64_t count, int primaries, int transfer, char *error, size_t error_size);
/// CMYK8 ink (`inverted`: as Adobe writes it) through its ICC profile into opaque RGBA8 sRGB.
int ic_color_cmyk_to_srgb(const uint8_t *cmyk, uint8_t *rgba, uint64_t count, int inverted, const uint8_t *icc,
                          size_t icc_size, char *error, size_t error_size);


// MARK: - Encoders

/// Encoded bytes (malloc'd; free with ic_encoded_free).
typedef struct {
    uint8_t *bytes;
    size_t size;
} ic_encoded;

void ic_encoded_free(ic_encoded *encoded);

/// Each encoder takes width x height RGBA8 pixels and fills `out`; 0, or -1
/// with the library's message. `quality` is 1-100 (JPEG, lossy WebP).
/// `ic_png_encode` takes `channels` bytes a pixel: 4 (RGBA) or 3 (RGB, for an opaque image).
int ic_png_encode(const uint8_t *pixels, uint32_t width, uint32_t height, int channels, ic_encoded *out,
                  char *error, size_t error_size);
int ic_jpeg_encode(const uint8_t *rgba, uint32_t width, uint32_t height, int quality, ic_encoded *out,
                   char *error, size_t error_size);
int ic_webp_encode(const uint8_t *rgba, uint32_t width, uint32_t height, int quality, int lossless,
                   ic_encoded *out, char *error, size_t error_size);

/// An animated WebP of `frame_count` frames, each width x height RGBA8, one
/// after another in `frames`, shown for `delays_ms` each; `loop_count` 0 loops forever.
int ic_webp_encode_animation(const uint8_t *frames, uint32_t width, uint32_t height, uint32_t frame_count,
                             const uint32_t *delays_ms, int32_t loop_count, int quality, int lossless,
                             ic_encoded *out, char *error, size_t error_size);

/// A GIF (animated when `frame_count` > 1) from `frame_count` frames of
/// width x height RGBA8 pixels: each frame quantised to at most 255 colours
/// of its own (median cut), pixels under half alpha transparent;
/// `delays_ms` per frame; `loop_count` 0 plays forever, 1 once.
int ic_gif_encode(const uint8_t *frames, uint32_t width, uint32_t height, uint32_t frame_count,
                  const uint32_t *delays_ms, int loop_count, ic_encoded *out, char *error, size_t error_size);

/// A JPEG XL through libjxl (lossless at `quality` 100; else cjxl's distance for that quality);
/// `rgba` holds RGB, three samples a pixel, when `has_alpha` is 0.
int ic_jxl_encode(const uint8_t *rgba, uint32_t width, uint32_t height, int quality, int has_alpha,
                  ic_encoded *out, char *error, size_t error_size);
/// An AVIF (8-bit 4:2:0, or 4:4:4 at `quality` 100) through libavif and its AV1 encoder.
int ic_avif_encode(const uint8_t *rgba, uint32_t width, uint32_t height, int quality, int has_alpha,
                   ic_encoded *out, char *error, size_t error_size);
/// `frame_count` frames of `width` x `height` RGBA8 one after another as an AVIF sequence, each shown
/// for its `delays_ms` (libavif 0.11 writes no play count: the sequence loops).
int ic_avif_encode_animation(const uint8_t *frames, uint32_t width, uint32_t height, uint32_t frame_count,
                             const uint32_t *delays_ms, int quality, int has_alpha, ic_encoded *out, char *error,
                             size_t error_size);
// MARK: - Extended attributes and locks

/// lgetxattr: the attribute's length, or -1 with errno set (ENODATA when absent,
/// ENOTSUP where the file system has no user attributes, ERANGE when `size` is short).
long ic_get_attribute(const char *path, const char *name, void *value, size_t size);

/// lsetxattr (create or replace): 0, or -1 with errno set.
int ic_set_attribute(const char *path, const char *name, const void *value, size_t size);

/// Whether the file system holding `path` stores user extended attributes.
int ic_supports_attributes(const char *path);

/// Locks byte `index` of the file open as `descriptor` with an open-file-description
/// lock (F_OFD_SETLK[W]): shared or exclusive, waiting or not. OFD locks belong to
/// the open file, not the process, so two threads or two descriptors of one process
/// exclude each other like two processes do. 0, or -1 with errno (EAGAIN: held).
int ic_lock_byte(int descriptor, long index, int exclusive, int wait);

/// Releases byte `index`.
int ic_unlock_byte(int descriptor, long index);

/// Whether another open file holds a lock on bytes `start` to `start + length - 1`
/// of the file open as `descriptor`: 1 or 0, or -1 with errno.
int ic_range_locked_by_others(int descriptor, long start, long length);

/// Opens `path` inside the folder open as `directory` with openat2, refusing any
/// symbolic link on the way and any path leading out of the folder. The descriptor,
/// or -1 with errno (ELOOP or EXDEV for a link; ENOSYS before Linux 5.6).
int ic_open_beneath(int directory, const char *path, int flags);

/// Maps the first `count` 64-bit counters of the file open as `descriptor`, shared
/// with every process mapping it, growing the file to hold them when it is shorter.
/// A SIGBUS in the mapping (the file cut short by another program) is caught: see
/// `ic_counters_lost`. Given back with `ic_unmap_counters`.
/// Refused (NULL, errno EOPNOTSUPP) on network and FUSE file systems, where other
/// machines' writes would not show. NULL with errno on failure.
uint64_t *ic_map_counters(int descriptor, size_t count);

/// Unmaps counters mapped by `ic_map_counters`.
void ic_unmap_counters(uint64_t *counters, size_t count);

/// Whether the mapping of counters was lost: the file was cut short under it (a SIGBUS,
/// caught: its pages became private zeros). Its counters must not be used any more.
int ic_counters_lost(const uint64_t *counters);

/// Counter `index` of a mapping, read atomically.
uint64_t ic_counter_load(const uint64_t *counters, size_t index);

/// Adds one to counter `index` of a mapping atomically; the value before.
uint64_t ic_counter_advance(uint64_t *counters, size_t index);

// MARK: - The remote tier: SHA-256 (libcrypto) and Redis (hiredis)

/// Loads libcrypto. 0, or -1 with the reason in `error`.
int ic_crypto_load(char *error, size_t error_size);

/// SHA-256 of `length` bytes at `data` into `digest`: 0, or -1.
int ic_sha256(const void *data, size_t length, uint8_t digest[32]);
/// The SHA-256 of what `fd` reads from its offset to its end: 0, or -1 on a read error.
int ic_sha256_file(int fd, uint8_t digest[32]);

/// Loads hiredis. 0, or -1 with the reason in `error`.
int ic_redis_load(char *error, size_t error_size);

/// A Redis connection (a `redisContext`), or NULL with the reason in `error`.
/// Replies wait at most `timeout_ms`.
void *ic_redis_connect_tcp(const char *host, int port, long connect_timeout_ms, long timeout_ms,
                           char *error, size_t error_size);
void *ic_redis_connect_unix(const char *path, long connect_timeout_ms, long timeout_ms, char *error, size_t error_size);
void ic_redis_free(void *context);
/// The connection's socket, for shutting it down from another thread (an interrupted run).
int ic_redis_fd(void *context);

/// Queues one command (its arguments as bytes); sent with the next reply read. 0, or -1.
int ic_redis_append(void *context, int argc, const char **argv, const size_t *lengths);

/// One reply as plain values: `type` is hiredis's (1 string, 2 array, 3
/// integer, 4 nil, 5 status, 6 error); `bytes` points into the reply, valid
/// until `ic_redis_free_reply`.
typedef struct {
    int type;
    long long integer;
    const char *bytes;
    size_t length;
} ic_redis_value;

/// The next reply (to free with `ic_redis_free_reply`), or NULL with the reason in `error`.
void *ic_redis_reply(void *context, ic_redis_value *value, char *error, size_t error_size);
void ic_redis_free_reply(void *reply);

#ifdef __cplusplus
}
#endif


// MARK: - Versions (version_shim.c)

/// The C libraries `imgcache --version` describes.
enum {
    IC_LIBRARY_CURL = 0,
    IC_LIBRARY_CRYPTO = 1,
    IC_LIBRARY_PNG = 2,
    IC_LIBRARY_JPEG = 3,
    IC_LIBRARY_WEBP = 4,
    IC_LIBRARY_GIF = 5,
    IC_LIBRARY_HIREDIS = 6,
    IC_LIBRARY_AVIF = 7,
    IC_LIBRARY_HEIF = 8,
    IC_LIBRARY_JXL = 9,
    IC_LIBRARY_TIFF = 10,
    IC_LIBRARY_RSVG = 11,
    IC_LIBRARY_LCMS = 12,
    IC_LIBRARY_COUNT = 13
};

/// Each format library's own version (NULL or 0 when it cannot be loaded):
/// loading it is what `--version` reports on.
const char *ic_avif_version(void);
const char *ic_heif_version(void);
uint32_t ic_jxl_version(void);
const char *ic_tiff_version(void);
const char *ic_rsvg_version(void);
/// lcms2's version (2140 for 2.14), or 0 when it cannot be loaded.
int ic_lcms_version(void);

/// Loads library `library` (an IC_LIBRARY_ value) as imgcache uses it: 0 with
/// its version in `version` and the file it came from in `path`; -1 with why
/// it cannot be loaded in `version`.
int ic_library_describe(int library, char *version, size_t version_size, char *path, size_t path_size);

/// `host` (UTF-8, NUL-terminated) as IDNA writes it (NFC, UTS #46 mapping, Punycode) into
/// `output`: 0 when done, 1 when it is no host name IDNA allows, -1 when libidn2 is missing
/// (why in `error`).
int ic_idn_to_ascii(const char *host, char *output, size_t output_size, char *error, size_t error_size);

/// gzip streams (lists of URLs given compressed): a decompressor, or NULL
/// with why in `error` (zlib missing). `ic_gunzip_step` inflates from `input`
/// into `output`, saying how much of each it used: 0 to go on, 1 at the end
/// of a gzip member (the next one may follow), -1 when the data is not gzip.
void *ic_gunzip_new(char *error, size_t error_size);
int ic_gunzip_step(void *stream, const uint8_t *input, size_t input_size, size_t *consumed,
                   uint8_t *output, size_t output_size, size_t *produced);
void ic_gunzip_free(void *stream);

/// Tar files (`export --webdataset`) through libarchive: a writer for the
/// file at `path` (NULL with why in `error`), members added whole with a fixed
/// time, owner and mode, and the close that finishes the file (0, or -1).
void *ic_tar_open(const char *path, char *error, size_t error_size);
int ic_tar_add(void *tar, const char *name, const void *bytes, size_t size, char *error, size_t error_size);
int ic_tar_close(void *tar, char *error, size_t error_size);

// MARK: - Decode workers (worker_shim.c)

/// Starts `path` with `argv` and `envp` as a decode worker: the socket `channel` as its
/// descriptor 3, `output` as its stdout and stderr, /dev/null as stdin, no other descriptor,
/// every signal at its default and unblocked, in a process group of its own. 0 with its
/// process id in `pid`, or posix_spawn's error.
int ic_worker_spawn(const char *path, char *const argv[], char *const envp[], int channel, int output, int32_t *pid);
/// A connected pair of SOCK_SEQPACKET sockets (close-on-exec): 0, or errno.
int ic_socket_pair(int descriptors[2]);
/// A close-on-exec pipe: 0, or errno.
int ic_pipe(int descriptors[2]);
/// An anonymous file in memory (close-on-exec): its descriptor, or -errno.
int ic_memfd(const char *name);
/// One message with up to 4 descriptors (SCM_RIGHTS): the bytes sent, or -errno.
int64_t ic_message_send(int socket, const void *bytes, size_t size, const int *descriptors, int count);
/// One message and the descriptors it carried (at most `capacity` kept, received close-on-exec):
/// its size (0: the other end is closed), or -errno (-EMSGSIZE when larger than `size`).
int64_t ic_message_receive(int socket, void *buffer, size_t size, int *descriptors, int capacity, int *count);
/// RLIMIT_AS (`which` 0) or RLIMIT_CPU (1), as the resource number prlimit takes.
int ic_limit_names(int which);
/// Sets process `pid`'s soft limit of `resource` to `soft` (UINT64_MAX, or above the hard limit:
/// the hard limit); 0, or errno.
int ic_limit_process(int32_t pid, int resource, uint64_t soft);
/// This process's hard (`hard` 1) or soft limit of `resource` (UINT64_MAX: none); workers inherit the hard one.
uint64_t ic_own_limit(int resource, int hard);
/// Under an address-space limit (ulimit -v), keeps malloc to two arenas; 1 when it did, 0 when there is no limit.
int ic_fit_address_space(void);
/// getrusage's maximum resident size in bytes: it only grows, but Linux carries the spawning
/// process's over an exec, so it tells that the peak may have grown, not what it is.
uint64_t ic_rusage_max_rss(void);
/// In a decode worker: malloc keeps what it freed for the next job instead of giving it back.
void ic_worker_keep_memory(void);
/// Process `pid`'s address space in bytes (what RLIMIT_AS counts; 0: this process's own); 0 when
/// it cannot be read.
uint64_t ic_address_space(int32_t pid);
/// The CPU time this process used, user and system, in milliseconds.
uint64_t ic_cpu_milliseconds(void);
/// In a worker: a fatal signal (SIGSEGV, SIGBUS, SIGILL, SIGABRT, SIGFPE, SIGTRAP, SIGXCPU) is
/// written to `channel` as `crash SIGNAL ERRNO` before the worker dies of it.
void ic_worker_report_crashes(int channel);
/// In a worker: dies with `parent` (and fails if it is already gone), no core files, no new
/// privileges, and the system-call filter (libseccomp): 0, or -1 with why in `error`.
int ic_worker_confine(int32_t parent, char *error, size_t error_size);
/// In a worker, for the tests of its filter: tries `socket`, `exec`, `write` (a new file) or
/// `kill-parent`; 0 when it was allowed, else -errno (or the worker is killed).
int ic_worker_attempt(const char *what);
/// SIGSYS (`which` 0), SIGXCPU (1).
int ic_signal_number(int which);

#endif
