// TIFF through libtiff, read from memory: the first page as RGBA8 through
// libtiff's RGBA interface (any compression libtiff was built with: LZW,
// Deflate, JPEG, PackBits; 8 or 16 bits, alpha, palette, CMYK), in the
// order its rows are stored, with its ICC profile. Loaded on first use.
#include "imgcache_shims.h"
#include "decoded_image.h"
#include "loader.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tiffio.h>


#define IC_TIFF_FUNCTIONS(X)                                                                               \
    X(TIFF *, TIFFClientOpen,                                                                              \
      (const char *, const char *, thandle_t, TIFFReadWriteProc, TIFFReadWriteProc, TIFFSeekProc,          \
       TIFFCloseProc, TIFFSizeProc, TIFFMapFileProc, TIFFUnmapFileProc))                                   \
    X(void, TIFFClose, (TIFF *))                                                                           \
    X(int, TIFFGetField, (TIFF *, uint32_t, ...))                                                          \
    X(int, TIFFGetFieldDefaulted, (TIFF *, uint32_t, ...))                                                 \
    X(int, TIFFRGBAImageOK, (TIFF *, char[1024]))                                                          \
    X(int, TIFFIsTiled, (TIFF *))                                                                          \
    X(tmsize_t, TIFFScanlineSize, (TIFF *))                                                                \
    X(int, TIFFReadScanline, (TIFF *, void *, uint32_t, uint16_t))                                                          \
    X(int, TIFFReadRGBAImageOriented, (TIFF *, uint32_t, uint32_t, uint32_t *, int, int))                  \
    X(TIFFErrorHandler, TIFFSetErrorHandler, (TIFFErrorHandler))                                           \
    X(TIFFErrorHandler, TIFFSetWarningHandler, (TIFFErrorHandler))                                         \
    X(const char *, TIFFGetVersion, (void))

/// libtiff's last complaint on this thread, for the error message.
static __thread char tiff_last_error[200];

static void tiff_error(const char *module, const char *format, va_list arguments) {
    (void)module;
    vsnprintf(tiff_last_error, sizeof tiff_last_error, format, arguments);
}

IC_TIFF_FUNCTIONS(IC_DECLARE_POINTER)
IC_LIBRARY_STATE(tiff)
static void tiff_load_once(void) {
    IC_OPEN_AND_RESOLVE(tiff, "libtiff6", IC_TIFF_FUNCTIONS, "libtiff.so.6", "libtiff.so")
    // libtiff prints to stderr unless told otherwise: its errors become our message, warnings nothing.
    p_TIFFSetErrorHandler(tiff_error);
    p_TIFFSetWarningHandler(NULL);
    tiff_loaded = 1;
}
IC_LIBRARY_LOADER(tiff)

const char *ic_tiff_version(void) {
    char error[64];
    return ic_tiff_load(error, sizeof error) == 0 ? p_TIFFGetVersion() : NULL;
}

/// The bytes libtiff reads, as a file.
typedef struct {
    const uint8_t *data;
    uint64_t size;
    uint64_t offset;
} memory_file;

static tmsize_t memory_read(thandle_t handle, void *buffer, tmsize_t count) {
    memory_file *file = handle;
    if (count <= 0 || file->offset >= file->size) return 0;
    uint64_t left = file->size - file->offset;
    uint64_t taken = (uint64_t)count < left ? (uint64_t)count : left;
    memcpy(buffer, file->data + file->offset, taken);
    file->offset += taken;
    return (tmsize_t)taken;
}

static tmsize_t memory_write(thandle_t handle, void *buffer, tmsize_t count) {
    (void)handle;
    (void)buffer;
    (void)count;
    return -1;
}

static toff_t memory_seek(thandle_t handle, toff_t offset, int whence) {
    memory_file *file = handle;
    uint64_t base = whence == SEEK_CUR ? file->offset : whence == SEEK_END ? file->size : 0;
    file->offset = base + offset;
    return file->offset;
}

static int memory_close(thandle_t handle) {
    (void)handle;
    return 0;
}

static toff_t memory_size(thandle_t handle) { return ((memory_file *)handle)->size; }

static int memory_map(thandle_t handle, void **base, toff_t *size) {
    (void)handle;
    (void)base;
    (void)size;
    return 0;
}

static void memory_unmap(thandle_t handle, void *base, toff_t size) {
    (void)handle;
    (void)base;
    (void)size;
}

