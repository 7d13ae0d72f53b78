// WebP (libwebp, libwebpdemux for animations) and GIF (giflib): decoders to
// RGBA8 with every frame composited, and the WebP encoder. Both libraries
// report errors by return value, so no jump buffers are needed here; every
// path frees what it made.
#include "imgcache_shims.h"
#include "decoded_image.h"
#include "loader.h"
#include <math.h>

#include <gif_lib.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <webp/decode.h>
#include <webp/demux.h>
#include <webp/encode.h>
#include <webp/mux.h>

// MARK: - Animated canvases

/// Room for one more frame of the canvas; 0 or -1 (over the limit, out of memory).
static int append_frame(ic_decoded_image *out, const uint8_t *canvas, uint32_t delay_ms, uint64_t max_pixels,
                        size_t *capacity, char *error, size_t error_size) {
    uint64_t frame_pixels = (uint64_t)out->width * out->height;
    if (frame_pixels * (out->frame_count + 1) > max_pixels) {
        ic_set_error(error, error_size, "more pixels than the limit, counting every frame");
        return -1;
    }
    if (out->frame_count == *capacity) {
        // Never more room than the limit allows, so memory stays within it.
        size_t allowed = (size_t)(max_pixels / frame_pixels);
        size_t grown = *capacity == 0 ? 1 : *capacity * 2;
        if (grown > allowed) grown = allowed;
        uint8_t *pixels = realloc(out->pixels, grown * frame_pixels * 4);
        if (pixels == NULL) goto out_of_memory;
        out->pixels = pixels;
        uint32_t *delays = realloc(out->delays_ms, grown * sizeof *delays);
        if (delays == NULL) goto out_of_memory;
        out->delays_ms = delays;
        *capacity = grown;
    }
    memcpy(out->pixels + out->frame_count * frame_pixels * 4, canvas, frame_pixels * 4);
    out->delays_ms[out->frame_count] = delay_ms;
    out->frame_count += 1;
    return 0;
out_of_memory:
    ic_set_error(error, error_size, "out of memory");
    return -1;
}

// MARK: - libwebp

#define IC_WEBP_FUNCTIONS(X)                                                          \
    X(int, WebPGetFeaturesInternal, (const uint8_t *, size_t, WebPBitstreamFeatures *, int)) \
    X(uint8_t *, WebPDecodeRGBAInto, (const uint8_t *, size_t, uint8_t *, size_t, int)) \
    X(int, WebPInitDecoderConfigInternal, (WebPDecoderConfig *, int))                 \
    X(VP8StatusCode, WebPDecode, (const uint8_t *, size_t, WebPDecoderConfig *))      \
    X(size_t, WebPEncodeRGBA, (const uint8_t *, int, int, int, float, uint8_t **))    \
    X(size_t, WebPEncodeLosslessRGBA, (const uint8_t *, int, int, int, uint8_t **))   \
    X(void, WebPFree, (void *))                                                       \
    X(int, WebPConfigInitInternal, (WebPConfig *, WebPPreset, float, int))            \
    X(int, WebPPictureInitInternal, (WebPPicture *, int))                             \
    X(int, WebPPictureImportRGBA, (WebPPicture *, const uint8_t *, int))              \
    X(void, WebPPictureFree, (WebPPicture *))
#define IC_WEBP_DEMUX_FUNCTIONS(X)                                                    \
    X(int, WebPAnimDecoderOptionsInitInternal, (WebPAnimDecoderOptions *, int))       \
    X(WebPAnimDecoder *, WebPAnimDecoderNewInternal,                                  \
      (const WebPData *, const WebPAnimDecoderOptions *, int))                        \
    X(int, WebPAnimDecoderGetInfo, (const WebPAnimDecoder *, WebPAnimInfo *))         \
    X(int, WebPAnimDecoderHasMoreFrames, (const WebPAnimDecoder *))                   \
    X(int, WebPAnimDecoderGetNext, (WebPAnimDecoder *, uint8_t **, int *))            \
    X(void, WebPAnimDecoderDelete, (WebPAnimDecoder *))

#define IC_WEBP_MUX_FUNCTIONS(X)                                                      \
    X(int, WebPAnimEncoderOptionsInitInternal, (WebPAnimEncoderOptions *, int))       \
    X(WebPAnimEncoder *, WebPAnimEncoderNewInternal, (int, int, const WebPAnimEncoderOptions *, int)) \
    X(int, WebPAnimEncoderAdd, (WebPAnimEncoder *, WebPPicture *, int, const WebPConfig *)) \
    X(int, WebPAnimEncoderAssemble, (WebPAnimEncoder *, WebPData *))                  \
    X(const char *, WebPAnimEncoderGetError, (WebPAnimEncoder *))                     \
    X(void, WebPAnimEncoderDelete, (WebPAnimEncoder *))

