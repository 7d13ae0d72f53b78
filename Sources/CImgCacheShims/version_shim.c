// What `imgcache --version` reports of each C library: loaded as imgcache
// loads it, then asked for its version (or, where the library has no such
// call, the version of the headers the shim was compiled against), and the
// file it came from.
#define _GNU_SOURCE
#include "imgcache_shims.h"
#include "loader.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <gif_lib.h>
#include <hiredis/hiredis.h>
#include <jconfig.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

int ic_curl_load(char *error, size_t error_size);
int ic_png_load(char *error, size_t error_size);
int ic_jpeg_load(char *error, size_t error_size);
int ic_webp_load(char *error, size_t error_size);
int ic_gif_load(char *error, size_t error_size);
int ic_avif_load(char *error, size_t error_size);
int ic_heif_load(char *error, size_t error_size);
int ic_jxl_load(char *error, size_t error_size);
int ic_tiff_load(char *error, size_t error_size);
int ic_rsvg_load(char *error, size_t error_size);
int ic_lcms_load(char *error, size_t error_size);

#define IC_TEXT(value) #value
#define IC_VERSION_TEXT(value) IC_TEXT(value)

/// The file `soname` was loaded from (it must be loaded already).
static void loaded_path(const char *soname, char *path, size_t path_size) {
    ic_set_error(path, path_size, "");
    void *handle = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
    if (handle == NULL) return;
    struct link_map *map = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != NULL && map->l_name != NULL) {
        ic_set_error(path, path_size, map->l_name);
    }
    dlclose(handle);
}

/// A function of a loaded library, by name.
static void *loaded_symbol(const char *soname, const char *symbol) {
    void *handle = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
    if (handle == NULL) return NULL;
    void *address = dlsym(handle, symbol);
    dlclose(handle);  // still loaded: the loader keeps its own reference
    return address;
}

int ic_library_describe(int library, char *version, size_t version_size, char *path, size_t path_size) {
    char error[256] = "";
    ic_set_error(path, path_size, "");
    switch (library) {
    case IC_LIBRARY_CURL: {
        if (ic_curl_load(error, sizeof error) != 0) break;
        const curl_version_info_data *(*info)(CURLversion) =
            (const curl_version_info_data *(*)(CURLversion))loaded_symbol("libcurl.so.4", "curl_version_info");
        const curl_version_info_data *data = info ? info(CURLVERSION_NOW) : NULL;
        if (data == NULL) { ic_set_error(error, sizeof error, "curl_version_info missing"); break; }
        snprintf(version, version_size, "%s (%s%s)", data->version, data->ssl_version ? data->ssl_version : "no TLS",
                 (data->features & CURL_VERSION_HTTP2) ? ", HTTP/2" : "");
        loaded_path("libcurl.so.4", path, path_size);
        return 0;
    }
    case IC_LIBRARY_CRYPTO: {
        if (ic_crypto_load(error, sizeof error) != 0) break;
        const char *(*text)(int) = (const char *(*)(int))loaded_symbol("libcrypto.so.3", "OpenSSL_version");
        snprintf(version, version_size, "%s", text ? text(0) : "OpenSSL");
        loaded_path("libcrypto.so.3", path, path_size);
        return 0;
    }
    case IC_LIBRARY_PNG: {
        if (ic_png_load(error, sizeof error) != 0) break;
        const char *(*text)(void *) = (const char *(*)(void *))loaded_symbol("libpng16.so.16", "png_get_libpng_ver");
        snprintf(version, version_size, "%s", text ? text(NULL) : "1.6");
        loaded_path("libpng16.so.16", path, path_size);
        return 0;
    }
    case IC_LIBRARY_JPEG:
        if (ic_jpeg_load(error, sizeof error) != 0) break;
        // libjpeg-turbo 2.1 has no version call: the headers', and the ABI its soname names.
        snprintf(version, version_size, "libjpeg-turbo %s (headers), ABI 6.2", IC_VERSION_TEXT(LIBJPEG_TURBO_VERSION));
        loaded_path("libjpeg.so.62", path, path_size);
        return 0;
    case IC_LIBRARY_WEBP: {
        if (ic_webp_load(error, sizeof error) != 0) break;
        int (*number)(void) = (int (*)(void))loaded_symbol("libwebp.so.7", "WebPGetDecoderVersion");
        int value = number ? number() : 0;
        snprintf(version, version_size, "%d.%d.%d with demux and mux", (value >> 16) & 0xff, (value >> 8) & 0xff, value & 0xff);
        loaded_path("libwebp.so.7", path, path_size);
        return 0;
    }
    case IC_LIBRARY_GIF:
        if (ic_gif_load(error, sizeof error) != 0) break;
        snprintf(version, version_size, "%d.%d.%d (headers)", GIFLIB_MAJOR, GIFLIB_MINOR, GIFLIB_RELEASE);
        loaded_path("libgif.so.7", path, path_size);
        return 0;
    case IC_LIBRARY_HIREDIS:
        if (ic_redis_load(error, sizeof error) != 0) break;
        snprintf(version, version_size, "%d.%d.%d (headers)", HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH);
        loaded_path("libhiredis.so." IC_VERSION_TEXT(HIREDIS_SONAME), path, path_size);
        return 0;
    case IC_LIBRARY_AVIF: {
        const char *text = ic_avif_version();
        if (text == NULL) { ic_avif_load(error, sizeof error); break; }
        snprintf(version, version_size, "%s", text);
        loaded_path("libavif.so.15", path, path_size);
        return 0;
    }
    case IC_LIBRARY_HEIF: {
        const char *text = ic_heif_version();
        if (text == NULL) { ic_heif_load(error, sizeof error); break; }
        snprintf(version, version_size, "%s", text);
        loaded_path("libheif.so.1", path, path_size);
        return 0;
    }
    case IC_LIBRARY_JXL: {
        uint32_t value = ic_jxl_version();
        if (value == 0) { ic_jxl_load(error, sizeof error); break; }
        snprintf(version, version_size, "%u.%u.%u", value / 1000000, value / 1000 % 1000, value % 1000);
        loaded_path("libjxl.so.0.7", path, path_size);
        return 0;
    }
    case IC_LIBRARY_TIFF: {
        const char *text = ic_tiff_version();
        if (text == NULL) { ic_tiff_load(error, sizeof error); break; }
        // "LIBTIFF, Version 4.5.0\nCopyright ...": the first line's version.
        const char *number = strstr(text, "Version ");
        size_t length = number ? strcspn(number + 8, "\n") : 0;
        snprintf(version, version_size, "%.*s", (int)length, number ? number + 8 : "");
        loaded_path("libtiff.so.6", path, path_size);
        return 0;
    }
    case IC_LIBRARY_RSVG: {
        const char *text = ic_rsvg_version();
        if (text == NULL) { ic_rsvg_load(error, sizeof error); break; }
        snprintf(version, version_size, "%s", text);
        loaded_path("librsvg-2.so.2", path, path_size);
        return 0;
    }
    case IC_LIBRARY_LCMS: {
        int value = ic_lcms_version();
        if (value == 0) { ic_lcms_load(error, sizeof error); break; }
        snprintf(version, version_size, "%d.%d", value / 1000, value % 1000 / 10);
        loaded_path("liblcms2.so.2", path, path_size);
        return 0;
    }
    default:
        ic_set_error(error, sizeof error, "no such library");
    }
    ic_set_error(version, version_size, error);
    return -1;
}
