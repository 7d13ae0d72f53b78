// JPEG XL through libjxl's decoder: the header (size upright, alpha, bit depth,
// animation and its frames), and every frame composited, in the colours of
// the profile libjxl says the pixels are in. Loaded on first use.
#include "imgcache_shims.h"
#include "decoded_image.h"
#include "loader.h"

#include <jxl/decode.h>
#include <jxl/encode.h>
#include <math.h>
#include <jxl/thread_parallel_runner.h>
#include <stdlib.h>
#include <string.h>


#define IC_JXL_FUNCTIONS(X)                                                                          \
    X(uint32_t, JxlDecoderVersion, (void))                                                           \
    X(JxlDecoder *, JxlDecoderCreate, (const JxlMemoryManager *))                                    \
    X(void, JxlDecoderDestroy, (JxlDecoder *))                                                       \
    X(JxlDecoderStatus, JxlDecoderSubscribeEvents, (JxlDecoder *, int))                              \
    X(JxlDecoderStatus, JxlDecoderSetInput, (JxlDecoder *, const uint8_t *, size_t))                 \
    X(JxlDecoderStatus, JxlDecoderSetUnpremultiplyAlpha, (JxlDecoder *, JXL_BOOL))                   \
    X(void, JxlDecoderCloseInput, (JxlDecoder *))                                                    \
    X(JxlDecoderStatus, JxlDecoderProcessInput, (JxlDecoder *))                                      \
    X(JxlDecoderStatus, JxlDecoderGetBasicInfo, (const JxlDecoder *, JxlBasicInfo *))                \
    X(JxlDecoderStatus, JxlDecoderGetFrameHeader, (const JxlDecoder *, JxlFrameHeader *))            \
    X(JxlDecoderStatus, JxlDecoderGetICCProfileSize,                                                 \
      (const JxlDecoder *, const JxlPixelFormat *, JxlColorProfileTarget, size_t *))                 \
    X(JxlDecoderStatus, JxlDecoderGetColorAsEncodedProfile,                                          \
      (const JxlDecoder *, const JxlPixelFormat *, JxlColorProfileTarget, JxlColorEncoding *))       \
    X(JxlDecoderStatus, JxlDecoderGetColorAsICCProfile,                                              \
      (const JxlDecoder *, const JxlPixelFormat *, JxlColorProfileTarget, uint8_t *, size_t))        \
    X(JxlDecoderStatus, JxlDecoderImageOutBufferSize, (const JxlDecoder *, const JxlPixelFormat *, size_t *)) \
    X(JxlDecoderStatus, JxlDecoderSetImageOutBuffer, (JxlDecoder *, const JxlPixelFormat *, void *, size_t)) \
    X(JxlDecoderStatus, JxlDecoderSetParallelRunner, (JxlDecoder *, JxlParallelRunner, void *))      \
    X(JxlEncoder *, JxlEncoderCreate, (const JxlMemoryManager *))                                    \
    X(void, JxlEncoderDestroy, (JxlEncoder *))                                                       \
    X(JxlEncoderFrameSettings *, JxlEncoderFrameSettingsCreate, (JxlEncoder *, const JxlEncoderFrameSettings *)) \
    X(void, JxlEncoderInitBasicInfo, (JxlBasicInfo *))                                               \
    X(JxlEncoderStatus, JxlEncoderSetBasicInfo, (JxlEncoder *, const JxlBasicInfo *))                \
    X(void, JxlColorEncodingSetToSRGB, (JxlColorEncoding *, JXL_BOOL))                               \
    X(JxlEncoderStatus, JxlEncoderSetColorEncoding, (JxlEncoder *, const JxlColorEncoding *))        \
    X(JxlEncoderStatus, JxlEncoderSetFrameDistance, (JxlEncoderFrameSettings *, float))              \
    X(JxlEncoderStatus, JxlEncoderSetFrameLossless, (JxlEncoderFrameSettings *, JXL_BOOL))           \
    X(JxlEncoderStatus, JxlEncoderFrameSettingsSetOption, (JxlEncoderFrameSettings *, JxlEncoderFrameSettingId, int64_t)) \
    X(JxlEncoderStatus, JxlEncoderAddImageFrame,                                                     \
      (const JxlEncoderFrameSettings *, const JxlPixelFormat *, const void *, size_t))              \
    X(void, JxlEncoderCloseInput, (JxlEncoder *))                                                    \
    X(JxlEncoderStatus, JxlEncoderProcessOutput, (JxlEncoder *, uint8_t **, size_t *))               \
    X(JxlEncoderStatus, JxlEncoderSetParallelRunner, (JxlEncoder *, JxlParallelRunner, void *))

