// Internal: a tiny dlopen helper shared by the shim's library tables.
#ifndef IMGCACHE_LOADER_H
#define IMGCACHE_LOADER_H

#include <pthread.h>
#include <stddef.h>

/// Opens the first of `sonames` (NULL-terminated) that loads. On failure writes
/// a message naming `package` into `error` and returns NULL.
void *ic_open_library(const char *const *sonames, const char *package,
                      char *error, size_t error_size);

/// Resolves `symbol` in `library`; on failure writes a message and returns NULL.
void *ic_resolve(void *library, const char *symbol, char *error, size_t error_size);

/// Copies `message` into `error` (truncating, always NUL-terminated).
void ic_set_error(char *error, size_t error_size, const char *message);

/// The state of one library's lazily loaded function table: its pthread_once,
/// the text of why loading failed, and whether it succeeded. The caller writes
/// `static void NAME_load_once(void)`, which fills the table and sets
/// `NAME_loaded`; `IC_LIBRARY_LOADER(NAME)` then defines
/// `int ic_NAME_load(char *error, size_t error_size)`: 0 once loaded, else -1
/// with the reason in `error`.
#define IC_LIBRARY_STATE(NAME)                           \
    static pthread_once_t NAME##_once = PTHREAD_ONCE_INIT; \
    static char NAME##_load_error[256];                  \
    static int NAME##_loaded;

#define IC_LIBRARY_LOADER(NAME)                                    \
    int ic_##NAME##_load(char *error, size_t error_size) {         \
        pthread_once(&NAME##_once, NAME##_load_once);              \
        if (NAME##_loaded) return 0;                               \
        ic_set_error(error, error_size, NAME##_load_error);        \
        return -1;                                                 \
    }

#endif
