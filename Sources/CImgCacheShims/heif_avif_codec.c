// AVIF through libavif (still images and sequences), and HEIC/HEIF through
// libheif, which also reads the AVIF files libavif refuses (several `ipma`
// boxes, some grids). Both hand back upright RGBA8: libavif's crop, rotation
// and mirror are applied here, libheif applies its own. Each library is loaded
// on first use, so a cache hit pays nothing for either.
#include "imgcache_shims.h"
#include "decoded_image.h"
#include "loader.h"

#include <avif/avif.h>
#include <libheif/heif.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>


// MARK: - libavif

#define IC_AVIF_FUNCTIONS(X)                                                                       \
    X(avifDecoder *, avifDecoderCreate, (void))                                                    \
    X(void, avifDecoderDestroy, (avifDecoder *))                                                   \
    X(avifResult, avifDecoderSetIOMemory, (avifDecoder *, const uint8_t *, size_t))                \
    X(avifResult, avifDecoderParse, (avifDecoder *))                                               \
    X(avifResult, avifDecoderNextImage, (avifDecoder *))                                           \
    X(void, avifRGBImageSetDefaults, (avifRGBImage *, const avifImage *))                          \
    X(avifResult, avifImageYUVToRGB, (const avifImage *, avifRGBImage *))                          \
    X(avifResult, avifImageRGBToYUV, (avifImage *, const avifRGBImage *))                          \
    X(const char *, avifResultToString, (avifResult))                                              \
    X(avifImage *, avifImageCreate, (uint32_t, uint32_t, uint32_t, avifPixelFormat))               \
    X(void, avifImageDestroy, (avifImage *))                                                       \
    X(avifEncoder *, avifEncoderCreate, (void))                                                    \
    X(void, avifEncoderDestroy, (avifEncoder *))                                                   \
    X(avifResult, avifEncoderWrite, (avifEncoder *, const avifImage *, avifRWData *))              \
    X(avifResult, avifEncoderAddImage, (avifEncoder *, const avifImage *, uint64_t, avifAddImageFlags)) \
    X(avifResult, avifEncoderFinish, (avifEncoder *, avifRWData *))                                \
    X(void, avifRWDataFree, (avifRWData *))                                                        \
    X(const char *, avifVersion, (void))

IC_LIBRARY(avif, "libavif15", IC_AVIF_FUNCTIONS, "libavif.so.15", "libavif.so")

const char *ic_avif_version(void) {
    char error[64];
    return ic_avif_load(error, sizeof error) == 0 ? p_avifVersion() : NULL;
}

/// Turns `count` RGBA8 pixels of `width` x `height` upright: cropped to
/// `crop` (x, y, width, height; all zero: none), then turned `quarters`
/// quarter turns anticlockwise, then mirrored (`mirror` 0: top and bottom
/// exchanged, 1: left and right, -1: not). The result replaces `*pixels`.
static int orient_pixels(uint8_t **pixels, uint32_t *width, uint32_t *height, const uint32_t crop[4], int quarters,
                         int mirror) {
    uint32_t x0 = 0, y0 = 0, w = *width, h = *height;
    if (crop[2] > 0 && crop[3] > 0 && crop[0] + crop[2] <= *width && crop[1] + crop[3] <= *height) {
        x0 = crop[0];
        y0 = crop[1];
        w = crop[2];
        h = crop[3];
    }
    quarters &= 3;
    if (x0 == 0 && y0 == 0 && w == *width && h == *height && quarters == 0 && mirror < 0) return 0;
    uint32_t out_w = quarters & 1 ? h : w, out_h = quarters & 1 ? w : h;
    uint8_t *result = malloc((size_t)out_w * out_h * 4);
    if (result == NULL) return -1;
    const uint8_t *source = *pixels;
    for (uint32_t y = 0; y < out_h; y++) {
        for (uint32_t x = 0; x < out_w; x++) {
            // Mirroring is the last step: undo it first to find the rotated pixel.
            uint32_t rx = x, ry = y;
            if (mirror == 1) rx = out_w - 1 - x;
            if (mirror == 0) ry = out_h - 1 - y;
            uint32_t sx, sy;  // in the cropped source
            switch (quarters) {
            case 1: sx = w - 1 - ry; sy = rx; break;          // 90° anticlockwise
            case 2: sx = w - 1 - rx; sy = h - 1 - ry; break;  // 180°
            case 3: sx = ry; sy = h - 1 - rx; break;          // 270° anticlockwise
            default: sx = rx; sy = ry; break;
            }
            memcpy(result + ((size_t)y * out_w + x) * 4, source + ((size_t)(sy + y0) * *width + sx + x0) * 4, 4);
        }
    }
    free(*pixels);
    *pixels = result;
    *width = out_w;
    *height = out_h;
    return 0;
}