static void tiff_failed(char *error, size_t error_size, const char *what) {
    char text[300];
    snprintf(text, sizeof text, "%s%s%s", what, tiff_last_error[0] ? ": " : "", tiff_last_error);
    ic_set_error(error, error_size, text);
}

/// 8-bit RGB strips, and RGBA ones with unassociated alpha (what most
/// programs write), read row by row as they are: libtiff's RGBA interface
/// converts pixel by pixel, and premultiplies alpha, which loses the colour
/// of faint pixels when undone. 1 when read; 0 to take the general path.
static int read_plain_rgb(TIFF *tiff, ic_decoded_image *out) {
    uint16_t bits = 0, samples = 0, photometric = 0, planar = 0, extra_count = 0;
    uint16_t *extra = NULL;
    p_TIFFGetFieldDefaulted(tiff, TIFFTAG_BITSPERSAMPLE, &bits);
    p_TIFFGetFieldDefaulted(tiff, TIFFTAG_SAMPLESPERPIXEL, &samples);
    p_TIFFGetFieldDefaulted(tiff, TIFFTAG_PLANARCONFIG, &planar);
    if (!p_TIFFGetField(tiff, TIFFTAG_PHOTOMETRIC, &photometric)) return 0;
    if (!p_TIFFGetField(tiff, TIFFTAG_EXTRASAMPLES, &extra_count, &extra)) extra_count = 0;
    int rgb = samples == 3 && extra_count == 0;
    int rgba = samples == 4 && extra_count == 1 && extra != NULL && extra[0] == EXTRASAMPLE_UNASSALPHA;
    if (p_TIFFIsTiled(tiff) || bits != 8 || photometric != PHOTOMETRIC_RGB || planar != PLANARCONFIG_CONTIG ||
        !(rgb || rgba) || p_TIFFScanlineSize(tiff) != (tmsize_t)out->width * samples) {
        return 0;
    }
    for (uint32_t row = 0; row < out->height; row++) {
        uint8_t *target = out->pixels + (size_t)row * out->width * 4;
        // Three samples a pixel are read into the row's last three quarters, then spread out.
        uint8_t *read_at = rgba ? target : target + (size_t)out->width;
        if (p_TIFFReadScanline(tiff, read_at, row, 0) < 0) return 0;
        if (rgba) continue;
        for (uint32_t x = 0; x < out->width; x++) {
            target[x * 4] = read_at[x * 3];
            target[x * 4 + 1] = read_at[x * 3 + 1];
            target[x * 4 + 2] = read_at[x * 3 + 2];
            target[x * 4 + 3] = 255;
        }
    }
    return 1;
}