IC_WEBP_FUNCTIONS(IC_DECLARE_POINTER)
IC_WEBP_DEMUX_FUNCTIONS(IC_DECLARE_POINTER)
IC_WEBP_MUX_FUNCTIONS(IC_DECLARE_POINTER)

IC_LIBRARY_STATE(webp)

static void webp_load_once(void) {
    IC_OPEN_AND_RESOLVE(webp, "libwebp7", IC_WEBP_FUNCTIONS, "libwebp.so.7", "libwebp.so")
    IC_OPEN_AND_RESOLVE(webp, "libwebpdemux2", IC_WEBP_DEMUX_FUNCTIONS, "libwebpdemux.so.2", "libwebpdemux.so")
    IC_OPEN_AND_RESOLVE(webp, "libwebpmux3", IC_WEBP_MUX_FUNCTIONS, "libwebpmux.so.3", "libwebpmux.so")
    webp_loaded = 1;
}

int ic_webp_load(char *error, size_t error_size);
IC_LIBRARY_LOADER(webp)

int ic_webp_decode_reduced(const uint8_t *data, size_t size, uint64_t max_pixels, uint32_t min_width, uint32_t min_height,
                           ic_decoded_image *out, char *error, size_t error_size) {
    memset(out, 0, sizeof *out);
    if (ic_webp_load(error, error_size) != 0) return -1;
    WebPDecoderConfig config;
    if (!p_WebPInitDecoderConfigInternal(&config, WEBP_DECODER_ABI_VERSION) ||
        p_WebPGetFeaturesInternal(data, size, &config.input, WEBP_DECODER_ABI_VERSION) != VP8_STATUS_OK) {
        ic_set_error(error, error_size, "bad WebP bitstream");
        return -1;
    }
    uint32_t width = (uint32_t)config.input.width, height = (uint32_t)config.input.height;
    double scale = 0;
    if (min_width > 0) scale = (double)min_width / width;
    if (min_height > 0 && (double)min_height / height > scale) scale = (double)min_height / height;
    // An animation, or a size not smaller: decoded whole.
    if (config.input.has_animation || scale <= 0 || scale >= 1) return ic_webp_decode(data, size, max_pixels, 0, out, error, error_size);
    if ((uint64_t)width * height > max_pixels) {
        ic_set_error(error, error_size, "more pixels than the limit");
        return -1;
    }
    uint32_t scaled_width = (uint32_t)ceil(width * scale), scaled_height = (uint32_t)ceil(height * scale);
    if (scaled_width < 1) scaled_width = 1;
    if (scaled_height < 1) scaled_height = 1;
    if (ic_allocate_still(out, scaled_width, scaled_height, max_pixels, error, error_size) != 0) return -1;
    // libwebp's rescaler, straight from the bitstream: premultiplied, so hidden colour does not bleed.
    config.options.use_scaling = 1;
    config.options.scaled_width = (int)scaled_width;
    config.options.scaled_height = (int)scaled_height;
    config.output.colorspace = config.input.has_alpha ? MODE_rgbA : MODE_RGBA;
    config.output.is_external_memory = 1;
    config.output.u.RGBA.rgba = out->pixels;
    config.output.u.RGBA.stride = (int)scaled_width * 4;
    config.output.u.RGBA.size = (size_t)scaled_width * scaled_height * 4;
    if (p_WebPDecode(data, size, &config) != VP8_STATUS_OK) {
        ic_decoded_image_free(out);
        ic_set_error(error, error_size, "the WebP image data does not decode");
        return -1;
    }
    if (config.input.has_alpha) {
        for (size_t index = 0; index < (size_t)scaled_width * scaled_height; index++) {
            uint8_t *pixel = out->pixels + index * 4;
            unsigned alpha = pixel[3];
            if (alpha == 0 || alpha == 255) continue;
            for (int channel = 0; channel < 3; channel++) {
                unsigned value = (pixel[channel] * 255u + alpha / 2) / alpha;
                pixel[channel] = (uint8_t)(value > 255 ? 255 : value);
            }
        }
    }
    return 0;
}