/// The clean aperture as a rectangle of whole pixels (ISO/IEC 14496-12
/// 12.1.4): centred at the offsets given from the picture's centre, its
/// corner rounded half up, as libheif does. Done here on RGB rather than by
/// libavif, which refuses odd corners of subsampled pictures. All zero when
/// the box describes no rectangle inside the picture.
static void clean_aperture(const avifCleanApertureBox *clap, uint32_t width, uint32_t height, uint32_t crop[4]) {
    if (clap->widthD == 0 || clap->heightD == 0 || clap->horizOffD == 0 || clap->vertOffD == 0) return;
    double clean_w = (double)clap->widthN / clap->widthD, clean_h = (double)clap->heightN / clap->heightD;
    // The offsets are signed numerators over unsigned denominators.
    double centre_x = (double)(int32_t)clap->horizOffN / (int32_t)clap->horizOffD + (width - 1) / 2.0;
    double centre_y = (double)(int32_t)clap->vertOffN / (int32_t)clap->vertOffD + (height - 1) / 2.0;
    double left = floor(centre_x - (clean_w - 1) / 2.0 + 0.5), top = floor(centre_y - (clean_h - 1) / 2.0 + 0.5);
    uint32_t w = (uint32_t)clean_w, h = (uint32_t)clean_h;
    if (left < 0 || top < 0 || w == 0 || h == 0 || left + w > width || top + h > height) return;
    crop[0] = (uint32_t)left;
    crop[1] = (uint32_t)top;
    crop[2] = w;
    crop[3] = h;
}

static void avif_error(char *error, size_t error_size, const char *what, avifResult result, const avifDecoder *decoder) {
    char text[320];
    const char *detail = decoder != NULL && decoder->diag.error[0] != 0 ? decoder->diag.error : p_avifResultToString(result);
    snprintf(text, sizeof text, "%s: %s", what, detail);
    ic_set_error(error, error_size, text);
}

