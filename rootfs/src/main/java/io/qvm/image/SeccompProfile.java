package io.qvm.image;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;

/**
 * The worker's {@code linux.seccomp} in the OCI config: deny by default, allow what the worker
 * JVM needs. runsc enforces it inside the sandbox (its {@code --oci-seccomp} flag, which the init
 * passes), on top of gVisor's own filters on the sentry.
 *
 * <p>Where the list comes from: every system call the worker JVM made on a host while it served
 * the renderer's protocol, render and hostile-corpus tests ({@code strace -f} of the child JVM of
 * {@code HostileCorpusTest}, {@code MainRenderProtocolTest} and {@code MainProtocolTest}: 57
 * distinct calls), widened by their siblings that glibc and HotSpot choose between at run time
 * (e.g. {@code poll}/{@code ppoll}, {@code stat}/{@code newfstatat}/{@code statx},
 * {@code clone}/{@code clone3}) so a different code path does not fail. A name the sandbox's
 * architecture does not have is ignored by runsc.
 *
 * <p>What it leaves out on purpose: process creation other than threads ({@code fork},
 * {@code vfork}; {@code clone3} cannot be filtered by flags and is what glibc creates threads
 * with), signals to other processes ({@code kill}), tracing ({@code ptrace},
 * {@code process_vm_*}), namespaces and mounts ({@code unshare}, {@code setns}, {@code mount},
 * {@code pivot_root}, {@code chroot}), keys, {@code bpf}, {@code perf_event_open},
 * {@code userfaultfd}, {@code io_uring_*}, modules and {@code kexec}, and sockets other than
 * {@code AF_UNIX} (the JDK needs a socket pair; a network socket has no use here, and runsc's
 * {@code --network=none} gives it nowhere to go anyway). A denied call fails with
 * {@code EPERM}.
 */
public final class SeccompProfile {

    /** {@code AF_UNIX}: the only socket family the worker may create. */
    static final int AF_UNIX = 1;

    /** The calls allowed with any arguments. */
    public static final List<String> ALLOWED = List.of(
            // memory
            "brk", "madvise", "mincore", "mmap", "mprotect", "mremap", "msync", "munmap",
            // threads, scheduling and time
            "arch_prctl", "clock_getres", "clock_gettime", "clock_nanosleep", "clone", "clone3", "exit",
            "exit_group", "futex", "get_robust_list", "getcpu", "gettimeofday", "nanosleep", "prctl",
            "restart_syscall", "rseq", "sched_getaffinity", "sched_getparam", "sched_getscheduler",
            "sched_yield", "set_robust_list", "set_tid_address", "time",
            // signals, to itself
            "rt_sigaction", "rt_sigpending", "rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn",
            "rt_sigsuspend", "rt_sigtimedwait", "sigaltstack", "tgkill", "tkill",
            // identity and limits
            "getegid", "geteuid", "getgid", "getgroups", "getpid", "getppid", "getrandom", "getresgid",
            "getresuid", "getrlimit", "getrusage", "gettid", "getuid", "prlimit64", "sysinfo", "times",
            "umask", "uname",
            // files (the root is read-only; only /tmp is writable)
            "access", "chdir", "close", "close_range", "copy_file_range", "dup", "dup2", "dup3", "faccessat",
            "faccessat2", "fadvise64", "fallocate", "fchdir", "fchmod", "fchmodat", "fcntl", "fdatasync",
            "flock", "fstat", "fstatfs", "fsync", "ftruncate", "getcwd", "getdents", "getdents64", "ioctl",
            "lseek", "lstat", "mkdir", "mkdirat", "newfstatat", "open", "openat", "pread64", "preadv",
            "preadv2", "pwrite64", "pwritev", "pwritev2", "read", "readlink", "readlinkat", "readv",
            "rename", "renameat", "renameat2", "rmdir", "sendfile", "stat", "statfs", "statx", "unlink",
            "unlinkat", "utimensat", "write", "writev",
            // waiting on descriptors, pipes
            "epoll_create", "epoll_create1", "epoll_ctl", "epoll_pwait", "epoll_wait", "eventfd2", "pipe",
            "pipe2", "poll", "ppoll", "pselect6", "select",
            // the JDK's socket pair and glibc's name-service probes, on AF_UNIX sockets only
            "connect", "getpeername", "getsockname", "getsockopt", "recvfrom", "recvmsg", "sendmsg",
            "sendto", "setsockopt", "shutdown", "socketpair",
            // the container's process itself is exec'd under the filter
            "execve");

    /** Calls the worker must never make, checked by the tests against {@link #ALLOWED}. */
    public static final List<String> NEVER = List.of(
            "add_key", "bpf", "chroot", "delete_module", "finit_module", "fork", "init_module",
            "io_uring_enter", "io_uring_register", "io_uring_setup", "kexec_file_load", "kexec_load",
            "keyctl", "kill", "mount", "move_mount", "open_by_handle_at", "perf_event_open", "personality",
            "pivot_root", "process_vm_readv", "process_vm_writev", "ptrace", "reboot", "request_key",
            "setns", "swapon", "umount2", "unshare", "userfaultfd", "vfork", "bind", "listen", "accept",
            "accept4");

    private SeccompProfile() {
    }

    /** Adds {@code seccomp} to the OCI config's {@code linux} object. */
    static void addTo(ObjectNode linux) {
        ObjectNode seccomp = linux.putObject("seccomp");
        seccomp.put("defaultAction", "SCMP_ACT_ERRNO");
        ArrayNode archs = seccomp.putArray("architectures");
        archs.add("SCMP_ARCH_X86_64");
        archs.add("SCMP_ARCH_AARCH64");
        ArrayNode syscalls = seccomp.putArray("syscalls");
        ObjectNode allow = syscalls.addObject();
        ArrayNode names = allow.putArray("names");
        ALLOWED.forEach(names::add);
        allow.put("action", "SCMP_ACT_ALLOW");
        ObjectNode socket = syscalls.addObject();
        socket.putArray("names").add("socket");
        socket.put("action", "SCMP_ACT_ALLOW");
        ObjectNode unixOnly = socket.putArray("args").addObject();
        unixOnly.put("index", 0);
        unixOnly.put("value", AF_UNIX);
        unixOnly.put("op", "SCMP_CMP_EQ");
    }
}
