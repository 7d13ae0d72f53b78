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

/// Declares the function pointer `p_name` for one entry `X(ret, name, params)`
/// of a library's function list.
#define IC_DECLARE_POINTER(ret, name, params) static ret(*p_##name) params;

/// Resolves one entry of a function list in the library open as `ic_handle`;
/// returns from the load function (the reason in `ic_error`) when it is missing.
#define IC_RESOLVE_POINTER(ret, name, params)                                     \
    p_##name = (ret(*) params)ic_resolve(ic_handle, #name, ic_error, ic_error_size); \
    if (p_##name == NULL) return;

/// In `NAME_load_once`: opens the first of the sonames given that loads
/// (`package` is the Debian package the error tells to install) and resolves
/// every function of `LIST` in it; returns from the function when either fails.
#define IC_OPEN_AND_RESOLVE(NAME, package, LIST, ...)                                     \
    {                                                                                     \
        static const char *const ic_sonames[] = {__VA_ARGS__, NULL};                      \
        char *ic_error = NAME##_load_error;                                               \
        size_t ic_error_size = sizeof NAME##_load_error;                                  \
        void *ic_handle = ic_open_library(ic_sonames, package, ic_error, ic_error_size); \
        if (ic_handle == NULL) return;                                                    \
        LIST(IC_RESOLVE_POINTER)                                                          \
    }

#define IC_LIBRARY_LOADER(NAME)                                    \
    int ic_##NAME##_load(char *error, size_t error_size) {         \
        pthread_once(&NAME##_once, NAME##_load_once);              \
        if (NAME##_loaded) return 0;                               \
        ic_set_error(error, error_size, NAME##_load_error);        \
        return -1;                                                 \
    }

/// A library whose functions are those of `LIST`, found under the sonames
/// given: their pointers, and `int ic_NAME_load(char *error, size_t error_size)`.
#define IC_LIBRARY(NAME, package, LIST, ...)                      \
    LIST(IC_DECLARE_POINTER)                                      \
    IC_LIBRARY_STATE(NAME)                                        \
    static void NAME##_load_once(void) {                          \
        IC_OPEN_AND_RESOLVE(NAME, package, LIST, __VA_ARGS__)     \
        NAME##_loaded = 1;                                        \
    }                                                             \
    IC_LIBRARY_LOADER(NAME)

#endif