/// One AVIF through libavif: -1 with a message; -2 when libavif refuses the
/// container itself or cannot convert its colours (the caller then tries libheif).
static int avif_decode_libavif(const uint8_t *data, size_t size, uint64_t max_pixels, uint32_t max_frames,
                               ic_decoded_image *out, char *error, size_t error_size) {
    avifDecoder *decoder = p_avifDecoderCreate();
    if (decoder == NULL) {
        ic_set_error(error, error_size, "out of memory");
        return -1;
    }
    decoder->ignoreExif = AVIF_TRUE;
    decoder->ignoreXMP = AVIF_TRUE;
    decoder->maxThreads = 1;
    // Files browsers show are read though they bend the rules libavif keeps strictly.
    decoder->strictFlags = AVIF_STRICT_DISABLED;
    decoder->imageSizeLimit = max_pixels > 0 && max_pixels < AVIF_DEFAULT_IMAGE_SIZE_LIMIT ? (uint32_t)max_pixels
                                                                                           : AVIF_DEFAULT_IMAGE_SIZE_LIMIT;
    int status = -1;
    avifResult result = p_avifDecoderSetIOMemory(decoder, data, size);
    if (result == AVIF_RESULT_OK) result = p_avifDecoderParse(decoder);
    if (result != AVIF_RESULT_OK) {
        avif_error(error, error_size, "libavif cannot read it", result, decoder);
        p_avifDecoderDestroy(decoder);
        return result == AVIF_RESULT_BMFF_PARSE_FAILED || result == AVIF_RESULT_NO_AV1_ITEMS_FOUND ? -2 : -1;
    }
    uint32_t frames = decoder->imageCount > 0 ? (uint32_t)decoder->imageCount : 1;
    if (max_frames > 0 && frames > max_frames) frames = max_frames;
    uint32_t width = decoder->image->width, height = decoder->image->height;
    if (width == 0 || height == 0 || (uint64_t)width * height * frames > max_pixels) {
        ic_set_error(error, error_size, width == 0 || height == 0 ? "zero width or height" : "more pixels than the limit");
        p_avifDecoderDestroy(decoder);
        return -1;
    }
    size_t frame_bytes = (size_t)width * height * 4;
    uint8_t *all = malloc(frame_bytes * frames);
    uint32_t *delays = malloc(sizeof(uint32_t) * frames);
    uint32_t out_w = width, out_h = height;
    if (all == NULL || delays == NULL) {
        ic_set_error(error, error_size, "out of memory");
        goto done;
    }
    for (uint32_t index = 0; index < frames; index++) {
        result = p_avifDecoderNextImage(decoder);
        if (result != AVIF_RESULT_OK) {
            avif_error(error, error_size, "the image data does not decode", result, decoder);
            goto done;
        }
        avifImage *image = decoder->image;
        if (image->width != width || image->height != height) {
            ic_set_error(error, error_size, "a frame differs in size from the first");
            goto done;
        }
        avifRGBImage rgb;
        p_avifRGBImageSetDefaults(&rgb, image);
        rgb.format = AVIF_RGB_FORMAT_RGBA;
        rgb.depth = 8;  // 10 and 12 bits are scaled, rounded
        rgb.alphaPremultiplied = AVIF_FALSE;
        rgb.pixels = all + frame_bytes * index;
        rgb.rowBytes = width * 4;
        result = p_avifImageYUVToRGB(image, &rgb);
        if (result != AVIF_RESULT_OK) {
            // A matrix libavif does not convert (constant luminance, ICtCp): libheif may.
            avif_error(error, error_size, "its colours do not convert", result, decoder);
            status = -2;
            goto done;
        }
        double seconds = decoder->imageTiming.duration;
        delays[index] = seconds > 0 && seconds < 4e6 ? (uint32_t)(seconds * 1000 + 0.5) : 0;
        if (index > 0) continue;
        if (image->icc.size > 0) ic_attach_icc(out, image->icc.data, image->icc.size);
        out->color_primaries = (int32_t)image->colorPrimaries;
        out->transfer_characteristics = (int32_t)image->transferCharacteristics;
    }
    // Upright as browsers show it: clean aperture, rotation, mirror, in that order.
    avifImage *image = decoder->image;
    uint32_t crop[4] = {0, 0, 0, 0};
    if (image->transformFlags & AVIF_TRANSFORM_CLAP) clean_aperture(&image->clap, width, height, crop);
    int quarters = image->transformFlags & AVIF_TRANSFORM_IROT ? image->irot.angle : 0;
    int mirror = image->transformFlags & AVIF_TRANSFORM_IMIR ? image->imir.mode : -1;
    if (crop[2] > 0 || quarters != 0 || mirror >= 0) {
        uint8_t *upright = malloc(0);
        size_t upright_size = 0;
        for (uint32_t index = 0; index < frames; index++) {
            uint8_t *frame = malloc(frame_bytes);
            if (frame == NULL) break;
            memcpy(frame, all + frame_bytes * index, frame_bytes);
            out_w = width;
            out_h = height;
            if (orient_pixels(&frame, &out_w, &out_h, crop, quarters, mirror) != 0) {
                free(frame);
                break;
            }
            size_t size_now = (size_t)out_w * out_h * 4;
            uint8_t *grown = realloc(upright, upright_size + size_now);
            if (grown == NULL) {
                free(frame);
                break;
            }
            upright = grown;
            memcpy(upright + upright_size, frame, size_now);
            upright_size += size_now;
            free(frame);
        }
        if (upright_size != (size_t)out_w * out_h * 4 * frames) {
            free(upright);
            ic_set_error(error, error_size, "out of memory");
            goto done;
        }
        free(all);
        all = upright;
    }
    out->pixels = all;
    out->width = out_w;
    out->height = out_h;
    out->frame_count = frames;
    out->delays_ms = delays;
    out->loop_count = decoder->imageCount > 1 ? 0 : -1;
    all = NULL;
    delays = NULL;
    status = 0;
done:
    if (status != 0) ic_decoded_image_free(out);  // a profile kept from the first frame
    free(all);
    free(delays);
    p_avifDecoderDestroy(decoder);
    return status;
}