/// libjxl_threads: a decode spread over the machine's cores, as djxl and libvips do.
#define IC_JXL_THREAD_FUNCTIONS(X)                                                                   \
    X(void *, JxlThreadParallelRunnerCreate, (const JxlMemoryManager *, size_t))                     \
    X(void, JxlThreadParallelRunnerDestroy, (void *))                                                \
    X(size_t, JxlThreadParallelRunnerDefaultNumWorkerThreads, (void))                                \
    X(JxlParallelRetCode, JxlThreadParallelRunner,                                                   \
      (void *, void *, JxlParallelRunInit, JxlParallelRunFunction, uint32_t, uint32_t))

IC_JXL_FUNCTIONS(IC_DECLARE_POINTER)
IC_JXL_THREAD_FUNCTIONS(IC_DECLARE_POINTER)
IC_LIBRARY_STATE(jxl)
static void jxl_load_once(void) {
    IC_OPEN_AND_RESOLVE(jxl, "libjxl0.7", IC_JXL_FUNCTIONS, "libjxl.so.0.7", "libjxl.so")
    IC_OPEN_AND_RESOLVE(jxl, "libjxl0.7", IC_JXL_THREAD_FUNCTIONS, "libjxl_threads.so.0.7", "libjxl_threads.so")
    jxl_loaded = 1;
}
IC_LIBRARY_LOADER(jxl)

uint32_t ic_jxl_version(void) {
    char error[64];
    return ic_jxl_load(error, sizeof error) == 0 ? p_JxlDecoderVersion() : 0;
}

/// Width and height as shown: orientations 5–8 turn the picture a quarter.
static void upright_size(const JxlBasicInfo *info, uint32_t *width, uint32_t *height) {
    int turned = info->orientation >= JXL_ORIENT_TRANSPOSE;
    *width = turned ? info->ysize : info->xsize;
    *height = turned ? info->xsize : info->ysize;
}