int ic_webp_decode(const uint8_t *data, size_t size, uint64_t max_pixels, uint32_t max_frames,
                   ic_decoded_image *out, char *error, size_t error_size) {
    memset(out, 0, sizeof *out);
    if (ic_webp_load(error, error_size) != 0) return -1;
    WebPBitstreamFeatures features;
    if (p_WebPGetFeaturesInternal(data, size, &features, WEBP_DECODER_ABI_VERSION) != VP8_STATUS_OK) {
        ic_set_error(error, error_size, "bad WebP bitstream");
        return -1;
    }
    if (!features.has_animation) {
        if (ic_allocate_still(out, (uint32_t)features.width, (uint32_t)features.height, max_pixels, error, error_size) != 0)
            return -1;
        size_t stride = (size_t)out->width * 4;
        if (p_WebPDecodeRGBAInto(data, size, out->pixels, stride * out->height, (int)stride) == NULL) {
            ic_decoded_image_free(out);
            ic_set_error(error, error_size, "the WebP image data does not decode");
            return -1;
        }
        return 0;
    }
    WebPAnimDecoderOptions options;
    if (!p_WebPAnimDecoderOptionsInitInternal(&options, WEBP_DEMUX_ABI_VERSION)) {
        ic_set_error(error, error_size, "libwebpdemux version mismatch");
        return -1;
    }
    options.color_mode = MODE_RGBA;
    options.use_threads = 0;
    WebPData bitstream = {.bytes = data, .size = size};
    WebPAnimDecoder *decoder = p_WebPAnimDecoderNewInternal(&bitstream, &options, WEBP_DEMUX_ABI_VERSION);
    if (decoder == NULL) {
        ic_set_error(error, error_size, "bad animated WebP container");
        return -1;
    }
    WebPAnimInfo info;
    if (!p_WebPAnimDecoderGetInfo(decoder, &info) || info.canvas_width == 0 || info.canvas_height == 0
        || (uint64_t)info.canvas_width * info.canvas_height > max_pixels) {
        p_WebPAnimDecoderDelete(decoder);
        ic_set_error(error, error_size, "bad or oversized animation canvas");
        return -1;
    }
    out->width = info.canvas_width;
    out->height = info.canvas_height;
    out->loop_count = (int32_t)info.loop_count;
    size_t capacity = 0;
    int previous = 0;
    while (p_WebPAnimDecoderHasMoreFrames(decoder) && (max_frames == 0 || out->frame_count < max_frames)) {
        uint8_t *canvas = NULL;
        int timestamp = 0;
        if (!p_WebPAnimDecoderGetNext(decoder, &canvas, &timestamp)) {
            ic_set_error(error, error_size, "a frame of the animation does not decode");
            goto failed;
        }
        if (append_frame(out, canvas, (uint32_t)(timestamp - previous), max_pixels, &capacity, error, error_size) != 0)
            goto failed;
        previous = timestamp;
    }
    p_WebPAnimDecoderDelete(decoder);
    if (out->frame_count == 0) {
        ic_decoded_image_free(out);
        ic_set_error(error, error_size, "the animation has no frame");
        return -1;
    }
    return 0;
failed:
    p_WebPAnimDecoderDelete(decoder);
    ic_decoded_image_free(out);
    return -1;
}

// MARK: - giflib

#define IC_GIF_FUNCTIONS(X)                                                   \
    X(GifFileType *, DGifOpen, (void *, InputFunc, int *))                    \
    X(int, DGifCloseFile, (GifFileType *, int *))                             \
    X(int, DGifGetRecordType, (GifFileType *, GifRecordType *))               \
    X(int, DGifGetImageDesc, (GifFileType *))                                 \
    X(int, DGifGetLine, (GifFileType *, GifPixelType *, int))                 \
    X(int, DGifGetExtension, (GifFileType *, int *, GifByteType **))          \
    X(int, DGifGetExtensionNext, (GifFileType *, GifByteType **))             \
    X(const char *, GifErrorString, (int))                                    \
    X(GifFileType *, EGifOpen, (void *, OutputFunc, int *))                   \
    X(void, EGifSetGifVersion, (GifFileType *, bool))                         \
    X(int, EGifPutScreenDesc, (GifFileType *, int, int, int, int, const ColorMapObject *)) \
    X(int, EGifPutExtensionLeader, (GifFileType *, int))                      \
    X(int, EGifPutExtensionBlock, (GifFileType *, int, const void *))         \
    X(int, EGifPutExtensionTrailer, (GifFileType *))                          \
    X(int, EGifPutExtension, (GifFileType *, int, int, const void *))         \
    X(int, EGifPutImageDesc, (GifFileType *, int, int, int, int, bool, const ColorMapObject *)) \
    X(int, EGifPutLine, (GifFileType *, GifPixelType *, int))                 \
    X(int, EGifCloseFile, (GifFileType *, int *))                             \
    X(size_t, EGifGCBToExtension, (const GraphicsControlBlock *, GifByteType *)) \
    X(ColorMapObject *, GifMakeMapObject, (int, const GifColorType *))        \
    X(void, GifFreeMapObject, (ColorMapObject *))                             \
    X(int, GifQuantizeBuffer, (unsigned int, unsigned int, int *, GifByteType *, GifByteType *, \
                               GifByteType *, GifByteType *, GifColorType *))

