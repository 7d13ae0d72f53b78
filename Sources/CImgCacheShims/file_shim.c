// Extended attributes and open-file-description locks, for the disk cache.
#define _GNU_SOURCE
#include "imgcache_shims.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <unistd.h>

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

// The counters' mappings, so that a SIGBUS in one (the file cut short under it by
// another program) is recognised: the range becomes private zeros and the mapping is
// marked lost, instead of the process dying. At most this many mappings are watched;
// more are refused (the caller then keeps no counters).
#define IC_WATCHED_MAPPINGS 64
static struct {
    _Atomic(uintptr_t) start;
    size_t length;
    volatile sig_atomic_t lost;
} watched[IC_WATCHED_MAPPINGS];
static atomic_int watched_count;
static pthread_mutex_t watched_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction previous_bus_action;

static void on_bus_error(int number, siginfo_t *info, void *context) {
    (void)number;
    (void)context;
    uintptr_t address = (uintptr_t)info->si_addr;
    int count = atomic_load(&watched_count);
    for (int index = 0; index < count; index++) {
        uintptr_t start = atomic_load(&watched[index].start);
        if (start != 0 && address >= start && address < start + watched[index].length) {
            // The faulting instruction runs again on the zeros; the counters are given up.
            mmap((void *)start, watched[index].length, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            watched[index].lost = 1;
            return;
        }
    }
    // Not a counter: the fault happens again under the disposition there was before.
    sigaction(SIGBUS, &previous_bus_action, NULL);
}

static void install_bus_handler(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_bus_error;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    sigaction(SIGBUS, &action, &previous_bus_action);
}

static int watch_mapping(void *start, size_t length) {
    static pthread_once_t installed = PTHREAD_ONCE_INIT;
    pthread_once(&installed, install_bus_handler);
    pthread_mutex_lock(&watched_lock);
    int count = atomic_load(&watched_count), index = 0;
    // A slot given back by ic_unmap_counters first, else a new one.
    while (index < count && atomic_load(&watched[index].start) != 0) index++;
    if (index < IC_WATCHED_MAPPINGS) {
        long page = sysconf(_SC_PAGESIZE);
        watched[index].length = (length + (size_t)page - 1) / (size_t)page * (size_t)page;
        watched[index].lost = 0;
        atomic_store(&watched[index].start, (uintptr_t)start);
        if (index == count) atomic_store(&watched_count, count + 1);
    }
    pthread_mutex_unlock(&watched_lock);
    return index < IC_WATCHED_MAPPINGS;
}

void ic_unmap_counters(uint64_t *counters, size_t count) {
    pthread_mutex_lock(&watched_lock);
    int watched_now = atomic_load(&watched_count);
    for (int index = 0; index < watched_now; index++) {
        if (atomic_load(&watched[index].start) == (uintptr_t)counters) atomic_store(&watched[index].start, 0);
    }
    pthread_mutex_unlock(&watched_lock);
    munmap(counters, count * sizeof(uint64_t));
}

int ic_counters_lost(const uint64_t *counters) {
    int count = atomic_load(&watched_count);
    for (int index = 0; index < count; index++) {
        if (atomic_load(&watched[index].start) == (uintptr_t)counters) return watched[index].lost != 0;
    }
    return 1;
}

uint64_t *ic_map_counters(int descriptor, size_t count) {
    struct statfs system;
    if (fstatfs(descriptor, &system) != 0) return NULL;
    switch ((unsigned long)system.f_type) {
    case 0x6969UL:      // NFS
    case 0xFF534D42UL:  // CIFS
    case 0xFE534D42UL:  // SMB2
    case 0x517BUL:      // SMB
    case 0x65735546UL:  // FUSE
    case 0x01021997UL:  // 9P
    case 0x5346414FUL:  // AFS
    case 0x00C36400UL:  // Ceph
        errno = EOPNOTSUPP;
        return NULL;
    }
    size_t bytes = count * sizeof(uint64_t);
    struct stat info;
    if (fstat(descriptor, &info) != 0) return NULL;
    // Growing only: two processes growing it at once both leave it this long.
    if ((size_t)info.st_size < bytes && ftruncate(descriptor, (off_t)bytes) != 0) return NULL;
    void *mapped = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0);
    if (mapped == MAP_FAILED) return NULL;
    if (!watch_mapping(mapped, bytes)) {
        munmap(mapped, bytes);
        errno = ENOMEM;
        return NULL;
    }
    return (uint64_t *)mapped;
}

uint64_t ic_counter_load(const uint64_t *counters, size_t index) {
    return __atomic_load_n(&counters[index], __ATOMIC_SEQ_CST);
}

uint64_t ic_counter_advance(uint64_t *counters, size_t index) {
    return __atomic_fetch_add(&counters[index], 1, __ATOMIC_SEQ_CST);
}

int ic_open_beneath(int directory, const char *path, int flags) {
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = (unsigned long long)flags;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH;
    return (int)syscall(SYS_openat2, directory, path, &how, sizeof how);
}
