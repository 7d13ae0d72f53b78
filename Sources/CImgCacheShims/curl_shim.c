// libcurl through a dlopen'd function table.
#define CURL_DISABLE_TYPECHECK 1
#include "imgcache_shims.h"
#include "loader.h"

#include <errno.h>
#include <pthread.h>
#include <sys/socket.h>
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
    IC_OPEN_AND_RESOLVE(curl, "libcurl4-openssl-dev", IC_CURL_FUNCTIONS, "libcurl.so.4", "libcurl.so")
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

// libcurl keeps no errno when socket() fails: a process out of descriptors would look like a
// host that refuses connections. The socket is opened here instead, and the errno kept.
static curl_socket_t ic_curl_open_socket(void *user, curlsocktype purpose, struct curl_sockaddr *address) {
    (void)purpose;
    int *failure = user;
    curl_socket_t socket_fd = socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
    *failure = socket_fd == CURL_SOCKET_BAD ? errno : 0;
    return socket_fd;
}

CURLcode ic_curl_easy_keep_socket_errno(CURL *handle, int *failure) {
    *failure = 0;
    CURLcode code = p_curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, ic_curl_open_socket);
    return code == CURLE_OK ? p_curl_easy_setopt(handle, CURLOPT_OPENSOCKETDATA, (void *)failure) : code;
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