int ic_gif_load(char *error, size_t error_size);
IC_LIBRARY(gif, "libgif7", IC_GIF_FUNCTIONS, "libgif.so.7", "libgif.so")

typedef struct {
    const uint8_t *data;
    size_t size;
    size_t offset;
} gif_source;

static int gif_read(GifFileType *gif, GifByteType *buffer, int length) {
    gif_source *source = gif->UserData;
    size_t left = source->size - source->offset;
    size_t count = length < 0 ? 0 : ((size_t)length < left ? (size_t)length : left);
    memcpy(buffer, source->data + source->offset, count);
    source->offset += count;
    return (int)count;
}

static void gif_library_error(GifFileType *gif, char *error, size_t error_size) {
    const char *message = p_GifErrorString(gif->Error);
    ic_set_error(error, error_size, message ? message : "giflib error");
}

int ic_gif_decode(const uint8_t *data, size_t size, uint64_t max_pixels, uint32_t max_frames,
                  ic_decoded_image *out, char *error, size_t error_size) {
    memset(out, 0, sizeof *out);
    if (ic_gif_load(error, error_size) != 0) return -1;
    gif_source source = {.data = data, .size = size};
    int code = 0;
    GifFileType *gif = p_DGifOpen(&source, gif_read, &code);
    if (gif == NULL) {
        const char *message = p_GifErrorString(code);
        ic_set_error(error, error_size, message ? message : "not a GIF");
        return -1;
    }
    uint32_t width = (uint32_t)gif->SWidth, height = (uint32_t)gif->SHeight;
    uint8_t *canvas = NULL, *saved = NULL;
    GifPixelType *line = NULL;
    size_t capacity = 0;
    if (width == 0 || height == 0 || (uint64_t)width * height > max_pixels) {
        ic_set_error(error, error_size, "bad or oversized logical screen");
        goto failed;
    }
    out->width = width;
    out->height = height;
    out->loop_count = -1;
    canvas = calloc((size_t)width * height, 4);
    line = malloc(width);
    if (canvas == NULL || line == NULL) {
        ic_set_error(error, error_size, "out of memory");
        goto failed;
    }
    int disposal = 0, delay_ms = 0, transparent = -1;
    GifRecordType record;
    do {
        if (p_DGifGetRecordType(gif, &record) == GIF_ERROR) {
            // An unknown block after a frame ends the animation there, as in browsers.
            if (gif->Error == D_GIF_ERR_WRONG_RECORD && out->frame_count > 0) break;
            gif_library_error(gif, error, error_size);
            goto failed;
        }
        if (record == EXTENSION_RECORD_TYPE) {
            int kind = 0;
            GifByteType *block = NULL;
            if (p_DGifGetExtension(gif, &kind, &block) == GIF_ERROR) {
                gif_library_error(gif, error, error_size);
                goto failed;
            }
            int netscape = 0;
            if (kind == GRAPHICS_EXT_FUNC_CODE && block != NULL && block[0] >= 4) {
                disposal = (block[1] >> 2) & 0x07;
                delay_ms = (block[2] | block[3] << 8) * 10;
                transparent = (block[1] & 0x01) ? block[4] : -1;
            } else if (kind == APPLICATION_EXT_FUNC_CODE && block != NULL && block[0] == 11
                       && (memcmp(block + 1, "NETSCAPE2.0", 11) == 0 || memcmp(block + 1, "ANIMEXTS1.0", 11) == 0)) {
                netscape = 1;
            }
            while (block != NULL) {
                if (p_DGifGetExtensionNext(gif, &block) == GIF_ERROR) {
                    gif_library_error(gif, error, error_size);
                    goto failed;
                }
                // The first loop count holds, as browsers read it; a later one is ignored.
                if (netscape && block != NULL && block[0] >= 3 && block[1] == 1 && out->loop_count == -1) {
                    // A GIF counts repeats after the first play (0: forever); imgcache counts plays, as
                    // WebP and APNG do (browsers play a GIF saying 3 four times).
                    int repeats = block[2] | block[3] << 8;
                    out->loop_count = repeats == 0 ? 0 : repeats + 1;
                    netscape = 0;
                }
            }
        } else if (record == IMAGE_DESC_RECORD_TYPE) {
            if (p_DGifGetImageDesc(gif) == GIF_ERROR) {
                gif_library_error(gif, error, error_size);
                goto failed;
            }
            GifImageDesc *frame = &gif->Image;
            ColorMapObject *colors = frame->ColorMap ? frame->ColorMap : gif->SColorMap;
            if (colors == NULL || frame->Width <= 0 || frame->Height <= 0
                || (uint64_t)frame->Width > width * 4ull || (uint64_t)frame->Height > height * 4ull) {
                ic_set_error(error, error_size, colors == NULL ? "a frame has no colour table" : "a frame is far larger than the screen");
                goto failed;
            }
            if (disposal == 3) {
                // Made on the first frame that restores the previous canvas; most GIFs have none.
                if (saved == NULL) saved = malloc((size_t)width * height * 4);
                if (saved == NULL) {
                    ic_set_error(error, error_size, "out of memory");
                    goto failed;
                }
                memcpy(saved, canvas, (size_t)width * height * 4);
            }
            GifPixelType *row = realloc(line, (size_t)frame->Width);
            if (row == NULL) {
                ic_set_error(error, error_size, "out of memory");
                goto failed;
            }
            line = row;
            // Interlaced frames arrive in four passes of rows.
            static const int starts[] = {0, 4, 2, 1}, steps[] = {8, 8, 4, 2};
            int passes = frame->Interlace ? 4 : 1;
            for (int pass = 0; pass < passes; pass++) {
                int start = frame->Interlace ? starts[pass] : 0, step = frame->Interlace ? steps[pass] : 1;
                for (int y = start; y < frame->Height; y += step) {
                    if (p_DGifGetLine(gif, line, frame->Width) == GIF_ERROR) {
                        gif_library_error(gif, error, error_size);
                        goto failed;
                    }
                    int canvas_y = frame->Top + y;
                    if (canvas_y < 0 || (uint32_t)canvas_y >= height) continue;
                    for (int x = 0; x < frame->Width; x++) {
                        int canvas_x = frame->Left + x;
                        if (canvas_x < 0 || (uint32_t)canvas_x >= width || line[x] == transparent) continue;
                        if (line[x] >= colors->ColorCount) continue;
                        GifColorType color = colors->Colors[line[x]];
                        uint8_t *pixel = canvas + ((size_t)canvas_y * width + (size_t)canvas_x) * 4;
                        pixel[0] = color.Red;
                        pixel[1] = color.Green;
                        pixel[2] = color.Blue;
                        pixel[3] = 255;
                    }
                }
            }
            if (append_frame(out, canvas, (uint32_t)delay_ms, max_pixels, &capacity, error, error_size) != 0) goto failed;
            // Disposal, before the next frame is drawn.
            if (disposal == 2) {
                for (int y = frame->Top; y < frame->Top + frame->Height; y++) {
                    if (y < 0 || (uint32_t)y >= height) continue;
                    for (int x = frame->Left; x < frame->Left + frame->Width; x++) {
                        if (x < 0 || (uint32_t)x >= width) continue;
                        memset(canvas + ((size_t)y * width + (size_t)x) * 4, 0, 4);
                    }
                }
            } else if (disposal == 3 && saved != NULL) {
                memcpy(canvas, saved, (size_t)width * height * 4);
            }
            disposal = 0;
            delay_ms = 0;
            transparent = -1;
            if (max_frames != 0 && out->frame_count >= max_frames) break;
        }
    } while (record != TERMINATE_RECORD_TYPE);
    if (out->frame_count == 0) {
        ic_set_error(error, error_size, "no frame");
        goto failed;
    }
    if (out->frame_count == 1 && out->loop_count == -1) out->delays_ms[0] = 0;
    // An animation without a loop extension plays once.
    if (out->frame_count > 1 && out->loop_count == -1) out->loop_count = 1;
    free(canvas);
    free(saved);
    free(line);
    p_DGifCloseFile(gif, &code);
    return 0;
failed:
    free(canvas);
    free(saved);
    free(line);
    p_DGifCloseFile(gif, &code);
    ic_decoded_image_free(out);
    return -1;
}