int ic_jxl_read_header(const uint8_t *data, size_t size, int complete, ic_jxl_header *out, char *error, size_t error_size) {
    if (ic_jxl_load(error, error_size) != 0) return -1;
    memset(out, 0, sizeof *out);
    JxlDecoder *decoder = p_JxlDecoderCreate(NULL);
    if (decoder == NULL) {
        ic_set_error(error, error_size, "out of memory");
        return -1;
    }
    // Frames are counted from their headers; libjxl skips their pixels by the table of contents,
    // so no pixel is decoded. The input is never closed: a file cut short then asks for more
    // (and libjxl prints nothing) rather than failing.
    int status = -1, have_info = 0;
    int events = JXL_DEC_BASIC_INFO | JXL_DEC_COLOR_ENCODING | (complete ? JXL_DEC_FRAME : 0);
    // Not known until the colour encoding is read.
    out->has_colour_profile = 1;
    if (p_JxlDecoderSubscribeEvents(decoder, events) != JXL_DEC_SUCCESS ||
        p_JxlDecoderSetInput(decoder, data, size) != JXL_DEC_SUCCESS) {
        ic_set_error(error, error_size, "libjxl refused its input");
        goto done;
    }
    for (int steps = 0; steps < 1 << 20; steps++) {
        JxlDecoderStatus result = p_JxlDecoderProcessInput(decoder);
        if (result == JXL_DEC_BASIC_INFO) {
            JxlBasicInfo info;
            if (p_JxlDecoderGetBasicInfo(decoder, &info) != JXL_DEC_SUCCESS) break;
            upright_size(&info, &out->width, &out->height);
            out->bit_depth = info.bits_per_sample;
            out->has_alpha = info.alpha_bits > 0;
            out->animated = info.have_animation != 0;
            out->orientation = info.orientation;
            have_info = 1;
        } else if (result == JXL_DEC_COLOR_ENCODING) {
            // sRGB as libjxl describes it (not an ICC profile): nothing to convert.
            JxlColorEncoding encoding;
            if (p_JxlDecoderGetColorAsEncodedProfile(decoder, NULL, JXL_COLOR_PROFILE_TARGET_ORIGINAL, &encoding) == JXL_DEC_SUCCESS) {
                int srgb = encoding.white_point == JXL_WHITE_POINT_D65 && encoding.transfer_function == JXL_TRANSFER_FUNCTION_SRGB
                    && (encoding.color_space == JXL_COLOR_SPACE_GRAY || encoding.primaries == JXL_PRIMARIES_SRGB);
                out->has_colour_profile = !srgb;
            }
            if (!complete) {
                status = 0;
                break;
            }
        } else if (result == JXL_DEC_FRAME) {
            out->frame_count++;
        } else if (result == JXL_DEC_SUCCESS) {
            status = have_info ? 0 : -1;
            if (!have_info) ic_set_error(error, error_size, "no header");
            break;
        } else if (result == JXL_DEC_NEED_MORE_INPUT) {
            // Cut short: before the header (more is needed), or inside a frame before the last.
            if (have_info && !complete) {
                // The size is known, the colours not yet: taken as needing conversion.
                status = 0;
            } else if (have_info) {
                status = 2;
                ic_set_error(error, error_size, "the file ends inside a frame");
            } else {
                status = 1;
                ic_set_error(error, error_size, "more bytes are needed");
            }
            break;
        } else {
            ic_set_error(error, error_size, "libjxl cannot read it");
            break;
        }
    }
done:
    p_JxlDecoderDestroy(decoder);
    return status;
}

