// libcurl through a dlopen'd function table.
#define CURL_DISABLE_TYPECHECK 1
#include "imgcache_shims.h"
#include "loader.h"

#include <errno.h>
#include <pthread.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

// Each entry: return type, name, parameter list. Variadic ones are called with
// exactly one trailing argument of the type the wrapper names.
#define IC_CURL_FUNCTIONS(X)                                                          \
    X(CURLcode, curl_global_init, (long))                                             \
    X(curl_version_info_data *, curl_version_info, (CURLversion))                     \
    X(CURL *, curl_easy_init, (void))                                                 \
    X(void, curl_easy_cleanup, (CURL *))                                              \
    X(void, curl_easy_reset, (CURL *))                                                \
    X(CURLcode, curl_easy_perform, (CURL *))                                          \
    X(const char *, curl_easy_strerror, (CURLcode))                                   \
    X(CURLcode, curl_easy_setopt, (CURL *, CURLoption, ...))                          \
    X(CURLcode, curl_easy_getinfo, (CURL *, CURLINFO, ...))                           \
    X(struct curl_slist *, curl_slist_append, (struct curl_slist *, const char *))    \
    X(void, curl_slist_free_all, (struct curl_slist *))                               \
    X(CURLM *, curl_multi_init, (void))                                               \
    X(CURLMcode, curl_multi_cleanup, (CURLM *))                                       \
    X(CURLMcode, curl_multi_add_handle, (CURLM *, CURL *))                            \
    X(CURLMcode, curl_multi_remove_handle, (CURLM *, CURL *))                         \
    X(CURLMcode, curl_multi_perform, (CURLM *, int *))                                \
    X(CURLMcode, curl_multi_poll, (CURLM *, struct curl_waitfd *, unsigned, int, int *)) \
    X(CURLMcode, curl_multi_wakeup, (CURLM *))                                        \
    X(CURLMsg *, curl_multi_info_read, (CURLM *, int *))                              \
    X(CURLMcode, curl_multi_setopt, (CURLM *, CURLMoption, ...))                      \
    X(const char *, curl_multi_strerror, (CURLMcode))                                 \
    X(CURLSH *, curl_share_init, (void))                                              \
    X(CURLSHcode, curl_share_setopt, (CURLSH *, CURLSHoption, ...))                   \
    X(CURLSHcode, curl_share_cleanup, (CURLSH *))

IC_CURL_FUNCTIONS(IC_DECLARE_POINTER)

IC_LIBRARY_STATE(curl)

static void curl_load_once(void) {
    IC_OPEN_AND_RESOLVE(curl, "libcurl4", IC_CURL_FUNCTIONS, "libcurl.so.4", "libcurl.so")
    CURLcode code = p_curl_global_init(CURL_GLOBAL_ALL);
    if (code != CURLE_OK) {
        snprintf(curl_load_error, sizeof curl_load_error, "curl_global_init failed: %s",
                 p_curl_easy_strerror(code));
        return;
    }
    curl_loaded = 1;
}

IC_LIBRARY_LOADER(curl)

CURL *ic_curl_easy_init(void) { return p_curl_easy_init(); }
void ic_curl_easy_cleanup(CURL *handle) { p_curl_easy_cleanup(handle); }
void ic_curl_easy_reset(CURL *handle) { p_curl_easy_reset(handle); }
CURLcode ic_curl_easy_perform(CURL *handle) { return p_curl_easy_perform(handle); }
const char *ic_curl_easy_strerror(CURLcode code) { return p_curl_easy_strerror(code); }

const char *ic_curl_version(void) {
    curl_version_info_data *info = p_curl_version_info(CURLVERSION_NOW);
    return info != NULL ? info->version : "unknown";
}

CURLcode ic_curl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return p_curl_easy_setopt(handle, option, value);
}
CURLcode ic_curl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return p_curl_easy_setopt(handle, option, value);
}
CURLcode ic_curl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return p_curl_easy_setopt(handle, option, value);
}
CURLcode ic_curl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return p_curl_easy_setopt(handle, option, value);
}
CURLcode ic_curl_easy_setopt_data_callback(CURL *handle, CURLoption option, ic_curl_data_callback cb) {
    return p_curl_easy_setopt(handle, option, cb);
}
CURLcode ic_curl_easy_setopt_progress_callback(CURL *handle, ic_curl_progress_callback cb) {
    return p_curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, cb);
}

CURLcode ic_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return p_curl_easy_getinfo(handle, info, value);
}
CURLcode ic_curl_easy_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return p_curl_easy_getinfo(handle, info, value);
}
CURLcode ic_curl_easy_getinfo_string(CURL *handle, CURLINFO info, const char **value) {
    return p_curl_easy_getinfo(handle, info, value);
}

struct curl_slist *ic_curl_slist_append(struct curl_slist *list, const char *value) {
    return p_curl_slist_append(list, value);
}
void ic_curl_slist_free_all(struct curl_slist *list) { p_curl_slist_free_all(list); }

// Whether an address is one a service open to the world must not be made to reach: loopback,
// private (RFC 1918, unique local), shared (100.64/10), link-local, multicast, unspecified,
// broadcast or reserved; an IPv4 address inside an IPv6 one (mapped, compatible, NAT64, 6to4)
// counts as itself.
static int ic_ipv4_is_private(const unsigned char *a) {
    if (a[0] == 0 || a[0] == 10 || a[0] == 127) return 1;
    if (a[0] == 100 && (a[1] & 0xc0) == 64) return 1;
    if (a[0] == 169 && a[1] == 254) return 1;
    if (a[0] == 172 && (a[1] & 0xf0) == 16) return 1;
    if (a[0] == 192 && a[1] == 168) return 1;
    if (a[0] == 192 && a[1] == 0 && (a[2] == 0 || a[2] == 2)) return 1;   // IETF assignments, TEST-NET-1
    if (a[0] == 198 && a[1] == 51 && a[2] == 100) return 1;                // TEST-NET-2
    if (a[0] == 203 && a[1] == 0 && a[2] == 113) return 1;                 // TEST-NET-3
    if (a[0] == 192 && a[1] == 88 && a[2] == 99) return 1;                 // 6to4 relays (deprecated)
    if (a[0] == 198 && (a[1] & 0xfe) == 18) return 1;
    if (a[0] >= 224) return 1;
    return 0;
}