// MARK: - WebP encoding

int ic_webp_encode(const uint8_t *rgba, uint32_t width, uint32_t height, int quality, int lossless,
                   ic_encoded *out, char *error, size_t error_size) {
    memset(out, 0, sizeof *out);
    if (ic_webp_load(error, error_size) != 0) return -1;
    uint8_t *encoded = NULL;
    int stride = (int)width * 4;
    size_t size = lossless
        ? p_WebPEncodeLosslessRGBA(rgba, (int)width, (int)height, stride, &encoded)
        : p_WebPEncodeRGBA(rgba, (int)width, (int)height, stride, (float)(quality < 1 ? 1 : quality > 100 ? 100 : quality), &encoded);
    if (size == 0 || encoded == NULL) {
        ic_set_error(error, error_size, "libwebp could not encode the image");
        return -1;
    }
    // Copied so that every encoder's output is freed the same way.
    out->bytes = malloc(size);
    if (out->bytes != NULL) memcpy(out->bytes, encoded, size);
    p_WebPFree(encoded);
    if (out->bytes == NULL) {
        ic_set_error(error, error_size, "out of memory");
        return -1;
    }
    out->size = size;
    return 0;
}

int ic_webp_encode_animation(const uint8_t *frames, uint32_t width, uint32_t height, uint32_t frame_count,
                             const uint32_t *delays_ms, int32_t loop_count, int quality, int lossless,
                             ic_encoded *out, char *error, size_t error_size) {
    memset(out, 0, sizeof *out);
    if (ic_webp_load(error, error_size) != 0) return -1;
    WebPAnimEncoderOptions options;
    WebPConfig config;
    if (!p_WebPAnimEncoderOptionsInitInternal(&options, WEBP_MUX_ABI_VERSION)
        || !p_WebPConfigInitInternal(&config, WEBP_PRESET_DEFAULT, (float)(quality < 1 ? 1 : quality > 100 ? 100 : quality),
                                     WEBP_ENCODER_ABI_VERSION)) {
        ic_set_error(error, error_size, "libwebp version mismatch");
        return -1;
    }
    options.anim_params.loop_count = loop_count < 0 ? 0 : loop_count;
    int transparent = 0;
    for (size_t i = 0; i < (size_t)width * height * frame_count && !transparent; i++) transparent = frames[i * 4 + 3] != 255;
    // Uncovered canvas and disposed areas show the background: clear when the animation has alpha.
    if (transparent) options.anim_params.bgcolor = 0;
    config.lossless = lossless ? 1 : 0;
    WebPAnimEncoder *encoder = p_WebPAnimEncoderNewInternal((int)width, (int)height, &options, WEBP_MUX_ABI_VERSION);
    if (encoder == NULL) {
        ic_set_error(error, error_size, "cannot create a WebP animation encoder");
        return -1;
    }
    int timestamp = 0;
    for (uint32_t index = 0; index < frame_count; index++) {
        WebPPicture picture;
        if (!p_WebPPictureInitInternal(&picture, WEBP_ENCODER_ABI_VERSION)) goto failed;
        picture.use_argb = 1;
        picture.width = (int)width;
        picture.height = (int)height;
        const uint8_t *rgba = frames + (size_t)index * width * height * 4;
        int added = p_WebPPictureImportRGBA(&picture, rgba, (int)width * 4)
            && p_WebPAnimEncoderAdd(encoder, &picture, timestamp, &config);
        p_WebPPictureFree(&picture);
        if (!added) goto failed;
        timestamp += (int)delays_ms[index];
    }
    WebPData assembled = {NULL, 0};
    if (!p_WebPAnimEncoderAdd(encoder, NULL, timestamp, NULL) || !p_WebPAnimEncoderAssemble(encoder, &assembled)) goto failed;
    out->bytes = malloc(assembled.size);
    if (out->bytes != NULL) {
        memcpy(out->bytes, assembled.bytes, assembled.size);
        out->size = assembled.size;
        // libwebp sets the alpha flag only when a frame it stored has alpha; transparency that comes
        // from uncovered canvas or disposal is alpha too, and readers (Pillow) take the flag as the mode.
        if (transparent && out->size > 20 && memcmp(out->bytes + 12, "VP8X", 4) == 0) out->bytes[20] |= 0x10;
    }
    p_WebPFree((void *)assembled.bytes);
    p_WebPAnimEncoderDelete(encoder);
    if (out->bytes == NULL) {
        ic_set_error(error, error_size, "out of memory");
        return -1;
    }
    return 0;
failed:
    ic_set_error(error, error_size, p_WebPAnimEncoderGetError(encoder));
    p_WebPAnimEncoderDelete(encoder);
    return -1;
}