int ic_jxl_decode(const uint8_t *data, size_t size, uint64_t max_pixels, uint32_t max_frames,
                  ic_decoded_image *out, char *error, size_t error_size) {
    if (ic_jxl_load(error, error_size) != 0) return -1;
    memset(out, 0, sizeof *out);
    JxlDecoder *decoder = p_JxlDecoderCreate(NULL);
    if (decoder == NULL) {
        ic_set_error(error, error_size, "out of memory");
        return -1;
    }
    JxlPixelFormat format = {4, JXL_TYPE_UINT8, JXL_NATIVE_ENDIAN, 0};
    uint32_t width = 0, height = 0, capacity = 0, done_frames = 0;
    double tick_ms = 0;
    int status = -1, animated = 0, loops = 0;
    uint32_t pending_delay = 0;
    void *runner = NULL;
    if (p_JxlDecoderSubscribeEvents(decoder, JXL_DEC_BASIC_INFO | JXL_DEC_COLOR_ENCODING | JXL_DEC_FRAME | JXL_DEC_FULL_IMAGE) !=
            JXL_DEC_SUCCESS ||
        p_JxlDecoderSetInput(decoder, data, size) != JXL_DEC_SUCCESS) {
        ic_set_error(error, error_size, "libjxl refused its input");
        goto done;
    }
    p_JxlDecoderCloseInput(decoder);
    // Straight alpha, as every other decoder gives, whatever the file stores.
    p_JxlDecoderSetUnpremultiplyAlpha(decoder, JXL_TRUE);
    // Its groups decoded on every core; without threads (none could be made) on this one.
    runner = p_JxlThreadParallelRunnerCreate(NULL, p_JxlThreadParallelRunnerDefaultNumWorkerThreads());
    if (runner != NULL) p_JxlDecoderSetParallelRunner(decoder, p_JxlThreadParallelRunner, runner);
    for (;;) {
        JxlDecoderStatus result = p_JxlDecoderProcessInput(decoder);
        if (result == JXL_DEC_BASIC_INFO) {
            JxlBasicInfo info;
            if (p_JxlDecoderGetBasicInfo(decoder, &info) != JXL_DEC_SUCCESS) {
                ic_set_error(error, error_size, "libjxl cannot read its header");
                goto done;
            }
            upright_size(&info, &width, &height);
            if (width == 0 || height == 0) {
                ic_set_error(error, error_size, "zero width or height");
                goto done;
            }
            if ((uint64_t)width * height > max_pixels) {
                ic_set_error(error, error_size, "more pixels than the limit");
                goto done;
            }
            animated = info.have_animation != 0;
            loops = (int)info.animation.num_loops;
            if (animated && info.animation.tps_numerator > 0) {
                tick_ms = 1000.0 * info.animation.tps_denominator / info.animation.tps_numerator;
            }
        } else if (result == JXL_DEC_COLOR_ENCODING) {
            size_t profile_size = 0;
            if (p_JxlDecoderGetICCProfileSize(decoder, &format, JXL_COLOR_PROFILE_TARGET_DATA, &profile_size) == JXL_DEC_SUCCESS &&
                profile_size > 0 && profile_size < 64 << 20) {
                uint8_t *profile = malloc(profile_size);
                if (profile != NULL && p_JxlDecoderGetColorAsICCProfile(decoder, &format, JXL_COLOR_PROFILE_TARGET_DATA, profile,
                                                                        profile_size) == JXL_DEC_SUCCESS) {
                    ic_attach_icc(out, profile, profile_size);
                }
                free(profile);
            }
        } else if (result == JXL_DEC_FRAME) {
            JxlFrameHeader header;
            pending_delay = 0;
            if (p_JxlDecoderGetFrameHeader(decoder, &header) == JXL_DEC_SUCCESS && animated) {
                double ms = header.duration * tick_ms;
                pending_delay = ms > 0 && ms < 4e9 ? (uint32_t)(ms + 0.5) : 0;
            }
        } else if (result == JXL_DEC_NEED_IMAGE_OUT_BUFFER) {
            // Every frame counts against the limit before its memory is taken.
            if ((uint64_t)width * height * (done_frames + 1) > max_pixels) {
                ic_set_error(error, error_size, "more pixels than the limit");
                goto done;
            }
            size_t frame_bytes = (size_t)width * height * 4, needed = 0;
            if (p_JxlDecoderImageOutBufferSize(decoder, &format, &needed) != JXL_DEC_SUCCESS || needed != frame_bytes) {
                ic_set_error(error, error_size, "unexpected frame layout");
                goto done;
            }
            if (done_frames + 1 > capacity) {
                uint32_t grown = capacity == 0 ? 1 : capacity * 2;
                uint8_t *pixels = realloc(out->pixels, frame_bytes * grown);
                uint32_t *delays = realloc(out->delays_ms, sizeof(uint32_t) * grown);
                if (pixels != NULL) out->pixels = pixels;
                if (delays != NULL) out->delays_ms = delays;
                if (pixels == NULL || delays == NULL) {
                    ic_set_error(error, error_size, "out of memory");
                    goto done;
                }
                capacity = grown;
            }
            if (p_JxlDecoderSetImageOutBuffer(decoder, &format, out->pixels + frame_bytes * done_frames, frame_bytes) !=
                JXL_DEC_SUCCESS) {
                ic_set_error(error, error_size, "libjxl refused the frame buffer");
                goto done;
            }
        } else if (result == JXL_DEC_FULL_IMAGE) {
            out->delays_ms[done_frames] = pending_delay;
            done_frames++;
            if (max_frames > 0 && done_frames >= max_frames) break;
        } else if (result == JXL_DEC_SUCCESS) {
            break;
        } else if (result == JXL_DEC_NEED_MORE_INPUT) {
            ic_set_error(error, error_size, "the file ends before its last frame");
            goto done;
        } else {
            ic_set_error(error, error_size, "the image data does not decode");
            goto done;
        }
    }
    if (done_frames == 0) {
        ic_set_error(error, error_size, "no frame");
        goto done;
    }
    out->width = width;
    out->height = height;
    out->frame_count = done_frames;
    out->loop_count = animated ? loops : -1;
    status = 0;
done:
    if (status != 0) ic_decoded_image_free(out);
    p_JxlDecoderDestroy(decoder);
    if (runner != NULL) p_JxlThreadParallelRunnerDestroy(runner);
    return status;
}

