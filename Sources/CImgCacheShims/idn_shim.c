// International host names: libidn2 (what curl uses) turns one into the form DNS and HTTP
// carry, NFC first and UTS #46's mapping (a full-width dot is a dot), loaded on first use.
#include "imgcache_shims.h"
#include "loader.h"

#include <stdlib.h>
#include <string.h>

// libidn2's flags (idn2.h), declared here: only its shared library is needed, not its headers.
enum { IC_IDN2_NFC_INPUT = 1, IC_IDN2_TRANSITIONAL = 4, IC_IDN2_NONTRANSITIONAL = 8, IC_IDN2_OK = 0 };

#define IC_IDN2_FUNCTIONS(X)                                  \
    X(int, idn2_to_ascii_8z, (const char *, char **, int))    \
    X(void, idn2_free, (void *))

IC_LIBRARY(idn2, "libidn2-0", IC_IDN2_FUNCTIONS, "libidn2.so.0", "libidn2.so")

int ic_idn_to_ascii(const char *host, char *output, size_t output_size, char *error, size_t error_size) {
    if (ic_idn2_load(error, error_size) != 0) return -1;
    char *converted = NULL;
    // As curl does: non-transitional (IDNA2008, `ß` kept), transitional where that refuses.
    int status = p_idn2_to_ascii_8z(host, &converted, IC_IDN2_NFC_INPUT | IC_IDN2_NONTRANSITIONAL);
    if (status != IC_IDN2_OK) status = p_idn2_to_ascii_8z(host, &converted, IC_IDN2_NFC_INPUT | IC_IDN2_TRANSITIONAL);
    if (status != IC_IDN2_OK || converted == NULL) {
        ic_set_error(error, error_size, "not a host name IDNA allows");
        return 1;
    }
    size_t length = strlen(converted);
    if (length + 1 > output_size) {
        p_idn2_free(converted);
        ic_set_error(error, error_size, "the host name is too long");
        return 1;
    }
    memcpy(output, converted, length + 1);
    p_idn2_free(converted);
    return 0;
}