// MARK: - GIF encoding

typedef struct {
    uint8_t *bytes;
    size_t size;
    size_t capacity;
    int failed;
} gif_sink;

static int gif_write(GifFileType *gif, const GifByteType *data, int length) {
    gif_sink *sink = gif->UserData;
    if (length <= 0) return 0;
    if (sink->size + (size_t)length > sink->capacity) {
        size_t capacity = sink->capacity ? sink->capacity * 2 : 65536;
        while (capacity < sink->size + (size_t)length) capacity *= 2;
        uint8_t *grown = realloc(sink->bytes, capacity);
        if (grown == NULL) {
            sink->failed = 1;
            return 0;
        }
        sink->bytes = grown;
        sink->capacity = capacity;
    }
    memcpy(sink->bytes + sink->size, data, (size_t)length);
    sink->size += (size_t)length;
    return length;
}

/// Indexes the pixels against their own colours when there are at most `limit`
/// of them; false (nothing written that matters) when there are more.
static int gif_exact_palette(const GifByteType *red, const GifByteType *green, const GifByteType *blue, size_t pixels,
                             int limit, GifByteType *indices, GifColorType *colors) {
    // Open addressing over 1024 slots: four times the most colours a palette holds.
    uint32_t keys[1024];
    uint8_t slots[1024];
    memset(keys, 0xFF, sizeof keys);
    int count = 0;
    for (size_t i = 0; i < pixels; i++) {
        uint32_t key = (uint32_t)red[i] << 16 | (uint32_t)green[i] << 8 | blue[i];
        uint32_t slot = (key * 2654435761u) >> 22;
        while (keys[slot] != 0xFFFFFFFFu && keys[slot] != key) slot = (slot + 1) & 1023;
        if (keys[slot] != key) {
            if (count == limit) return 0;
            keys[slot] = key;
            slots[slot] = (uint8_t)count;
            colors[count].Red = red[i];
            colors[count].Green = green[i];
            colors[count].Blue = blue[i];
            count++;
        }
        indices[i] = slots[slot];
    }
    return 1;
}

