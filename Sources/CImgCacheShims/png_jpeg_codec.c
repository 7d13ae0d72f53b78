// PNG and JPEG: header probes, full decoders and encoders. Both libraries report fatal errors by calling an
// error handler that must not return: libpng's default longjmps, libjpeg's
// default calls exit(). Each entry point here owns a jmp_buf, installs a handler
// that copies the library's message and longjmps back, and always frees what
// it created.
#define _GNU_SOURCE
#include "imgcache_shims.h"
#include "decoded_image.h"
#include "loader.h"

#include <png.h>
#include <stdio.h>
#include <jpeglib.h>
#include <jerror.h>
#include <pthread.h>
#include <setjmp.h>
#include <string.h>

// MARK: - libpng

#define IC_PNG_FUNCTIONS(X)                                                              \
    X(png_structp, png_create_read_struct,                                               \
      (png_const_charp, png_voidp, png_error_ptr, png_error_ptr))                        \
    X(png_infop, png_create_info_struct, (png_const_structrp))                           \
    X(void, png_destroy_read_struct, (png_structpp, png_infopp, png_infopp))             \
    X(void, png_set_read_fn, (png_structrp, png_voidp, png_rw_ptr))                      \
    X(png_voidp, png_get_io_ptr, (png_const_structrp))                                   \
    X(png_voidp, png_get_error_ptr, (png_const_structrp))                                \
    X(void, png_read_info, (png_structrp, png_inforp))                                   \
    X(png_uint_32, png_get_valid, (png_const_structrp, png_const_inforp, png_uint_32))   \
    X(png_uint_32, png_get_IHDR,                                                         \
      (png_const_structrp, png_const_inforp, png_uint_32 *, png_uint_32 *, int *, int *, \
       int *, int *, int *))                                                             \
    X(void, png_set_expand, (png_structrp))                                              \
    X(void, png_set_strip_16, (png_structrp))                                            \
    X(void, png_set_scale_16, (png_structrp))                                            \
    X(png_uint_32, png_get_iCCP,                                                         \
      (png_const_structrp, png_inforp, png_charpp, int *, png_bytepp, png_uint_32 *))    \
    X(void, png_set_gray_to_rgb, (png_structrp))                                         \
    X(void, png_set_add_alpha, (png_structrp, png_uint_32, int))                         \
    X(int, png_set_interlace_handling, (png_structrp))                                   \
    X(void, png_read_update_info, (png_structrp, png_inforp))                            \
    X(void, png_read_image, (png_structrp, png_bytepp))                                  \
    X(void, png_read_row, (png_structrp, png_bytep, png_bytep))                          \
    X(void, png_read_end, (png_structrp, png_inforp))                                    \
    X(int, png_image_write_to_memory,                                                    \
      (png_imagep, void *, png_alloc_size_t *, int, const void *, png_int_32, const void *)) \
    X(void, png_image_free, (png_imagep))                                                \
    X(size_t, png_get_rowbytes, (png_const_structrp, png_const_inforp))                \
    X(void, png_set_chunk_malloc_max, (png_structrp, png_alloc_size_t))

IC_LIBRARY(png, "libpng16-16", IC_PNG_FUNCTIONS, "libpng16.so.16", "libpng16.so")

typedef struct {
    jmp_buf jump;
    const uint8_t *data;
    size_t size;
    size_t offset;
    char *error;
    size_t error_size;
} png_probe_context;

static void png_probe_error(png_structp png, png_const_charp message) {
    png_probe_context *context = p_png_get_error_ptr(png);
    ic_set_error(context->error, context->error_size, message);
    longjmp(context->jump, 1);
}

static void png_probe_warning(png_structp png, png_const_charp message) {
    (void)png;
    (void)message;
}

static void png_probe_read(png_structp png, png_bytep out, size_t length) {
    png_probe_context *context = p_png_get_io_ptr(png);
    if (length > context->size - context->offset) {
        png_probe_error(png, "unexpected end of data");
    }
    memcpy(out, context->data + context->offset, length);
    context->offset += length;
}

