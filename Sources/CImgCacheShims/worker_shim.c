// Decode workers: what starting, feeding, limiting and confining a worker
// process needs and Swift cannot reach: posix_spawn's file actions (closefrom
// among them), file descriptors passed in SCM_RIGHTS messages, prlimit on
// another process, prctl, memfd_create, a crash reported from a signal
// handler, and the system-call filter through libseccomp (loaded on first use
// like every other library).
#define _GNU_SOURCE
#include "imgcache_shims.h"
#include "loader.h"

#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <malloc.h>
#include <sched.h>

#define IC_SECCOMP_FUNCTIONS(X)                                                                       \
    X(scmp_filter_ctx, seccomp_init, (uint32_t))                                                      \
    X(void, seccomp_release, (scmp_filter_ctx))                                                       \
    X(int, seccomp_rule_add_array, (scmp_filter_ctx, uint32_t, int, unsigned int, const struct scmp_arg_cmp *)) \
    X(int, seccomp_syscall_resolve_name, (const char *))                                              \
    X(int, seccomp_attr_set, (scmp_filter_ctx, enum scmp_filter_attr, uint32_t))                      \
    X(int, seccomp_load, (const scmp_filter_ctx))

IC_LIBRARY(seccomp, "libseccomp2", IC_SECCOMP_FUNCTIONS, "libseccomp.so.2", "libseccomp.so")

int ic_worker_spawn(const char *path, char *const argv[], char *const envp[], int channel, int output, int32_t *pid) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int status = posix_spawn_file_actions_init(&actions);
    if (status != 0) return status;
    status = posix_spawnattr_init(&attributes);
    if (status != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return status;
    }
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    // The worker's descriptors: nothing to read, the channel as 3, both outputs into the capture
    // pipe, and nothing else of imgcache's (sockets, the lock file, the cache folder) at all.
    if ((status = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)) == 0 &&
        (status = posix_spawn_file_actions_adddup2(&actions, channel, 3)) == 0 &&
        (status = posix_spawn_file_actions_adddup2(&actions, output, 1)) == 0 &&
        (status = posix_spawn_file_actions_adddup2(&actions, output, 2)) == 0 &&
        (status = posix_spawn_file_actions_addclosefrom_np(&actions, 4)) == 0 &&
        // Its own process group: a terminal's ^C reaches imgcache, which ends its workers itself.
        (status = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                                            POSIX_SPAWN_SETPGROUP)) == 0 &&
        (status = posix_spawnattr_setsigmask(&attributes, &none)) == 0 &&
        (status = posix_spawnattr_setsigdefault(&attributes, &all)) == 0 &&
        (status = posix_spawnattr_setpgroup(&attributes, 0)) == 0) {
        pid_t child = 0;
        status = posix_spawn(&child, path, &actions, &attributes, argv, envp);
        if (status == 0) *pid = child;
    }
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    return status;
}

int ic_socket_pair(int descriptors[2]) {
    return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, descriptors) == 0 ? 0 : errno;
}

int ic_pipe(int descriptors[2]) {
    return pipe2(descriptors, O_CLOEXEC) == 0 ? 0 : errno;
}

int ic_memfd(const char *name) {
    int descriptor = memfd_create(name, MFD_CLOEXEC);
    return descriptor >= 0 ? descriptor : -errno;
}

int64_t ic_message_send(int socket, const void *bytes, size_t size, const int *descriptors, int count) {
    struct iovec vector = {(void *)bytes, size};
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    char control[CMSG_SPACE(sizeof(int) * 4)];
    if (count > 4) return -EINVAL;
    if (count > 0) {
        memset(control, 0, sizeof control);
        message.msg_control = control;
        message.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)count);
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)count);
        memcpy(CMSG_DATA(header), descriptors, sizeof(int) * (size_t)count);
    }
    ssize_t sent;
    do sent = sendmsg(socket, &message, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    return sent < 0 ? -errno : sent;
}