// MARK: - libheif

#define IC_HEIF_FUNCTIONS(X)                                                                          \
    X(struct heif_error, heif_init, (struct heif_init_params *))                                      \
    X(const char *, heif_get_version, (void))                                                         \
    X(struct heif_context *, heif_context_alloc, (void))                                              \
    X(void, heif_context_free, (struct heif_context *))                                               \
    X(struct heif_error, heif_context_read_from_memory_without_copy,                                  \
      (struct heif_context *, const void *, size_t, const struct heif_reading_options *))             \
    X(struct heif_error, heif_context_get_primary_image_handle,                                       \
      (struct heif_context *, struct heif_image_handle **))                                           \
    X(void, heif_image_handle_release, (const struct heif_image_handle *))                            \
    X(int, heif_image_handle_get_width, (const struct heif_image_handle *))                           \
    X(int, heif_image_handle_get_height, (const struct heif_image_handle *))                          \
    X(size_t, heif_image_handle_get_raw_color_profile_size, (const struct heif_image_handle *))       \
    X(struct heif_error, heif_image_handle_get_raw_color_profile, (const struct heif_image_handle *, void *)) \
    X(struct heif_error, heif_image_handle_get_nclx_color_profile,                                    \
      (const struct heif_image_handle *, struct heif_color_profile_nclx **))                          \
    X(void, heif_nclx_color_profile_free, (struct heif_color_profile_nclx *))                         \
    X(struct heif_error, heif_decode_image,                                                           \
      (const struct heif_image_handle *, struct heif_image **, enum heif_colorspace, enum heif_chroma, \
       const struct heif_decoding_options *))                                                         \
    X(const uint8_t *, heif_image_get_plane_readonly, (const struct heif_image *, enum heif_channel, int *)) \
    X(int, heif_image_get_width, (const struct heif_image *, enum heif_channel))                      \
    X(int, heif_image_get_height, (const struct heif_image *, enum heif_channel))                     \
    X(void, heif_image_release, (const struct heif_image *))

IC_HEIF_FUNCTIONS(IC_DECLARE_POINTER)
IC_LIBRARY_STATE(heif)
static void heif_load_once(void) {
    IC_OPEN_AND_RESOLVE(heif, "libheif1", IC_HEIF_FUNCTIONS, "libheif.so.1", "libheif.so")
    // Its decoder plug-ins (libde265, dav1d, aom) are found by heif_init.
    p_heif_init(NULL);
    heif_loaded = 1;
}
IC_LIBRARY_LOADER(heif)

const char *ic_heif_version(void) {
    char error[64];
    return ic_heif_load(error, sizeof error) == 0 ? p_heif_get_version() : NULL;
}

static void heif_failed(char *error, size_t error_size, const char *what, struct heif_error result) {
    char text[320];
    snprintf(text, sizeof text, "%s: %s", what, result.message ? result.message : "unknown error");
    ic_set_error(error, error_size, text);
}