int ic_png_read_header(const uint8_t *data, size_t size, ic_image_header *out,
                       char *error, size_t error_size) {
    if (ic_png_load(error, error_size) != 0) return -1;
    png_probe_context context = {.data = data, .size = size, .error = error, .error_size = error_size};
    png_structp png = p_png_create_read_struct(PNG_LIBPNG_VER_STRING, &context,
                                               png_probe_error, png_probe_warning);
    if (png == NULL) {
        ic_set_error(error, error_size, "cannot create a libpng reader");
        return -1;
    }
    png_infop info = p_png_create_info_struct(png);
    if (info == NULL) {
        p_png_destroy_read_struct(&png, NULL, NULL);
        ic_set_error(error, error_size, "cannot create a libpng info struct");
        return -1;
    }
    if (setjmp(context.jump) != 0) {
        p_png_destroy_read_struct(&png, &info, NULL);
        return -1;
    }
    p_png_set_read_fn(png, &context, png_probe_read);
    // A text or private chunk larger than any profile is skipped (a warning), not held: a 4x4
    // image behind a 300 MB tEXt chunk decodes in the memory of a 4x4 image.
    p_png_set_chunk_malloc_max(png, 16u << 20);
    p_png_read_info(png, info);
    png_uint_32 width = 0, height = 0;
    int bit_depth = 0, color_type = 0, interlace = 0;
    p_png_get_IHDR(png, info, &width, &height, &bit_depth, &color_type, &interlace, NULL, NULL);
    int has_trns = p_png_get_valid(png, info, PNG_INFO_tRNS) != 0;
    out->width = width;
    out->height = height;
    out->bit_depth = (uint32_t)bit_depth;
    switch (color_type) {
    case PNG_COLOR_TYPE_GRAY: out->channels = 1; break;
    case PNG_COLOR_TYPE_GRAY_ALPHA: out->channels = 2; break;
    case PNG_COLOR_TYPE_PALETTE: out->channels = 1; break;
    case PNG_COLOR_TYPE_RGB: out->channels = 3; break;
    default: out->channels = 4; break;
    }
    out->has_alpha = (color_type & PNG_COLOR_MASK_ALPHA) != 0 || has_trns;
    out->interlaced = interlace != PNG_INTERLACE_NONE;
    p_png_destroy_read_struct(&png, &info, NULL);
    return 0;
}

// MARK: - libjpeg

#define IC_JPEG_FUNCTIONS(X)                                                    \
    X(struct jpeg_error_mgr *, jpeg_std_error, (struct jpeg_error_mgr *))       \
    X(void, jpeg_CreateDecompress, (j_decompress_ptr, int, size_t))             \
    X(void, jpeg_destroy_decompress, (j_decompress_ptr))                        \
    X(void, jpeg_mem_src, (j_decompress_ptr, const unsigned char *, unsigned long)) \
    X(int, jpeg_read_header, (j_decompress_ptr, boolean))                       \
    X(boolean, jpeg_start_decompress, (j_decompress_ptr))                       \
    X(JDIMENSION, jpeg_read_scanlines, (j_decompress_ptr, JSAMPARRAY, JDIMENSION)) \
    X(boolean, jpeg_finish_decompress, (j_decompress_ptr))                      \
    X(void, jpeg_CreateCompress, (j_compress_ptr, int, size_t))                 \
    X(void, jpeg_destroy_compress, (j_compress_ptr))                            \
    X(void, jpeg_mem_dest, (j_compress_ptr, unsigned char **, unsigned long *)) \
    X(void, jpeg_set_defaults, (j_compress_ptr))                                \
    X(void, jpeg_set_quality, (j_compress_ptr, int, boolean))                   \
    X(void, jpeg_start_compress, (j_compress_ptr, boolean))                     \
    X(JDIMENSION, jpeg_write_scanlines, (j_compress_ptr, JSAMPARRAY, JDIMENSION)) \
    X(void, jpeg_finish_compress, (j_compress_ptr))                               \
    X(void, jpeg_save_markers, (j_decompress_ptr, int, unsigned int))           \
    X(boolean, jpeg_read_icc_profile, (j_decompress_ptr, JOCTET **, unsigned int *)) \
    X(void, jpeg_calc_output_dimensions, (j_decompress_ptr))