/// cjxl's mapping of a JPEG-like quality (1–99) onto JPEG XL's distance.
static float distance_for_quality(int quality) {
    if (quality >= 30) return 0.1f + (100 - quality) * 0.09f;
    return 6.4f + powf(2.5f, (30 - quality) / 5.0f) / 6.25f;
}

int ic_jxl_encode(const uint8_t *rgba, uint32_t width, uint32_t height, int quality, int has_alpha,
                  ic_encoded *out, char *error, size_t error_size) {
    if (ic_jxl_load(error, error_size) != 0) return -1;
    JxlEncoder *encoder = p_JxlEncoderCreate(NULL);
    void *runner = p_JxlThreadParallelRunnerCreate(NULL, p_JxlThreadParallelRunnerDefaultNumWorkerThreads());
    int status = -1;
    size_t capacity = 64 << 10, used = 0;
    uint8_t *buffer = malloc(capacity);
    if (encoder == NULL || buffer == NULL) {
        ic_set_error(error, error_size, "out of memory");
        goto done;
    }
    if (runner != NULL) p_JxlEncoderSetParallelRunner(encoder, p_JxlThreadParallelRunner, runner);
    int lossless = quality >= 100;
    JxlBasicInfo info;
    p_JxlEncoderInitBasicInfo(&info);
    info.xsize = width;
    info.ysize = height;
    info.bits_per_sample = 8;
    info.num_color_channels = 3;
    info.alpha_bits = has_alpha ? 8 : 0;
    info.num_extra_channels = has_alpha ? 1 : 0;
    // Lossless keeps the samples as they are; lossy works in libjxl's own colour space.
    info.uses_original_profile = lossless ? JXL_TRUE : JXL_FALSE;
    JxlColorEncoding srgb;
    p_JxlColorEncodingSetToSRGB(&srgb, JXL_FALSE);
    JxlEncoderFrameSettings *settings = NULL;
    if (p_JxlEncoderSetBasicInfo(encoder, &info) != JXL_ENC_SUCCESS ||
        p_JxlEncoderSetColorEncoding(encoder, &srgb) != JXL_ENC_SUCCESS ||
        (settings = p_JxlEncoderFrameSettingsCreate(encoder, NULL)) == NULL) {
        ic_set_error(error, error_size, "libjxl refused the picture's description");
        goto done;
    }
    p_JxlEncoderFrameSettingsSetOption(settings, JXL_ENC_FRAME_SETTING_EFFORT, 5);
    if (lossless) {
        p_JxlEncoderSetFrameLossless(settings, JXL_TRUE);
    } else {
        p_JxlEncoderSetFrameDistance(settings, distance_for_quality(quality < 1 ? 1 : quality));
    }
    // An opaque picture comes as RGB, three samples a pixel.
    JxlPixelFormat format = {has_alpha ? 4 : 3, JXL_TYPE_UINT8, JXL_NATIVE_ENDIAN, 0};
    if (p_JxlEncoderAddImageFrame(settings, &format, rgba, (size_t)width * height * format.num_channels) != JXL_ENC_SUCCESS) {
        ic_set_error(error, error_size, "libjxl refused the pixels");
        goto done;
    }
    p_JxlEncoderCloseInput(encoder);
    for (;;) {
        uint8_t *next = buffer + used;
        size_t available = capacity - used;
        JxlEncoderStatus result = p_JxlEncoderProcessOutput(encoder, &next, &available);
        used = (size_t)(next - buffer);
        if (result == JXL_ENC_SUCCESS) break;
        if (result != JXL_ENC_NEED_MORE_OUTPUT) {
            ic_set_error(error, error_size, "libjxl could not encode it");
            goto done;
        }
        uint8_t *grown = realloc(buffer, capacity * 2);
        if (grown == NULL) {
            ic_set_error(error, error_size, "out of memory");
            goto done;
        }
        buffer = grown;
        capacity *= 2;
    }
    out->bytes = buffer;
    out->size = used;
    buffer = NULL;
    status = 0;
done:
    free(buffer);
    if (encoder != NULL) p_JxlEncoderDestroy(encoder);
    if (runner != NULL) p_JxlThreadParallelRunnerDestroy(runner);
    return status;
}
