// Extended attributes and open-file-description locks, for the disk cache.
#define _GNU_SOURCE
#include "imgcache_shims.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/xattr.h>

long ic_get_attribute(const char *path, const char *name, void *value, size_t size) {
    return (long)lgetxattr(path, name, value, size);
}

int ic_set_attribute(const char *path, const char *name, const void *value, size_t size) {
    return lsetxattr(path, name, value, size, 0);
}

int ic_supports_attributes(const char *path) {
    char byte;
    if (lgetxattr(path, "user.imgcache.probe", &byte, 1) >= 0) return 1;
    return errno == ENODATA || errno == ERANGE;
}

static int set_lock(int descriptor, long index, short type, int command) {
    struct flock lock;
    memset(&lock, 0, sizeof lock);
    lock.l_type = type;
    lock.l_whence = SEEK_SET;
    lock.l_start = index;
    lock.l_len = 1;
    // One attempt: a wait a signal interrupts is taken up again by the caller.
    return fcntl(descriptor, command, &lock);
}

int ic_lock_byte(int descriptor, long index, int exclusive, int wait) {
    return set_lock(descriptor, index, exclusive ? F_WRLCK : F_RDLCK, wait ? F_OFD_SETLKW : F_OFD_SETLK);
}

int ic_unlock_byte(int descriptor, long index) {
    return set_lock(descriptor, index, F_UNLCK, F_OFD_SETLK);
}

int ic_range_locked_by_others(int descriptor, long start, long length) {
    struct flock lock;
    memset(&lock, 0, sizeof lock);
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    lock.l_start = start;
    lock.l_len = length;
    // F_OFD_GETLK reports a lock that would conflict: another open file's, never this one's.
    if (fcntl(descriptor, F_OFD_GETLK, &lock) != 0) return -1;
    return lock.l_type != F_UNLCK;
}