IC_LIBRARY(jpeg, "libjpeg62-turbo", IC_JPEG_FUNCTIONS, "libjpeg.so.62", "libjpeg.so")

typedef struct {
    struct jpeg_error_mgr manager;  // first, so the library's pointer is ours too
    jmp_buf jump;
    char *error;
    size_t error_size;
    /// Set once decoding reaches the scan data, where skipped bytes are lost pixels.
    int in_scan;
    /// Set for a picture to be shown (a thumbnail): damaged scan data is drawn
    /// as libjpeg conceals it (grey), as browsers show such files.
    int conceals;
} jpeg_probe_error_manager;

static void jpeg_probe_error_exit(j_common_ptr info) {
    jpeg_probe_error_manager *manager = (jpeg_probe_error_manager *)info->err;
    char message[JMSG_LENGTH_MAX];
    manager->manager.format_message(info, message);
    ic_set_error(manager->error, manager->error_size, message);
    longjmp(manager->jump, 1);
}

static void jpeg_probe_output_message(j_common_ptr info) { (void)info; }

/// libjpeg's error manager set to jump back to `manager->jump` with the
/// message in `error` instead of exiting or printing.
static struct jpeg_error_mgr *jpeg_probe_errors(jpeg_probe_error_manager *manager, char *error, size_t error_size) {
    struct jpeg_error_mgr *errors = p_jpeg_std_error(&manager->manager);
    manager->manager.error_exit = jpeg_probe_error_exit;
    manager->manager.output_message = jpeg_probe_output_message;
    manager->error = error;
    manager->error_size = error_size;
    return errors;
}

int ic_jpeg_read_header(const uint8_t *data, size_t size, ic_image_header *out,
                        char *error, size_t error_size) {
    if (ic_jpeg_load(error, error_size) != 0) return -1;
    // Zeroed so that destroying after an early error finds no memory pool to free.
    struct jpeg_decompress_struct info;
    memset(&info, 0, sizeof info);
    jpeg_probe_error_manager manager;
    info.err = jpeg_probe_errors(&manager, error, error_size);
    if (setjmp(manager.jump) != 0) {
        p_jpeg_destroy_decompress(&info);
        return -1;
    }
    p_jpeg_CreateDecompress(&info, JPEG_LIB_VERSION, sizeof info);
    p_jpeg_mem_src(&info, data, (unsigned long)size);
    p_jpeg_read_header(&info, TRUE);
    out->width = info.image_width;
    out->height = info.image_height;
    out->bit_depth = (uint32_t)info.data_precision;
    out->channels = (uint32_t)info.num_components;
    out->has_alpha = 0;
    out->interlaced = info.progressive_mode ? 1 : 0;
    p_jpeg_destroy_decompress(&info);
    return 0;
}

// MARK: - Full PNG and JPEG decoding

#include <stdlib.h>

void ic_decoded_image_free(ic_decoded_image *image) {
    if (image == NULL) return;
    free(image->pixels);
    free(image->delays_ms);
    free(image->icc);
    memset(image, 0, sizeof *image);
}

void ic_attach_icc(ic_decoded_image *out, const uint8_t *icc, size_t size) {
    if (icc == NULL || size == 0) return;
    free(out->icc);
    out->icc = malloc(size);
    out->icc_size = out->icc ? size : 0;
    if (out->icc) memcpy(out->icc, icc, size);
}