int ic_heif_decode(const uint8_t *data, size_t size, uint64_t max_pixels, uint32_t max_frames,
                   ic_decoded_image *out, char *error, size_t error_size) {
    (void)max_frames;  // the primary image only: an image sequence's first picture
    if (ic_heif_load(error, error_size) != 0) return -1;
    struct heif_context *context = p_heif_context_alloc();
    if (context == NULL) {
        ic_set_error(error, error_size, "out of memory");
        return -1;
    }
    struct heif_image_handle *handle = NULL;
    struct heif_image *image = NULL;
    int status = -1;
    struct heif_error result = p_heif_context_read_from_memory_without_copy(context, data, size, NULL);
    if (result.code != heif_error_Ok) {
        heif_failed(error, error_size, "libheif cannot read it", result);
        goto done;
    }
    result = p_heif_context_get_primary_image_handle(context, &handle);
    if (result.code != heif_error_Ok) {
        heif_failed(error, error_size, "no primary image", result);
        goto done;
    }
    // Sizes after libheif's own rotation and crop, checked before any pixel is made.
    int width = p_heif_image_handle_get_width(handle), height = p_heif_image_handle_get_height(handle);
    if (width <= 0 || height <= 0) {
        ic_set_error(error, error_size, "zero width or height");
        goto done;
    }
    if ((uint64_t)width * (uint64_t)height > max_pixels) {
        ic_set_error(error, error_size, "more pixels than the limit");
        goto done;
    }
    result = p_heif_decode_image(handle, &image, heif_colorspace_RGB, heif_chroma_interleaved_RGBA, NULL);
    if (result.code != heif_error_Ok) {
        heif_failed(error, error_size, "the image data does not decode", result);
        goto done;
    }
    int stride = 0;
    const uint8_t *plane = p_heif_image_get_plane_readonly(image, heif_channel_interleaved, &stride);
    int plane_w = p_heif_image_get_width(image, heif_channel_interleaved);
    int plane_h = p_heif_image_get_height(image, heif_channel_interleaved);
    if (plane == NULL || plane_w <= 0 || plane_h <= 0 || stride < plane_w * 4) {
        ic_set_error(error, error_size, "the decoder gave no pixels");
        goto done;
    }
    if (ic_allocate_still(out, (uint32_t)plane_w, (uint32_t)plane_h, max_pixels, error, error_size) != 0) goto done;
    for (int y = 0; y < plane_h; y++) memcpy(out->pixels + (size_t)y * plane_w * 4, plane + (size_t)y * stride, (size_t)plane_w * 4);
    size_t profile_size = p_heif_image_handle_get_raw_color_profile_size(handle);
    if (profile_size > 0) {
        uint8_t *profile = malloc(profile_size);
        if (profile != NULL && p_heif_image_handle_get_raw_color_profile(handle, profile).code == heif_error_Ok) {
            ic_attach_icc(out, profile, profile_size);
        }
        free(profile);
    }
    struct heif_color_profile_nclx *nclx = NULL;
    int described = p_heif_image_handle_get_nclx_color_profile(handle, &nclx).code == heif_error_Ok;
    if (described && nclx != NULL) {
        out->color_primaries = (int32_t)nclx->color_primaries;
        out->transfer_characteristics = (int32_t)nclx->transfer_characteristics;
    }
    // libheif may hand a description back with an error too: freed either way.
    if (nclx != NULL) p_heif_nclx_color_profile_free(nclx);
    status = 0;
done:
    if (status != 0) ic_decoded_image_free(out);
    if (image != NULL) p_heif_image_release(image);
    if (handle != NULL) p_heif_image_handle_release(handle);
    p_heif_context_free(context);
    return status;
}

int ic_avif_decode(const uint8_t *data, size_t size, uint64_t max_pixels, uint32_t max_frames,
                   ic_decoded_image *out, char *error, size_t error_size) {
    if (ic_avif_load(error, error_size) != 0) return -1;
    int status = avif_decode_libavif(data, size, max_pixels, max_frames, out, error, error_size);
    if (status != -2) return status;
    // What libavif's parser refuses, libheif may read (a still image only).
    char heif_error[256];
    if (ic_heif_decode(data, size, max_pixels, 1, out, heif_error, sizeof heif_error) == 0) return 0;
    return -1;
}

// MARK: - Encoding

/// One sRGB frame as the YUV image an encoder takes (4:4:4 at quality 100, else 4:2:0).
static avifImage *avif_frame(const uint8_t *rgba, uint32_t width, uint32_t height, int quality, int has_alpha, avifResult *result) {
    avifImage *image = p_avifImageCreate(width, height, 8, quality >= 100 ? AVIF_PIXEL_FORMAT_YUV444 : AVIF_PIXEL_FORMAT_YUV420);
    if (image == NULL) {
        *result = AVIF_RESULT_OUT_OF_MEMORY;
        return NULL;
    }
    image->colorPrimaries = AVIF_COLOR_PRIMARIES_BT709;
    image->transferCharacteristics = AVIF_TRANSFER_CHARACTERISTICS_SRGB;
    image->matrixCoefficients = AVIF_MATRIX_COEFFICIENTS_BT601;
    image->yuvRange = AVIF_RANGE_FULL;
    avifRGBImage rgb;
    p_avifRGBImageSetDefaults(&rgb, image);
    rgb.format = AVIF_RGB_FORMAT_RGBA;
    rgb.depth = 8;
    rgb.ignoreAlpha = has_alpha ? AVIF_FALSE : AVIF_TRUE;
    rgb.pixels = (uint8_t *)rgba;
    rgb.rowBytes = width * 4;
    *result = p_avifImageRGBToYUV(image, &rgb);
    if (*result != AVIF_RESULT_OK) {
        p_avifImageDestroy(image);
        return NULL;
    }
    return image;
}

