#define _GNU_SOURCE
// SVG through librsvg and cairo: a document rasterised into RGBA8 at the size
// asked. The document is parsed from memory with no base location, so
// librsvg resolves no reference outside it (no files, no network); it runs
// no script. Entity expansion is bounded before this is called (SVGCodec).
// librsvg's headers pull in GLib's and cairo's, so the few calls needed are
// declared here rather than included; their ABI is stable across 2.x.
#include "imgcache_shims.h"
#include "decoded_image.h"
#include "loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ptrdiff_t ic_find_bytes(const uint8_t *data, size_t count, size_t start, const uint8_t *needle, size_t needle_count) {
    if (start > count || needle_count == 0) return -1;
    const uint8_t *hit = memmem(data + start, count - start, needle, needle_count);
    return hit ? (ptrdiff_t)(hit - data) : -1;
}


typedef struct ic_rsvg_handle ic_rsvg_handle;
typedef struct ic_cairo ic_cairo;
typedef struct ic_cairo_surface ic_cairo_surface;
/// GLib's GError: a domain, a code and the text people read.
typedef struct {
    uint32_t domain;
    int code;
    char *message;
} ic_gerror;
/// librsvg's RsvgRectangle.
typedef struct {
    double x, y, width, height;
} ic_rsvg_rectangle;

enum { IC_CAIRO_FORMAT_ARGB32 = 0 };

#define IC_RSVG_FUNCTIONS(X)                                                                          \
    X(ic_rsvg_handle *, rsvg_handle_new_from_data, (const uint8_t *, size_t, ic_gerror **))           \
    X(int, rsvg_handle_render_document, (ic_rsvg_handle *, ic_cairo *, const ic_rsvg_rectangle *, ic_gerror **)) \
    X(void, g_object_unref, (void *))                                                                 \
    X(void, g_error_free, (ic_gerror *))                                                              \
    X(ic_cairo_surface *, cairo_image_surface_create, (int, int, int))                                \
    X(int, cairo_surface_status, (ic_cairo_surface *))                                                \
    X(unsigned char *, cairo_image_surface_get_data, (ic_cairo_surface *))                            \
    X(int, cairo_image_surface_get_stride, (ic_cairo_surface *))                                      \
    X(void, cairo_surface_flush, (ic_cairo_surface *))                                                \
    X(void, cairo_surface_destroy, (ic_cairo_surface *))                                              \
    X(ic_cairo *, cairo_create, (ic_cairo_surface *))                                                 \
    X(void, cairo_destroy, (ic_cairo *))                                                              \
    X(void, cairo_scale, (ic_cairo *, double, double))

// GLib and cairo are librsvg's own dependencies: found through its handle.
IC_LIBRARY(rsvg, "librsvg2-2", IC_RSVG_FUNCTIONS, "librsvg-2.so.2", "librsvg-2.so")

const char *ic_rsvg_version(void) {
    static char text[32];
    char error[64];
    if (ic_rsvg_load(error, sizeof error) != 0) return NULL;
    void *library = dlopen("librsvg-2.so.2", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    const unsigned *major = library ? dlsym(library, "rsvg_major_version") : NULL;
    const unsigned *minor = library ? dlsym(library, "rsvg_minor_version") : NULL;
    const unsigned *micro = library ? dlsym(library, "rsvg_micro_version") : NULL;
    if (major == NULL || minor == NULL || micro == NULL) return "2";
    snprintf(text, sizeof text, "%u.%u.%u", *major, *minor, *micro);
    return text;
}

int ic_svg_render(const uint8_t *data, size_t size, uint32_t width, uint32_t height, double shown_width,
                  double shown_height, uint64_t max_pixels, ic_decoded_image *out, char *error, size_t error_size) {
    if (ic_rsvg_load(error, error_size) != 0) return -1;
    if (width == 0 || height == 0 || width > 32767 || height > 32767) {
        ic_set_error(error, error_size, width == 0 || height == 0 ? "zero width or height" : "wider or taller than cairo draws");
        return -1;
    }
    if (ic_allocate_still(out, width, height, max_pixels, error, error_size) != 0) return -1;
    ic_gerror *failure = NULL;
    ic_rsvg_handle *handle = p_rsvg_handle_new_from_data(data, size, &failure);
    ic_cairo_surface *surface = NULL;
    ic_cairo *cairo = NULL;
    int status = -1;
    if (handle == NULL) {
        char text[300];
        snprintf(text, sizeof text, "librsvg cannot read it: %s", failure && failure->message ? failure->message : "not SVG");
        ic_set_error(error, error_size, text);
        goto done;
    }
    surface = p_cairo_image_surface_create(IC_CAIRO_FORMAT_ARGB32, (int)width, (int)height);
    if (p_cairo_surface_status(surface) != 0) {
        ic_set_error(error, error_size, "out of memory");
        goto done;
    }
    cairo = p_cairo_create(surface);
    // Laid out at the size it is shown at, then stretched onto the whole canvas: a canvas rounded to
    // whole pixels is then covered to its edges rather than the picture centred with a sliver either side.
    if (shown_width <= 0 || shown_height <= 0) {
        shown_width = width;
        shown_height = height;
    }
    p_cairo_scale(cairo, width / shown_width, height / shown_height);
    ic_rsvg_rectangle viewport = {0, 0, shown_width, shown_height};
    if (!p_rsvg_handle_render_document(handle, cairo, &viewport, &failure)) {
        char text[300];
        snprintf(text, sizeof text, "librsvg cannot draw it: %s", failure && failure->message ? failure->message : "unknown");
        ic_set_error(error, error_size, text);
        goto done;
    }
    p_cairo_surface_flush(surface);
    // cairo's ARGB32 is premultiplied, a native-endian word per pixel: B, G, R, A in memory here.
    const uint8_t *source = p_cairo_image_surface_get_data(surface);
    int stride = p_cairo_image_surface_get_stride(surface);
    for (uint32_t y = 0; y < height; y++) {
        const uint32_t *row = (const uint32_t *)(source + (size_t)y * stride);
        uint8_t *target = out->pixels + (size_t)y * width * 4;
        for (uint32_t x = 0; x < width; x++) {
            uint32_t word = row[x];
            uint8_t alpha = word >> 24, red = (word >> 16) & 0xFF, green = (word >> 8) & 0xFF, blue = word & 0xFF;
            if (alpha != 0 && alpha != 255) {
                red = (uint8_t)((red * 255u + alpha / 2) / alpha);
                green = (uint8_t)((green * 255u + alpha / 2) / alpha);
                blue = (uint8_t)((blue * 255u + alpha / 2) / alpha);
            }
            target[x * 4] = red;
            target[x * 4 + 1] = green;
            target[x * 4 + 2] = blue;
            target[x * 4 + 3] = alpha;
        }
    }
    status = 0;
done:
    if (status != 0) ic_decoded_image_free(out);
    if (failure != NULL) p_g_error_free(failure);
    if (cairo != NULL) p_cairo_destroy(cairo);
    if (surface != NULL) p_cairo_surface_destroy(surface);
    if (handle != NULL) p_g_object_unref(handle);
    return status;
}