int ic_allocate_still(ic_decoded_image *out, uint32_t width, uint32_t height, uint64_t max_pixels,
                      char *error, size_t error_size) {
    if (width == 0 || height == 0) {
        ic_set_error(error, error_size, "zero width or height");
        return -1;
    }
    if ((uint64_t)width * height > max_pixels) {
        ic_set_error(error, error_size, "more pixels than the limit");
        return -1;
    }
    memset(out, 0, sizeof *out);
    out->pixels = malloc((size_t)width * height * 4);
    if (out->pixels == NULL) {
        ic_set_error(error, error_size, "out of memory");
        return -1;
    }
    out->width = width;
    out->height = height;
    out->frame_count = 1;
    out->loop_count = -1;
    return 0;
}

uint32_t ic_shrink_factor(uint32_t width, uint32_t height, uint32_t min_width, uint32_t min_height) {
    if (min_width == 0 && min_height == 0) return 1;
    uint32_t across = min_width ? width / min_width : UINT32_MAX, down = min_height ? height / min_height : UINT32_MAX;
    uint32_t factor = across < down ? across : down;
    return factor > 1 ? factor : 1;
}

struct ic_row_shrinker {
    uint32_t width, height, factor, out_width, rows_in_band, out_row;
    uint8_t *row;      // the row being read
    uint64_t *sums;    // per output pixel of the band: premultiplied red, green, blue, and alpha
    uint32_t *counts;  // pixels added per output pixel (fewer at the right and bottom edges)
    ic_decoded_image *out;
};

ic_row_shrinker *ic_row_shrinker_new(uint32_t width, uint32_t height, uint32_t factor, ic_decoded_image *out,
                                     char *error, size_t error_size) {
    uint32_t out_width = (width + factor - 1) / factor, out_height = (height + factor - 1) / factor;
    ic_row_shrinker *shrinker = calloc(1, sizeof *shrinker);
    if (shrinker == NULL || ic_allocate_still(out, out_width, out_height, UINT64_MAX, error, error_size) != 0) {
        free(shrinker);
        if (shrinker == NULL) ic_set_error(error, error_size, "out of memory");
        return NULL;
    }
    *shrinker = (ic_row_shrinker){.width = width, .height = height, .factor = factor, .out_width = out_width, .out = out};
    shrinker->row = malloc((size_t)width * 4);
    shrinker->sums = calloc((size_t)out_width * 4, sizeof(uint64_t));
    shrinker->counts = calloc(out_width, sizeof(uint32_t));
    if (shrinker->row == NULL || shrinker->sums == NULL || shrinker->counts == NULL) {
        ic_row_shrinker_free(shrinker);
        ic_decoded_image_free(out);
        ic_set_error(error, error_size, "out of memory");
        return NULL;
    }
    return shrinker;
}

uint8_t *ic_row_shrinker_row(ic_row_shrinker *shrinker) { return shrinker->row; }

/// Writes the band's averages as one output row; colour un-premultiplied, so hidden colour never bleeds.
static void row_shrinker_flush(ic_row_shrinker *shrinker) {
    uint8_t *target = shrinker->out->pixels + (size_t)shrinker->out_row * shrinker->out_width * 4;
    for (uint32_t x = 0; x < shrinker->out_width; x++) {
        uint64_t *sum = shrinker->sums + (size_t)x * 4;
        uint32_t count = shrinker->counts[x];
        if (sum[3] == 0 || count == 0) {
            memset(target + (size_t)x * 4, 0, 4);
        } else {
            for (int channel = 0; channel < 3; channel++) target[x * 4 + channel] = (uint8_t)((sum[channel] + sum[3] / 2) / sum[3]);
            target[x * 4 + 3] = (uint8_t)((sum[3] + count / 2) / count);
        }
    }
    memset(shrinker->sums, 0, (size_t)shrinker->out_width * 4 * sizeof(uint64_t));
    memset(shrinker->counts, 0, (size_t)shrinker->out_width * sizeof(uint32_t));
    shrinker->out_row++;
    shrinker->rows_in_band = 0;
}