/// Contiguous strips of grey, RGB or CMYK samples, 8 or 16 bits, with at most one extra sample
/// (alpha, associated or not), read row by row and turned into straight RGBA8 here: libtiff's RGBA
/// interface premultiplies some kinds and not others, drops the alpha of 16-bit grey and of CMYK,
/// and refuses 16-bit CMYK. 1 when read; 0 to take the general path.
static int read_samples(TIFF *tiff, ic_decoded_image *out) {
    uint16_t bits = 0, samples = 0, photometric = 0, planar = 0, extra_count = 0, inkset = INKSET_CMYK;
    uint16_t *extra = NULL;
    p_TIFFGetFieldDefaulted(tiff, TIFFTAG_BITSPERSAMPLE, &bits);
    p_TIFFGetFieldDefaulted(tiff, TIFFTAG_SAMPLESPERPIXEL, &samples);
    p_TIFFGetFieldDefaulted(tiff, TIFFTAG_PLANARCONFIG, &planar);
    p_TIFFGetFieldDefaulted(tiff, TIFFTAG_INKSET, &inkset);
    if (!p_TIFFGetField(tiff, TIFFTAG_PHOTOMETRIC, &photometric)) return 0;
    if (!p_TIFFGetField(tiff, TIFFTAG_EXTRASAMPLES, &extra_count, &extra)) extra_count = 0;
    int colours;
    switch (photometric) {
    case PHOTOMETRIC_MINISBLACK: case PHOTOMETRIC_MINISWHITE: colours = 1; break;
    case PHOTOMETRIC_RGB: colours = 3; break;
    case PHOTOMETRIC_SEPARATED: colours = inkset == INKSET_CMYK ? 4 : 0; break;
    default: colours = 0;
    }
    if (colours == 0 || (bits != 8 && bits != 16) || p_TIFFIsTiled(tiff) || planar != PLANARCONFIG_CONTIG) return 0;
    if (extra_count > 1 || samples != colours + extra_count) return 0;
    int alpha = extra_count == 1 && extra != NULL && (extra[0] == EXTRASAMPLE_ASSOCALPHA || extra[0] == EXTRASAMPLE_UNASSALPHA);
    int associated = alpha && extra[0] == EXTRASAMPLE_ASSOCALPHA;
    if (extra_count == 1 && !alpha && extra != NULL && extra[0] != EXTRASAMPLE_UNSPECIFIED) return 0;
    size_t bytes = bits / 8;
    if (p_TIFFScanlineSize(tiff) != (tmsize_t)((size_t)out->width * samples * bytes)) return 0;
    uint8_t *line = malloc((size_t)out->width * samples * bytes);
    if (line == NULL) return 0;
    // CMYK with its profile: the ink is kept, then turned into sRGB through the profile with lcms2
    // (the colours a printer meant), as a CMYK JPEG's is; the formula below only where there is none.
    size_t count = (size_t)out->width * out->height;
    uint32_t icc_size = 0;
    void *icc = NULL;
    uint8_t *ink = NULL, *alphas = NULL;
    if (colours == 4 && p_TIFFGetField(tiff, TIFFTAG_ICCPROFILE, &icc_size, &icc) && icc != NULL && icc_size >= 128) {
        ink = malloc(count * 4);
        alphas = alpha ? malloc(count) : NULL;
        if (ink == NULL || (alpha && alphas == NULL)) {
            free(ink);
            free(alphas);
            ink = alphas = NULL;
        }
    }
    for (uint32_t row = 0; row < out->height; row++) {
        if (p_TIFFReadScanline(tiff, line, row, 0) < 0) {
            free(line);
            free(ink);
            free(alphas);
            return 0;
        }
        uint8_t *target = out->pixels + (size_t)row * out->width * 4;
        for (uint32_t x = 0; x < out->width; x++) {
            // Each sample in 8 bits, rounded (16-bit samples are in the machine's order after libtiff).
            unsigned value[5] = {0, 0, 0, 0, 255};
            for (int sample = 0; sample < samples; sample++) {
                size_t at = ((size_t)x * samples + sample) * bytes;
                value[sample] = bytes == 1 ? line[at] : ((unsigned)*(uint16_t *)(line + at) * 255u + 32767u) / 65535u;
            }
            unsigned a = alpha ? value[colours] : 255, r, g, b;
            if (ink != NULL) {
                size_t at = (size_t)row * out->width + x;
                for (int channel = 0; channel < 4; channel++) {
                    unsigned v = value[channel];
                    // Associated alpha: the ink was multiplied by it.
                    if (associated && a != 0 && a != 255) {
                        v = (v * 255 + a / 2) / a;
                        if (v > 255) v = 255;
                    }
                    ink[at * 4 + channel] = (uint8_t)v;
                }
                if (alphas != NULL) alphas[at] = (uint8_t)a;
                continue;
            }
            if (colours == 1) {
                unsigned grey = photometric == PHOTOMETRIC_MINISWHITE ? 255 - value[0] : value[0];
                r = g = b = grey;
            } else if (colours == 3) {
                r = value[0], g = value[1], b = value[2];
            } else {
                // Ink to light, as libtiff's RGBA interface turns CMYK (the profile, when there is one, does better).
                unsigned k = 255 - value[3];
                r = (255 - value[0]) * k / 255, g = (255 - value[1]) * k / 255, b = (255 - value[2]) * k / 255;
            }
            if (associated && a != 0 && a != 255) {
                r = (r * 255 + a / 2) / a, g = (g * 255 + a / 2) / a, b = (b * 255 + a / 2) / a;
                r = r > 255 ? 255 : r, g = g > 255 ? 255 : g, b = b > 255 ? 255 : b;
            }
            target[x * 4] = (uint8_t)r;
            target[x * 4 + 1] = (uint8_t)g;
            target[x * 4 + 2] = (uint8_t)b;
            target[x * 4 + 3] = (uint8_t)a;
        }
    }
    free(line);
    if (ink != NULL) {
        char ignored[256];
        if (ic_color_cmyk_to_srgb(ink, out->pixels, count, 0, icc, icc_size, ignored, sizeof ignored) != 0) {
            // Not a CMYK profile after all (or lcms2 missing): ink to light by the formula.
            for (size_t at = 0; at < count; at++) {
                const uint8_t *v = ink + at * 4;
                unsigned k = 255 - v[3];
                out->pixels[at * 4] = (uint8_t)((255 - v[0]) * k / 255);
                out->pixels[at * 4 + 1] = (uint8_t)((255 - v[1]) * k / 255);
                out->pixels[at * 4 + 2] = (uint8_t)((255 - v[2]) * k / 255);
            }
        }
        for (size_t at = 0; at < count; at++) out->pixels[at * 4 + 3] = alphas != NULL ? alphas[at] : 255;
        free(ink);
        free(alphas);
    }
    return 1;
}