int64_t ic_message_receive(int socket, void *buffer, size_t size, int *descriptors, int capacity, int *count) {
    struct iovec vector = {buffer, size};
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    char control[CMSG_SPACE(sizeof(int) * 4)];
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    *count = 0;
    ssize_t received;
    do received = recvmsg(socket, &message, MSG_CMSG_CLOEXEC);
    while (received < 0 && errno == EINTR);
    if (received < 0) return -errno;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header != NULL; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        int given = (int)((header->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        int *passed = (int *)CMSG_DATA(header);
        for (int index = 0; index < given; index++) {
            // More than asked for: closed, never left open unseen.
            if (*count < capacity) descriptors[(*count)++] = passed[index];
            else close(passed[index]);
        }
    }
    // A message cut short (larger than the buffer) is refused as a whole.
    if (message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) return -EMSGSIZE;
    return received;
}

int ic_limit_process(int32_t pid, int resource, uint64_t soft) {
    struct rlimit current;
    if (prlimit(pid, resource, NULL, &current) != 0) return errno;
    struct rlimit wanted = current;
    wanted.rlim_cur = soft == UINT64_MAX || (current.rlim_max != RLIM_INFINITY && soft > current.rlim_max) ? current.rlim_max : soft;
    return prlimit(pid, resource, &wanted, NULL) == 0 ? 0 : errno;
}

int ic_limit_names(int which) {
    switch (which) {
    case 0: return RLIMIT_AS;
    case 1: return RLIMIT_CPU;
    default: return -1;
    }
}

uint64_t ic_own_limit(int resource, int hard) {
    struct rlimit current;
    if (getrlimit(resource, &current) != 0) return UINT64_MAX;
    rlim_t value = hard ? current.rlim_max : current.rlim_cur;
    return value == RLIM_INFINITY ? UINT64_MAX : value;
}

int ic_fit_address_space(void) {
    if (ic_own_limit(RLIMIT_AS, 0) == UINT64_MAX) return 0;
    // glibc gives each thread that allocates an arena reserving 64 MiB of address space: under a
    // ulimit -v a handful of threads would take it all before any real allocation.
    return mallopt(M_ARENA_MAX, 2) == 1 ? 1 : 0;
}

uint64_t ic_address_space(int32_t pid) {
    // statm's first number: the pages mapped (what RLIMIT_AS counts).
    char path[64];
    if (pid == 0) snprintf(path, sizeof path, "/proc/self/statm");
    else snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
    int descriptor = open(path, O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) return 0;
    char text[128];
    ssize_t count = read(descriptor, text, sizeof text - 1);
    close(descriptor);
    if (count <= 0) return 0;
    text[count] = 0;
    return strtoull(text, NULL, 10) * (uint64_t)sysconf(_SC_PAGESIZE);
}

uint64_t ic_cpu_milliseconds(void) {
    struct rusage usage;
    if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
    return (uint64_t)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000 +
           (uint64_t)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1000;
}

uint64_t ic_rusage_max_rss(void) {
    struct rusage usage;
    if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
    return (uint64_t)usage.ru_maxrss * 1024;
}

void ic_worker_keep_memory(void) {
    // One job after another allocates the same buffers: kept between jobs rather than given back
    // and faulted in again, a page at a time, for every image (the address-space limit and the
    // worker's replacement after growing bound what is kept).
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

// MARK: - In the worker

static int crash_channel = -1;

/// A fatal signal told to imgcache before the worker dies of it, with errno as it was (ENOMEM
/// after an allocation the address-space limit refused): a message is all a handler may send.
static void report_crash(int number) {
    int saved = errno;
    char text[48];
    int length = snprintf(text, sizeof text, "crash %d %d\n", number, saved);
    if (crash_channel >= 0 && length > 0) send(crash_channel, text, (size_t)length, MSG_NOSIGNAL);
    signal(number, SIG_DFL);
    raise(number);
}

void ic_worker_report_crashes(int channel) {
    crash_channel = channel;
    static char stack[64 * 1024];
    stack_t alternate = {.ss_sp = stack, .ss_size = sizeof stack, .ss_flags = 0};
    sigaltstack(&alternate, NULL);
    const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGABRT, SIGFPE, SIGTRAP, SIGXCPU};
    for (size_t index = 0; index < sizeof fatal / sizeof fatal[0]; index++) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_handler = report_crash;
        action.sa_flags = SA_ONSTACK | SA_RESETHAND;
        sigemptyset(&action.sa_mask);
        sigaction(fatal[index], &action, NULL);
    }
}