int ic_address_is_private(const struct sockaddr *address) {
    if (address->sa_family == AF_INET) {
        return ic_ipv4_is_private((const unsigned char *)&((const struct sockaddr_in *)address)->sin_addr);
    }
    if (address->sa_family != AF_INET6) return 1;
    const unsigned char *a = ((const struct sockaddr_in6 *)address)->sin6_addr.s6_addr;
    static const unsigned char zeros[16] = {0};
    if (memcmp(a, zeros, 10) == 0 && ((a[10] == 0xff && a[11] == 0xff) || (a[10] == 0 && a[11] == 0))) {
        // ::ffff:a.b.c.d and ::a.b.c.d (:: and ::1 among them).
        return ic_ipv4_is_private(a + 12);
    }
    if (a[0] == 0x00 && a[1] == 0x64 && a[2] == 0xff && a[3] == 0x9b) return ic_ipv4_is_private(a + 12);
    // ::ffff:0:a.b.c.d (SIIT) and any other address in ::/8 (reserved): judged as the IPv4 inside, or refused.
    if (a[0] == 0) return 1;
    if (a[0] == 0x20 && a[1] == 0x02) return ic_ipv4_is_private(a + 2);
    if ((a[0] & 0xfe) == 0xfc) return 1;                  // fc00::/7, unique local
    if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) return 1;  // fe80::/10, link-local
    if (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0) return 1;  // fec0::/10, site-local (deprecated)
    if (a[0] == 0xff) return 1;                           // multicast
    if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0d && a[3] == 0xb8) return 1;  // documentation
    return 0;
}

// libcurl keeps no errno when socket() fails: a process out of descriptors would look like a
// host that refuses connections. The socket is opened here instead, and the errno kept. Here
// too, for every connection a transfer makes (each redirect's, after DNS, the address about to
// be connected), an address a guarded transfer must not reach is refused before any byte goes.
static curl_socket_t ic_curl_open_socket(void *user, curlsocktype purpose, struct curl_sockaddr *address) {
    (void)purpose;
    struct ic_socket_guard *guard = user;
    if (guard->refuses_private && ic_address_is_private(&address->addr)) {
        guard->error = 0;
        guard->refused = 1;
        if (address->family == AF_INET) {
            inet_ntop(AF_INET, &((struct sockaddr_in *)&address->addr)->sin_addr, guard->address, sizeof guard->address);
        } else if (address->family == AF_INET6) {
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&address->addr)->sin6_addr, guard->address, sizeof guard->address);
        } else {
            snprintf(guard->address, sizeof guard->address, "an address of family %d", address->family);
        }
        return CURL_SOCKET_BAD;
    }
    curl_socket_t socket_fd = socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
    guard->error = socket_fd == CURL_SOCKET_BAD ? errno : 0;
    return socket_fd;
}

CURLcode ic_curl_easy_guard_sockets(CURL *handle, struct ic_socket_guard *guard) {
    guard->error = 0;
    guard->refused = 0;
    guard->address[0] = 0;
    CURLcode code = p_curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, ic_curl_open_socket);
    return code == CURLE_OK ? p_curl_easy_setopt(handle, CURLOPT_OPENSOCKETDATA, (void *)guard) : code;
}

CURLM *ic_curl_multi_init(void) { return p_curl_multi_init(); }
CURLMcode ic_curl_multi_cleanup(CURLM *multi) { return p_curl_multi_cleanup(multi); }
CURLMcode ic_curl_multi_add_handle(CURLM *multi, CURL *handle) { return p_curl_multi_add_handle(multi, handle); }
CURLMcode ic_curl_multi_remove_handle(CURLM *multi, CURL *handle) { return p_curl_multi_remove_handle(multi, handle); }
CURLMcode ic_curl_multi_perform(CURLM *multi, int *running) { return p_curl_multi_perform(multi, running); }
CURLMcode ic_curl_multi_poll(CURLM *multi, int timeout_ms, int *numfds) {
    return p_curl_multi_poll(multi, NULL, 0, timeout_ms, numfds);
}
CURLMcode ic_curl_multi_wakeup(CURLM *multi) { return p_curl_multi_wakeup(multi); }

int ic_curl_multi_next_done(CURLM *multi, CURL **handle, CURLcode *result) {
    int remaining = 0;
    CURLMsg *message;
    while ((message = p_curl_multi_info_read(multi, &remaining)) != NULL) {
        if (message->msg == CURLMSG_DONE) {
            *handle = message->easy_handle;
            *result = message->data.result;
            return 1;
        }
    }
    return 0;
}

CURLMcode ic_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return p_curl_multi_setopt(multi, option, value);
}
const char *ic_curl_multi_strerror(CURLMcode code) { return p_curl_multi_strerror(code); }

CURLSH *ic_curl_share_init(void) { return p_curl_share_init(); }
CURLSHcode ic_curl_share_setopt_long(CURLSH *share, CURLSHoption option, long value) {
    return p_curl_share_setopt(share, option, value);
}
CURLSHcode ic_curl_share_cleanup(CURLSH *share) { return p_curl_share_cleanup(share); }