/// An encoder set for `quality`: 0–100 onto AV1's quantiser 63–0, as avifenc's --qcolor does.
static avifEncoder *avif_encoder(int quality) {
    avifEncoder *encoder = p_avifEncoderCreate();
    if (encoder == NULL) return NULL;
    int quantizer = quality >= 100 ? 0 : (int)((100 - (quality < 0 ? 0 : quality)) * 63 / 100.0 + 0.5);
    encoder->minQuantizer = quantizer > 8 ? quantizer - 8 : 0;
    encoder->maxQuantizer = quantizer;
    encoder->minQuantizerAlpha = encoder->minQuantizer;
    encoder->maxQuantizerAlpha = encoder->maxQuantizer;
    encoder->speed = 8;
    encoder->maxThreads = 2;
    return encoder;
}

static int avif_finished(avifResult result, avifEncoder *encoder, avifRWData *output, ic_encoded *out, char *error,
                         size_t error_size) {
    if (result != AVIF_RESULT_OK) {
        char text[300];
        snprintf(text, sizeof text, "libavif: %s%s%s", p_avifResultToString(result),
                 encoder != NULL && encoder->diag.error[0] ? ": " : "", encoder != NULL ? encoder->diag.error : "");
        ic_set_error(error, error_size, text);
        return -1;
    }
    out->bytes = malloc(output->size);
    if (out->bytes == NULL) {
        ic_set_error(error, error_size, "out of memory");
        return -1;
    }
    memcpy(out->bytes, output->data, output->size);
    out->size = output->size;
    return 0;
}

int ic_avif_encode(const uint8_t *rgba, uint32_t width, uint32_t height, int quality, int has_alpha,
                   ic_encoded *out, char *error, size_t error_size) {
    if (ic_avif_load(error, error_size) != 0) return -1;
    avifResult result = AVIF_RESULT_OK;
    avifImage *image = avif_frame(rgba, width, height, quality, has_alpha, &result);
    avifEncoder *encoder = image != NULL ? avif_encoder(quality) : NULL;
    avifRWData output = {NULL, 0};
    if (image != NULL && encoder == NULL) result = AVIF_RESULT_OUT_OF_MEMORY;
    if (encoder != NULL) result = p_avifEncoderWrite(encoder, image, &output);
    int status = avif_finished(result, encoder, &output, out, error, error_size);
    if (output.data != NULL) p_avifRWDataFree(&output);
    if (encoder != NULL) p_avifEncoderDestroy(encoder);
    if (image != NULL) p_avifImageDestroy(image);
    return status;
}

int ic_avif_encode_animation(const uint8_t *frames, uint32_t width, uint32_t height, uint32_t frame_count,
                             const uint32_t *delays_ms, int quality, int has_alpha, ic_encoded *out, char *error,
                             size_t error_size) {
    if (ic_avif_load(error, error_size) != 0) return -1;
    avifEncoder *encoder = avif_encoder(quality);
    avifRWData output = {NULL, 0};
    avifResult result = encoder != NULL ? AVIF_RESULT_OK : AVIF_RESULT_OUT_OF_MEMORY;
    if (encoder != NULL) encoder->timescale = 1000;
    for (uint32_t index = 0; result == AVIF_RESULT_OK && index < frame_count; index++) {
        avifImage *image = avif_frame(frames + (size_t)index * width * height * 4, width, height, quality, has_alpha, &result);
        if (image == NULL) break;
        // A frame of 0 ms is shown for 100, as browsers show a GIF's.
        uint64_t duration = delays_ms[index] > 0 ? delays_ms[index] : 100;
        result = p_avifEncoderAddImage(encoder, image, duration, AVIF_ADD_IMAGE_FLAG_NONE);
        p_avifImageDestroy(image);
    }
    if (result == AVIF_RESULT_OK) result = p_avifEncoderFinish(encoder, &output);
    int status = avif_finished(result, encoder, &output, out, error, error_size);
    if (output.data != NULL) p_avifRWDataFree(&output);
    if (encoder != NULL) p_avifEncoderDestroy(encoder);
    return status;
}