int ic_tiff_decode(const uint8_t *data, size_t size, uint64_t max_pixels, uint32_t max_frames,
                   ic_decoded_image *out, char *error, size_t error_size) {
    (void)max_frames;  // a multipage file gives its first page
    if (ic_tiff_load(error, error_size) != 0) return -1;
    tiff_last_error[0] = 0;
    memory_file file = {data, size, 0};
    // "m": no memory mapping (there is no file to map).
    TIFF *tiff = p_TIFFClientOpen("image", "rm", &file, memory_read, memory_write, memory_seek, memory_close, memory_size,
                                  memory_map, memory_unmap);
    if (tiff == NULL) {
        tiff_failed(error, error_size, "libtiff cannot read it");
        return -1;
    }
    int status = -1;
    uint32_t width = 0, height = 0;
    char reason[1024] = {0};
    p_TIFFGetField(tiff, TIFFTAG_IMAGEWIDTH, &width);
    p_TIFFGetField(tiff, TIFFTAG_IMAGELENGTH, &height);
    if (width > 0 && height > 0 && ic_allocate_still(out, width, height, max_pixels, error, error_size) == 0) {
        if (read_plain_rgb(tiff, out) || read_samples(tiff, out)) goto profile;
        ic_decoded_image_free(out);
    } else if (width > 0 && height > 0) {
        goto done;
    }
    if (!p_TIFFRGBAImageOK(tiff, reason)) {
        char text[1100];
        snprintf(text, sizeof text, "libtiff cannot convert it: %s", reason);
        ic_set_error(error, error_size, text);
        goto done;
    }
    if (ic_allocate_still(out, width, height, max_pixels, error, error_size) != 0) goto done;
    // The rows in the order they are stored (asking for the file's own orientation
    // makes libtiff flip nothing): the orientation is applied afterwards, as
    // EXIF's is, since libtiff's flips cannot turn a picture a quarter.
    // The raster's words are ABGR, which in memory on a little-endian machine is R, G, B, A.
    uint16_t orientation = ORIENTATION_TOPLEFT;
    p_TIFFGetFieldDefaulted(tiff, TIFFTAG_ORIENTATION, &orientation);
    if (!p_TIFFReadRGBAImageOriented(tiff, width, height, (uint32_t *)out->pixels, orientation, 1)) {
        tiff_failed(error, error_size, "the image data does not decode");
        ic_decoded_image_free(out);
        goto done;
    }
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    for (size_t index = 0; index < (size_t)width * height; index++) {
        uint8_t *pixel = out->pixels + index * 4, a = pixel[0], b = pixel[1];
        pixel[0] = pixel[3];
        pixel[1] = pixel[2];
        pixel[2] = b;
        pixel[3] = a;
    }
#endif
    // libtiff hands alpha back premultiplied, whichever kind the file has: undone here.
    for (size_t index = 0; index < (size_t)width * height; index++) {
        uint8_t *pixel = out->pixels + index * 4;
        uint8_t alpha = pixel[3];
        if (alpha == 255 || alpha == 0) continue;
        for (int channel = 0; channel < 3; channel++) {
            unsigned value = (pixel[channel] * 255u + alpha / 2) / alpha;
            pixel[channel] = value > 255 ? 255 : (uint8_t)value;
        }
    }
profile:;
    uint32_t profile_size = 0;
    void *profile = NULL;
    if (p_TIFFGetField(tiff, TIFFTAG_ICCPROFILE, &profile_size, &profile) && profile != NULL && profile_size > 0) {
        uint16_t photometric = 0;
        p_TIFFGetFieldDefaulted(tiff, TIFFTAG_PHOTOMETRIC, &photometric);
        // A CMYK profile does not describe the RGB libtiff made of the ink.
        if (photometric != PHOTOMETRIC_SEPARATED) ic_attach_icc(out, profile, profile_size);
    }
    status = 0;
done:
    p_TIFFClose(tiff);
    return status;
}