void ic_row_shrinker_add(ic_row_shrinker *shrinker) {
    const uint8_t *row = shrinker->row;
    for (uint32_t x = 0; x < shrinker->width; x++) {
        uint32_t cell = x / shrinker->factor;
        uint64_t *sum = shrinker->sums + (size_t)cell * 4;
        uint64_t alpha = row[x * 4 + 3];
        sum[0] += row[x * 4] * alpha;
        sum[1] += row[x * 4 + 1] * alpha;
        sum[2] += row[x * 4 + 2] * alpha;
        sum[3] += alpha;
        shrinker->counts[cell]++;
    }
    shrinker->rows_in_band++;
    uint32_t read = shrinker->out_row * shrinker->factor + shrinker->rows_in_band;
    if (shrinker->rows_in_band == shrinker->factor || read == shrinker->height) row_shrinker_flush(shrinker);
}

void ic_row_shrinker_free(ic_row_shrinker *shrinker) {
    if (shrinker == NULL) return;
    free(shrinker->row);
    free(shrinker->sums);
    free(shrinker->counts);
    free(shrinker);
}

int ic_png_decode(const uint8_t *data, size_t size, uint64_t max_pixels, uint32_t max_frames,
                  ic_decoded_image *out, char *error, size_t error_size) {
    (void)max_frames;  // one frame: APNG's default image
    return ic_png_decode_reduced(data, size, max_pixels, 0, 0, out, error, error_size);
}

int ic_png_decode_reduced(const uint8_t *data, size_t size, uint64_t max_pixels, uint32_t min_width, uint32_t min_height,
                          ic_decoded_image *out, char *error, size_t error_size) {
    if (ic_png_load(error, error_size) != 0) return -1;
    memset(out, 0, sizeof *out);
    png_probe_context context = {.data = data, .size = size, .error = error, .error_size = error_size};
    png_structp png = p_png_create_read_struct(PNG_LIBPNG_VER_STRING, &context, png_probe_error, png_probe_warning);
    if (png == NULL) {
        ic_set_error(error, error_size, "cannot create a libpng reader");
        return -1;
    }
    png_infop info = p_png_create_info_struct(png);
    // Volatile: read after a longjmp.
    png_bytepp volatile rows = NULL;
    ic_row_shrinker *volatile shrinker = NULL;
    if (info == NULL || setjmp(context.jump) != 0) {
        if (info == NULL) ic_set_error(error, error_size, "cannot create a libpng info struct");
        p_png_destroy_read_struct(&png, info ? &info : NULL, NULL);
        free(rows);
        ic_row_shrinker_free(shrinker);
        ic_decoded_image_free(out);
        return -1;
    }
    p_png_set_read_fn(png, &context, png_probe_read);
    // A text or private chunk larger than any profile is skipped (a warning), not held: a 4x4
    // image behind a 300 MB tEXt chunk decodes in the memory of a 4x4 image.
    p_png_set_chunk_malloc_max(png, 16u << 20);
    p_png_read_info(png, info);
    png_uint_32 width = 0, height = 0;
    int bit_depth = 0, color_type = 0, interlace = 0;
    p_png_get_IHDR(png, info, &width, &height, &bit_depth, &color_type, &interlace, NULL, NULL);
    // Palette, low-bit grey and tRNS expand to full channels; 16-bit samples are
    // scaled to 8 bits, rounded; grey becomes RGB; an opaque alpha is added where none is.
    p_png_set_expand(png);
    p_png_set_scale_16(png);
    p_png_set_gray_to_rgb(png);
    p_png_set_add_alpha(png, 0xFF, PNG_FILLER_AFTER);
    p_png_set_interlace_handling(png);
    p_png_read_update_info(png, info);
    if (p_png_get_rowbytes(png, info) != (size_t)width * 4) png_probe_error(png, "unexpected row layout");
    // Rows shrunk as they are read, by a whole factor that keeps at least the size asked for: the full
    // picture is never in memory. An interlaced image's rows come in seven passes: read whole.
    uint32_t factor = interlace == PNG_INTERLACE_NONE ? ic_shrink_factor(width, height, min_width, min_height) : 1;
    if (factor > 1) {
        if ((uint64_t)width * height > max_pixels) png_probe_error(png, "more pixels than the limit");
        shrinker = ic_row_shrinker_new(width, height, factor, out, error, error_size);
        if (shrinker == NULL) longjmp(context.jump, 1);
    } else if (ic_allocate_still(out, width, height, max_pixels, error, error_size) != 0) {
        longjmp(context.jump, 1);
    }
    png_charp profile_name = NULL;
    png_bytep profile = NULL;
    png_uint_32 profile_size = 0;
    int compression = 0;
    if (p_png_get_iCCP(png, info, &profile_name, &compression, &profile, &profile_size) != 0) {
        ic_attach_icc(out, profile, profile_size);
    }
    if (shrinker != NULL) {
        for (png_uint_32 y = 0; y < height; y++) {
            p_png_read_row(png, ic_row_shrinker_row(shrinker), NULL);
            ic_row_shrinker_add(shrinker);
        }
        ic_row_shrinker_free(shrinker);
        shrinker = NULL;
    } else {
        rows = malloc(sizeof(png_bytep) * height);
        if (rows == NULL) png_probe_error(png, "out of memory");
        for (png_uint_32 y = 0; y < height; y++) rows[y] = out->pixels + (size_t)y * width * 4;
        p_png_read_image(png, rows);
    }
    // Up to IEND: a file cut after its pixels is still a cut file.
    p_png_read_end(png, NULL);
    free(rows);
    p_png_destroy_read_struct(&png, &info, NULL);
    return 0;
}