/// A rule of the filter, by the system call's name (names the running kernel's architecture
/// does not have are skipped).
static int add_rule(scmp_filter_ctx filter, uint32_t action, const char *name, unsigned count,
                    const struct scmp_arg_cmp *comparisons) {
    int number = p_seccomp_syscall_resolve_name(name);
    if (number == __NR_SCMP_ERROR) return 0;
    return p_seccomp_rule_add_array(filter, action, number, count, comparisons);
}

int ic_worker_confine(int32_t parent, char *error, size_t error_size) {
    // Dies with imgcache: the parent's end is watched from the first instruction that can.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != parent) {
        ic_set_error(error, error_size, "its parent is gone");
        return -1;
    }
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    // One job at a time: two malloc arenas are plenty, and each further one would reserve 64 MiB
    // of the address space its limit counts.
    mallopt(M_ARENA_MAX, 2);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        ic_set_error(error, error_size, "cannot set no_new_privs");
        return -1;
    }
    if (ic_seccomp_load(error, error_size) != 0) return -1;
    // What a decoder never needs, allowed otherwise: listing what a decoder may do instead would
    // fail on every library's next version. Other architectures' calls (an i386 int 0x80) kill.
    scmp_filter_ctx filter = p_seccomp_init(SCMP_ACT_ALLOW);
    if (filter == NULL) {
        ic_set_error(error, error_size, "libseccomp cannot make a filter");
        return -1;
    }
    int status = p_seccomp_attr_set(filter, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    const uint32_t kill = SCMP_ACT_KILL_PROCESS, refuse = SCMP_ACT_ERRNO(EACCES), absent = SCMP_ACT_ERRNO(ENOSYS);
    // No network, no programs, no other processes, no kernel surfaces an image has no use for.
    static const char *const killed[] = {
        "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "execve", "execveat", "fork", "vfork",
        "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_open", "pidfd_getfd", "pidfd_send_signal", "tkill",
        "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "bpf", "perf_event_open", "keyctl", "add_key",
        "request_key", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "kexec_load",
        "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff", "acct",
        "settimeofday", "clock_settime", "sethostname", "setdomainname", "iopl", "ioperm", "kcmp", "process_madvise",
        "name_to_handle_at", "open_by_handle_at", "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid",
        "setgroups", "setfsuid", "setfsgid", "quotactl", "syslog",
        "vhangup", "mknod", "mknodat", "memfd_secret", "landlock_create_ruleset", NULL};
    for (const char *const *name = killed; status == 0 && *name != NULL; name++) status = add_rule(filter, kill, *name, 0, NULL);
    // Nothing written by name: a library that tries (fontconfig's cache) is told no and goes on.
    static const char *const refused[] = {
        "creat", "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename", "renameat", "renameat2", "link", "linkat",
        "symlink", "symlinkat", "chmod", "fchmodat", "chown", "lchown", "fchownat", "truncate", "utime", "utimes",
        "utimensat", "futimesat", "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
        "setrlimit", "setpriority", "sched_setscheduler", "sched_setparam", "sched_setaffinity", "shmget", "msgget",
        "semget", "fanotify_init", "inotify_init", "inotify_init1", NULL};
    for (const char *const *name = refused; status == 0 && *name != NULL; name++) status = add_rule(filter, refuse, *name, 0, NULL);
    // openat2's flags sit in a structure the filter cannot read: said not to exist, so glibc uses openat.
    if (status == 0) status = add_rule(filter, absent, "openat2", 0, NULL);
    if (status == 0) status = add_rule(filter, absent, "clone3", 0, NULL);
    // Opening for writing, creating or truncating: refused whatever the path.
    const struct {
        const char *name;
        unsigned argument;
    } opens[] = {{"open", 1}, {"openat", 2}};
    for (size_t index = 0; status == 0 && index < 2; index++) {
        const struct scmp_arg_cmp checks[] = {
            {opens[index].argument, SCMP_CMP_MASKED_EQ, O_ACCMODE, O_WRONLY},
            {opens[index].argument, SCMP_CMP_MASKED_EQ, O_ACCMODE, O_RDWR},
            {opens[index].argument, SCMP_CMP_MASKED_EQ, O_CREAT, O_CREAT},
            {opens[index].argument, SCMP_CMP_MASKED_EQ, O_TRUNC, O_TRUNC},
            {opens[index].argument, SCMP_CMP_MASKED_EQ, __O_TMPFILE, __O_TMPFILE},
        };
        for (size_t check = 0; status == 0 && check < sizeof checks / sizeof checks[0]; check++)
            status = add_rule(filter, refuse, opens[index].name, 1, &checks[check]);
    }
    // Threads, never processes: a clone without CLONE_THREAD kills.
    if (status == 0) {
        const struct scmp_arg_cmp process = {0, SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0};
        status = add_rule(filter, kill, "clone", 1, &process);
    }
    // Still ended with imgcache.
    if (status == 0) {
        const struct scmp_arg_cmp death = {0, SCMP_CMP_EQ, PR_SET_PDEATHSIG, 0};
        status = add_rule(filter, refuse, "prctl", 1, &death);
    }
    // Limits stay as imgcache set them (a query, with no new value, is allowed).
    if (status == 0) {
        const struct scmp_arg_cmp setting = {2, SCMP_CMP_NE, 0, 0};
        status = add_rule(filter, refuse, "prlimit64", 1, &setting);
    }
    // Signals only to itself: never to imgcache or its process group.
    pid_t self = getpid();
    const char *const signalling[] = {"kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"};
    for (size_t index = 0; status == 0 && index < 4; index++) {
        const struct scmp_arg_cmp other = {0, SCMP_CMP_NE, (scmp_datum_t)self, 0};
        status = add_rule(filter, kill, signalling[index], 1, &other);
    }
    if (status == 0) status = p_seccomp_load(filter);
    p_seccomp_release(filter);
    if (status != 0) {
        char text[96];
        snprintf(text, sizeof text, "libseccomp cannot load the filter: %s", strerror(-status));
        ic_set_error(error, error_size, text);
        return -1;
    }
    return 0;
}

int ic_worker_attempt(const char *what) {
    if (strcmp(what, "socket") == 0) return socket(AF_INET, SOCK_STREAM, 0) >= 0 ? 0 : -errno;
    if (strcmp(what, "exec") == 0) {
        char *const argv[] = {"true", NULL};
        execve("/bin/true", argv, NULL);
        return -errno;
    }
    if (strcmp(what, "write") == 0) {
        int descriptor = open("imgcache-worker-attempt", O_WRONLY | O_CREAT | O_EXCL, 0600);
        if (descriptor >= 0) {
            close(descriptor);
            unlink("imgcache-worker-attempt");
            return 0;
        }
        return -errno;
    }
    if (strcmp(what, "kill-parent") == 0) return kill(getppid(), 0) == 0 ? 0 : -errno;
    return -EINVAL;
}

int ic_signal_number(int which) {
    switch (which) {
    case 0: return SIGSYS;
    case 1: return SIGXCPU;
    default: return 0;
    }
}