int ic_gif_encode(const uint8_t *frames, uint32_t width, uint32_t height, uint32_t frame_count,
                  const uint32_t *delays_ms, int loop_count, ic_encoded *out, char *error, size_t error_size) {
    memset(out, 0, sizeof *out);
    if (ic_gif_load(error, error_size) != 0) return -1;
    if (width == 0 || height == 0 || width > 65535 || height > 65535 || frame_count == 0) {
        ic_set_error(error, error_size, "a GIF is 1 to 65535 pixels a side");
        return -1;
    }
    size_t pixels = (size_t)width * height;
    gif_sink sink = {0};
    int code = 0;
    GifByteType *red = malloc(pixels), *green = malloc(pixels), *blue = malloc(pixels), *indices = malloc(pixels);
    ColorMapObject *map = NULL;
    GifFileType *gif = NULL;
    if (red == NULL || green == NULL || blue == NULL || indices == NULL) {
        ic_set_error(error, error_size, "out of memory");
        goto failed;
    }
    gif = p_EGifOpen(&sink, gif_write, &code);
    if (gif == NULL) {
        const char *message = p_GifErrorString(code);
        ic_set_error(error, error_size, message ? message : "cannot start a GIF");
        goto failed;
    }
    p_EGifSetGifVersion(gif, true);
    if (p_EGifPutScreenDesc(gif, (int)width, (int)height, 8, 0, NULL) == GIF_ERROR) goto library_failed;
    // A loop count for animations that play more than once (1 means once: no extension, as browsers
    // read it): `loop_count` plays are that many repeats less one (0 stays forever).
    if (frame_count > 1 && loop_count != 1) {
        int repeats = loop_count <= 0 ? 0 : loop_count - 1 > 65535 ? 65535 : loop_count - 1;
        uint8_t loop[3] = {1, (uint8_t)(repeats & 0xFF), (uint8_t)((repeats >> 8) & 0xFF)};
        if (p_EGifPutExtensionLeader(gif, APPLICATION_EXT_FUNC_CODE) == GIF_ERROR
            || p_EGifPutExtensionBlock(gif, 11, "NETSCAPE2.0") == GIF_ERROR
            || p_EGifPutExtensionBlock(gif, 3, loop) == GIF_ERROR
            || p_EGifPutExtensionTrailer(gif) == GIF_ERROR) goto library_failed;
    }
    // One transparent index for the whole animation when any frame has a clear pixel: readers that
    // take the animation's mode from the first frame (Pillow) would otherwise read every later frame
    // without alpha, its clear areas black.
    int transparent = 0;
    for (size_t i = 0; i < pixels * frame_count && !transparent; i++) transparent = frames[i * 4 + 3] < 128;
    for (uint32_t frame = 0; frame < frame_count; frame++) {
        const uint8_t *rgba = frames + pixels * 4 * frame;
        uint8_t last[3] = {0, 0, 0};
        for (size_t i = 0; i < pixels; i++) {
            // A transparent pixel takes its neighbour's colour, so that it spends no palette entry.
            if (rgba[i * 4 + 3] >= 128) {
                last[0] = rgba[i * 4];
                last[1] = rgba[i * 4 + 1];
                last[2] = rgba[i * 4 + 2];
            }
            red[i] = last[0];
            green[i] = last[1];
            blue[i] = last[2];
        }
        GifColorType colors[256];
        memset(colors, 0, sizeof colors);
        int size = transparent ? 255 : 256;
        // A frame with few enough colours keeps them exactly; only a richer one is quantised (giflib's
        // median cut works on 5 bits a channel, so it would turn pure red into 248).
        if (!gif_exact_palette(red, green, blue, pixels, size, indices, colors)
            && p_GifQuantizeBuffer(width, height, &size, red, green, blue, indices, colors) == GIF_ERROR) {
            ic_set_error(error, error_size, "cannot reduce the frame to 256 colours");
            goto failed;
        }
        if (transparent) {
            for (size_t i = 0; i < pixels; i++) {
                if (rgba[i * 4 + 3] < 128) indices[i] = 255;
            }
        }
        map = p_GifMakeMapObject(256, colors);
        if (map == NULL) {
            ic_set_error(error, error_size, "out of memory");
            goto failed;
        }
        GraphicsControlBlock control = {
            // Each frame is the whole canvas: the one before goes before it is drawn.
            .DisposalMode = frame_count > 1 ? DISPOSE_BACKGROUND : DISPOSAL_UNSPECIFIED,
            .UserInputFlag = false,
            // Centiseconds; a frame over 10 ms is at least 2 (a GIF's 1 plays as 100 ms in browsers).
            .DelayTime = delays_ms ? (int)((delays_ms[frame] + 5) / 10 < 2 && delays_ms[frame] > 10 ? 2 : (delays_ms[frame] + 5) / 10) : 0,
            .TransparentColor = transparent ? 255 : NO_TRANSPARENT_COLOR,
        };
        GifByteType extension[4];
        size_t length = p_EGifGCBToExtension(&control, extension);
        if ((frame_count > 1 || transparent) && p_EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, (int)length, extension) == GIF_ERROR)
            goto library_failed;
        if (p_EGifPutImageDesc(gif, 0, 0, (int)width, (int)height, false, map) == GIF_ERROR) goto library_failed;
        for (uint32_t row = 0; row < height; row++) {
            if (p_EGifPutLine(gif, indices + (size_t)row * width, (int)width) == GIF_ERROR) goto library_failed;
        }
        p_GifFreeMapObject(map);
        map = NULL;
        if (sink.failed) {
            ic_set_error(error, error_size, "out of memory");
            goto failed;
        }
    }
    if (p_EGifCloseFile(gif, &code) == GIF_ERROR) {
        gif = NULL;  // freed by EGifCloseFile even when it fails
        const char *message = p_GifErrorString(code);
        ic_set_error(error, error_size, message ? message : "cannot finish the GIF");
        goto failed;
    }
    gif = NULL;
    free(red);
    free(green);
    free(blue);
    free(indices);
    out->bytes = sink.bytes;
    out->size = sink.size;
    return 0;
library_failed:
    gif_library_error(gif, error, error_size);
failed:
    if (map) p_GifFreeMapObject(map);
    if (gif) p_EGifCloseFile(gif, &code);
    free(red);
    free(green);
    free(blue);
    free(indices);
    free(sink.bytes);
    return -1;
}