static void jpeg_decode_emit_message(j_common_ptr info, int level) {
    if (level >= 0 || ((jpeg_probe_error_manager *)info->err)->conceals) return;
    // Warnings that mean pixels were lost; the others (an unknown JFIF revision,
    // stray bytes before a marker, ...) are common in camera files and harmless.
    switch (info->err->msg_code) {
    case JWRN_JPEG_EOF:
    case JWRN_HIT_MARKER:
    case JWRN_HUFF_BAD_CODE:
    case JWRN_ARITH_BAD_CODE:
    case JWRN_MUST_RESYNC:
    case JWRN_NOT_SEQUENTIAL:
    case JWRN_BOGUS_PROGRESSION:
        jpeg_probe_error_exit(info);
        break;
    case JWRN_EXTRANEOUS_DATA:
        // Bytes skipped between header segments are padding; inside the scan they are pixels.
        if (((jpeg_probe_error_manager *)info->err)->in_scan) jpeg_probe_error_exit(info);
        break;
    default:
        break;
    }
}

int ic_jpeg_decode(const uint8_t *data, size_t size, uint64_t max_pixels, uint32_t max_frames,
                   ic_decoded_image *out, char *error, size_t error_size) {
    (void)max_frames;
    return ic_jpeg_decode_reduced(data, size, max_pixels, 0, 0, out, error, error_size);
}

