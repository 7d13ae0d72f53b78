// The libraries of the remote tier, loaded on first use like the others, so
// that a local hit never maps them: libcrypto for SHA-256, hiredis for Redis.
#include <errno.h>
#include "imgcache_shims.h"
#include "loader.h"

#include <hiredis/hiredis.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

// MARK: - libcrypto

#define IC_CRYPTO_FUNCTIONS(X)                                                                   \
    X(const EVP_MD *, EVP_sha256, (void))                                                        \
    X(int, EVP_Digest, (const void *, size_t, unsigned char *, unsigned int *, const EVP_MD *, ENGINE *)) \
    X(EVP_MD_CTX *, EVP_MD_CTX_new, (void))                                                      \
    X(void, EVP_MD_CTX_free, (EVP_MD_CTX *))                                                     \
    X(int, EVP_DigestInit_ex, (EVP_MD_CTX *, const EVP_MD *, ENGINE *))                          \
    X(int, EVP_DigestUpdate, (EVP_MD_CTX *, const void *, size_t))                               \
    X(int, EVP_DigestFinal_ex, (EVP_MD_CTX *, unsigned char *, unsigned int *))

IC_LIBRARY(crypto, "libssl3", IC_CRYPTO_FUNCTIONS, "libcrypto.so.3", "libcrypto.so")

int ic_sha256(const void *data, size_t length, uint8_t digest[32]) {
    unsigned int size = 0;
    return p_EVP_Digest(data, length, digest, &size, p_EVP_sha256(), NULL) == 1 && size == 32 ? 0 : -1;
}

int ic_sha256_file(int fd, uint8_t digest[32]) {
    EVP_MD_CTX *context = p_EVP_MD_CTX_new();
    if (context == NULL) return -1;
    int status = p_EVP_DigestInit_ex(context, p_EVP_sha256(), NULL) == 1 ? 0 : -1;
    unsigned char buffer[65536];
    while (status == 0) {
        ssize_t count = read(fd, buffer, sizeof buffer);
        if (count < 0 && errno == EINTR) continue;
        if (count < 0) status = -1;
        if (count <= 0) break;
        if (p_EVP_DigestUpdate(context, buffer, (size_t)count) != 1) status = -1;
    }
    unsigned int size = 0;
    if (status == 0 && (p_EVP_DigestFinal_ex(context, digest, &size) != 1 || size != 32)) status = -1;
    p_EVP_MD_CTX_free(context);
    return status;
}

// MARK: - hiredis

#define IC_REDIS_FUNCTIONS(X)                                                          \
    X(redisContext *, redisConnectWithTimeout, (const char *, int, const struct timeval)) \
    X(redisContext *, redisConnectUnixWithTimeout, (const char *, const struct timeval))  \
    X(int, redisSetTimeout, (redisContext *, const struct timeval))                       \
    X(int, redisAppendCommandArgv, (redisContext *, int, const char **, const size_t *))  \
    X(int, redisGetReply, (redisContext *, void **))                                      \
    X(void, freeReplyObject, (void *))                                                    \
    X(void, redisFree, (redisContext *))

// Only the version the shim was compiled against: the layouts of
// redisContext and redisReply it reads changed between hiredis 0.14 and 1.x.
#define IC_STRING(value) #value
#define IC_SONAME(version) "libhiredis.so." IC_STRING(version)
IC_LIBRARY(redis, "libhiredis0.14", IC_REDIS_FUNCTIONS, IC_SONAME(HIREDIS_SONAME))
#undef IC_SONAME
#undef IC_STRING

static struct timeval ic_timeval(long milliseconds) {
    struct timeval value = {milliseconds / 1000, (milliseconds % 1000) * 1000};
    return value;
}

static void *ic_redis_checked(redisContext *context, long timeout_ms, char *error, size_t error_size) {
    if (context == NULL) {
        ic_set_error(error, error_size, "cannot allocate a Redis connection");
        return NULL;
    }
    if (context->err != 0) {
        // hiredis reports a connect timeout as the errno of the poll that gave up.
        int timed_out = context->err == REDIS_ERR_IO && (errno == ETIMEDOUT || errno == EAGAIN || errno == EINPROGRESS);
        ic_set_error(error, error_size, timed_out ? "timed out" : context->errstr);
        p_redisFree(context);
        return NULL;
    }
    p_redisSetTimeout(context, ic_timeval(timeout_ms));
    return context;
}

void *ic_redis_connect_tcp(const char *host, int port, long connect_timeout_ms, long timeout_ms,
                           char *error, size_t error_size) {
    return ic_redis_checked(p_redisConnectWithTimeout(host, port, ic_timeval(connect_timeout_ms)), timeout_ms,
                            error, error_size);
}

void *ic_redis_connect_unix(const char *path, long connect_timeout_ms, long timeout_ms, char *error, size_t error_size) {
    return ic_redis_checked(p_redisConnectUnixWithTimeout(path, ic_timeval(connect_timeout_ms)), timeout_ms,
                            error, error_size);
}

void ic_redis_free(void *context) { p_redisFree(context); }

int ic_redis_fd(void *context) { return (int)((redisContext *)context)->fd; }

int ic_redis_append(void *context, int argc, const char **argv, const size_t *lengths) {
    return p_redisAppendCommandArgv(context, argc, argv, lengths) == REDIS_OK ? 0 : -1;
}

void *ic_redis_reply(void *context, ic_redis_value *value, char *error, size_t error_size) {
    void *reply = NULL;
    if (p_redisGetReply(context, &reply) != REDIS_OK || reply == NULL) {
        int saved = errno;
        redisContext *connection = context;
        // A read past the socket's timeout fails with EAGAIN, which hiredis words as "Resource temporarily unavailable".
        int timed_out = connection->err == REDIS_ERR_IO && (saved == EAGAIN || saved == EWOULDBLOCK);
        ic_set_error(error, error_size, timed_out ? "timed out" : connection->err != 0 ? connection->errstr : "no reply");
        return NULL;
    }
    const redisReply *parsed = reply;
    value->type = parsed->type;
    value->integer = parsed->integer;
    value->bytes = parsed->str;
    value->length = parsed->len;
    return reply;
}

void ic_redis_free_reply(void *reply) { p_freeReplyObject(reply); }
