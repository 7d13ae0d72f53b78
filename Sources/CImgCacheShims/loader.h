// Internal: a tiny dlopen helper shared by the shim's library tables.
#ifndef IMGCACHE_LOADER_H
#define IMGCACHE_LOADER_H

#include <stddef.h>

/// Opens the first of `sonames` (NULL-terminated) that loads. On failure writes
/// a message naming `package` into `error` and returns NULL.
void *ic_open_library(const char *const *sonames, const char *package,
                      char *error, size_t error_size);

/// Resolves `symbol` in `library`; on failure writes a message and returns NULL.
void *ic_resolve(void *library, const char *symbol, char *error, size_t error_size);

/// Copies `message` into `error` (truncating, always NUL-terminated).
void ic_set_error(char *error, size_t error_size, const char *message);

#endif