int ic_jpeg_decode_reduced(const uint8_t *data, size_t size, uint64_t max_pixels, uint32_t min_width, uint32_t min_height,
                           ic_decoded_image *out, char *error, size_t error_size) {
    if (ic_jpeg_load(error, error_size) != 0) return -1;
    struct jpeg_decompress_struct info;
    memset(&info, 0, sizeof info);
    memset(out, 0, sizeof *out);
    jpeg_probe_error_manager manager;
    info.err = jpeg_probe_errors(&manager, error, error_size);
    // Corrupt or missing data is only a warning to libjpeg (it fills in grey);
    // a full check must refuse it.
    manager.manager.emit_message = jpeg_decode_emit_message;
    manager.in_scan = 0;
    // A reduced decode makes a picture to look at; the whole decode is also the full check.
    manager.conceals = min_width > 0 || min_height > 0;
    if (setjmp(manager.jump) != 0) {
        p_jpeg_destroy_decompress(&info);
        ic_decoded_image_free(out);
        return -1;
    }
    p_jpeg_CreateDecompress(&info, JPEG_LIB_VERSION, sizeof info);
    p_jpeg_mem_src(&info, data, (unsigned long)size);
    // The ICC profile travels in APP2 markers, kept for it.
    p_jpeg_save_markers(&info, JPEG_APP0 + 2, 0xFFFF);
    p_jpeg_read_header(&info, TRUE);
    manager.in_scan = 1;  // the header ends at the first scan; progressive files read theirs in start_decompress
    int cmyk = info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK;
    info.out_color_space = cmyk ? JCS_CMYK : JCS_EXT_RGBA;
    if ((uint64_t)info.image_width * info.image_height > max_pixels) {
        p_jpeg_destroy_decompress(&info);
        ic_set_error(error, error_size, "more pixels than the limit");
        return -1;
    }
    // libjpeg-turbo's DCT scaling: the smallest of 1/8, 1/4, 1/2 and 1 that keeps at least the size asked
    // for, the pixels averaged in the transform rather than decoded and then thrown away. Only these
    // have SIMD inverse transforms; 3/8, 5/8 and the like are slower than a whole decode.
    if (min_width > 0 || min_height > 0) {
        unsigned eighths = 1;
        while (eighths < 8 && ((uint64_t)(info.image_width * eighths + 7) / 8 < min_width ||
                               (uint64_t)(info.image_height * eighths + 7) / 8 < min_height)) {
            eighths *= 2;
        }
        info.scale_num = eighths;
        info.scale_denom = 8;
    }
    p_jpeg_calc_output_dimensions(&info);
    if (ic_allocate_still(out, info.output_width, info.output_height, max_pixels, error, error_size) != 0) {
        p_jpeg_destroy_decompress(&info);
        return -1;
    }
    JOCTET *profile = NULL;
    unsigned int profile_size = 0;
    if (p_jpeg_read_icc_profile(&info, &profile, &profile_size) && profile != NULL) {
        ic_attach_icc(out, profile, profile_size);
        free(profile);
    }
    p_jpeg_start_decompress(&info);
    if (info.output_width != out->width || info.output_height != out->height || info.output_components != 4) {
        p_jpeg_destroy_decompress(&info);
        ic_decoded_image_free(out);
        ic_set_error(error, error_size, "unexpected output layout");
        return -1;
    }
    size_t stride = (size_t)out->width * 4;
    while (info.output_scanline < info.output_height) {
        JSAMPROW target = out->pixels + (size_t)info.output_scanline * stride;
        if (p_jpeg_read_scanlines(&info, &target, 1) != 1) break;
    }
    // CMYK through its profile where it has one (the colours a printer meant);
    // else by the usual formula. Either way the image is then plain sRGB.
    char color_error[128];
    if (cmyk && out->icc != NULL) {
        uint64_t count = (uint64_t)out->width * out->height;
        uint8_t *ink = malloc((size_t)count * 4);
        if (ink != NULL) {
            memcpy(ink, out->pixels, (size_t)count * 4);
            if (ic_color_cmyk_to_srgb(ink, out->pixels, count, info.saw_Adobe_marker, out->icc, out->icc_size,
                                      color_error, sizeof color_error) == 0) {
                cmyk = 0;
                free(out->icc);
                out->icc = NULL;
                out->icc_size = 0;
            }
            free(ink);
        }
    }
    if (cmyk) {
        free(out->icc);  // a CMYK profile does not describe the RGB made here
        out->icc = NULL;
        out->icc_size = 0;
        // Adobe writes CMYK inverted (0 = full ink), which is what libjpeg hands back.
        for (size_t index = 0; index < (size_t)out->width * out->height; index++) {
            uint8_t *pixel = out->pixels + index * 4;
            unsigned c = pixel[0], m = pixel[1], y = pixel[2], k = pixel[3];
            if (!info.saw_Adobe_marker) { c = 255 - c; m = 255 - m; y = 255 - y; k = 255 - k; }
            pixel[0] = (uint8_t)(c * k / 255);
            pixel[1] = (uint8_t)(m * k / 255);
            pixel[2] = (uint8_t)(y * k / 255);
            pixel[3] = 255;
        }
    }
    p_jpeg_finish_decompress(&info);
    p_jpeg_destroy_decompress(&info);
    return 0;
}

