// gzip: a list of URLs may come compressed (urls.csv.gz). zlib inflates it as
// it is read, with the same lazy loading as every other library.
#include "imgcache_shims.h"
#include "loader.h"

#include <stdlib.h>
#include <zlib.h>

#define IC_ZLIB_FUNCTIONS(X)                                           \
    X(int, inflateInit2_, (z_streamp, int, const char *, int))         \
    X(int, inflate, (z_streamp, int))                                  \
    X(int, inflateReset, (z_streamp))                                  \
    X(int, inflateEnd, (z_streamp))

IC_LIBRARY(zlib, "zlib1g", IC_ZLIB_FUNCTIONS, "libz.so.1", "libz.so")

void *ic_gunzip_new(char *error, size_t error_size) {
    if (ic_zlib_load(error, error_size) != 0) return NULL;
    z_stream *stream = calloc(1, sizeof *stream);
    if (stream == NULL) {
        ic_set_error(error, error_size, "out of memory");
        return NULL;
    }
    // 15 + 16: a gzip wrapper, with the largest window.
    if (p_inflateInit2_(stream, 15 + 16, ZLIB_VERSION, (int)sizeof *stream) != Z_OK) {
        free(stream);
        ic_set_error(error, error_size, "cannot start zlib");
        return NULL;
    }
    return stream;
}

int ic_gunzip_step(void *handle, const uint8_t *input, size_t input_size, size_t *consumed,
                   uint8_t *output, size_t output_size, size_t *produced) {
    z_stream *stream = handle;
    stream->next_in = (Bytef *)input;
    stream->avail_in = (uInt)input_size;
    stream->next_out = output;
    stream->avail_out = (uInt)output_size;
    int status = p_inflate(stream, Z_NO_FLUSH);
    *consumed = input_size - stream->avail_in;
    *produced = output_size - stream->avail_out;
    switch (status) {
    case Z_OK: return 0;
    case Z_BUF_ERROR: return 0;  // no progress possible with what was given: more input
    case Z_STREAM_END:
        // Concatenated members (gzip -c a b > c) follow one another: start the next.
        p_inflateReset(stream);
        return 1;
    default: return -1;
    }
}

void ic_gunzip_free(void *handle) {
    if (handle == NULL) return;
    p_inflateEnd(handle);
    free(handle);
}
