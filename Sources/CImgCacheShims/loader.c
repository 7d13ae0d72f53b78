#include "loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

void ic_set_error(char *error, size_t error_size, const char *message) {
    if (error == NULL || error_size == 0) return;
    snprintf(error, error_size, "%s", message ? message : "unknown error");
}

void *ic_open_library(const char *const *sonames, const char *package,
                      char *error, size_t error_size) {
    int no_room = 0, no_descriptor = 0;
    for (const char *const *name = sonames; *name != NULL; name++) {
        void *library = dlopen(*name, RTLD_NOW | RTLD_LOCAL);
        if (library != NULL) return library;
        // Installed, but no address space left to map it, or no descriptor to open it with: a
        // limit, not a missing package.
        const char *why = dlerror();
        if (why != NULL && (strstr(why, "map segment") != NULL || strstr(why, "allocate memory") != NULL)) no_room = 1;
        if (why != NULL && strstr(why, "Too many open files") != NULL) no_descriptor = 1;
    }
    if (error != NULL && error_size > 0) {
        if (no_descriptor) {
            snprintf(error, error_size, "cannot load %s: too many open files (ulimit -n)", sonames[0]);
        } else if (no_room) {
            snprintf(error, error_size, "cannot load %s: no address space left to map it (ulimit -v)", sonames[0]);
        } else {
            snprintf(error, error_size, "cannot load %s (install the %s package)", sonames[0], package);
        }
    }
    return NULL;
}

void *ic_resolve(void *library, const char *symbol, char *error, size_t error_size) {
    void *address = dlsym(library, symbol);
    if (address == NULL && error != NULL && error_size > 0) {
        snprintf(error, error_size, "symbol %s missing from a loaded library", symbol);
    }
    return address;
}