// MARK: - PNG and JPEG encoding

void ic_encoded_free(ic_encoded *encoded) {
    if (encoded == NULL) return;
    free(encoded->bytes);
    encoded->bytes = NULL;
    encoded->size = 0;
}

int ic_png_encode(const uint8_t *rgba, uint32_t width, uint32_t height, int channels, ic_encoded *out,
                  char *error, size_t error_size) {
    if (ic_png_load(error, error_size) != 0) return -1;
    memset(out, 0, sizeof *out);
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    image.width = width;
    image.height = height;
    image.format = channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
    // One pass into a buffer of the largest size the stream can have (libpng's bound); only the pages
    // written are ever touched, and asking for the size first would compress the image twice.
    png_alloc_size_t size = PNG_IMAGE_PNG_SIZE_MAX(image);
    out->bytes = malloc(size);
    if (out->bytes == NULL) {
        p_png_image_free(&image);
        ic_set_error(error, error_size, "out of memory");
        return -1;
    }
    if (!p_png_image_write_to_memory(&image, out->bytes, &size, 0, rgba, 0, NULL)) goto failed;
    uint8_t *fitted = realloc(out->bytes, size > 0 ? size : 1);
    if (fitted != NULL) out->bytes = fitted;
    out->size = size;
    p_png_image_free(&image);
    return 0;
failed:
    ic_set_error(error, error_size, image.message);
    p_png_image_free(&image);
    ic_encoded_free(out);
    return -1;
}

int ic_jpeg_encode(const uint8_t *rgba, uint32_t width, uint32_t height, int quality, ic_encoded *out,
                   char *error, size_t error_size) {
    if (ic_jpeg_load(error, error_size) != 0) return -1;
    memset(out, 0, sizeof *out);
    struct jpeg_compress_struct info;
    memset(&info, 0, sizeof info);
    jpeg_probe_error_manager manager;
    info.err = jpeg_probe_errors(&manager, error, error_size);
    // Our buffer, large enough that libjpeg never grows it (it would free and
    // replace a buffer of its own, not ours): freeing it on an error is safe.
    unsigned long capacity = (unsigned long)width * height * 4 + 65536;
    unsigned char *const initial = malloc(capacity);
    if (initial == NULL) {
        ic_set_error(error, error_size, "out of memory");
        return -1;
    }
    unsigned char *buffer = initial;
    unsigned long size = capacity;
    if (setjmp(manager.jump) != 0) {
        p_jpeg_destroy_compress(&info);
        free(initial);
        return -1;
    }
    p_jpeg_CreateCompress(&info, JPEG_LIB_VERSION, sizeof info);
    p_jpeg_mem_dest(&info, &buffer, &size);
    info.image_width = width;
    info.image_height = height;
    info.input_components = 4;
    info.in_color_space = JCS_EXT_RGBA;  // alpha is dropped: JPEG has none
    p_jpeg_set_defaults(&info);
    p_jpeg_set_quality(&info, quality < 1 ? 1 : quality > 100 ? 100 : quality, TRUE);
    p_jpeg_start_compress(&info, TRUE);
    while (info.next_scanline < info.image_height) {
        JSAMPROW row = (JSAMPROW)(rgba + (size_t)info.next_scanline * width * 4);
        p_jpeg_write_scanlines(&info, &row, 1);
    }
    p_jpeg_finish_compress(&info);
    p_jpeg_destroy_compress(&info);
    if (buffer != initial) free(initial);  // libjpeg grew it after all: the result is its buffer
    out->bytes = buffer;
    out->size = size;
    return 0;
}

long ic_jpeg_find_marker(const uint8_t *bytes, size_t count, size_t start, uint8_t code) {
    if (start >= count) return -1;
    const uint8_t pair[2] = {0xFF, code};
    const uint8_t *hit = memmem(bytes + start, count - start, pair, 2);
    return hit ? (long)(hit - bytes) : -1;
}
