package io.qvm.image;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.util.DefaultIndenter;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;

/**
 * The OCI runtime spec (1.0) {@code config.json} runsc runs the worker with.
 *
 * <p>What it pins: no terminal; a read-only root; a size-capped, noexec tmpfs on {@code /tmp};
 * user and group 65534 (nobody); every capability set empty; {@code noNewPrivileges}; RLIMIT_NOFILE
 * and RLIMIT_NPROC; new pid, ipc, uts, mount and network namespaces (runsc also runs with
 * {@code --network=none}, so the sandbox has a loopback device at most); a deny-by-default
 * {@code linux.seccomp} ({@link SeccompProfile}, enforced with runsc's {@code --oci-seccomp}). The
 * process is
 * <pre>
 *   /opt/qvm/jre/bin/java -Xmx&lt;N&gt;m -XX:ActiveProcessorCount=&lt;C&gt; -XX:+UseSerialGC
 *       -XX:TieredStopAtLevel=&lt;L&gt; ...
 *       -jar /opt/qvm/renderer-worker.jar
 * </pre>
 *
 * <p>The limits are only known at boot (kernel command line), so the image carries
 * {@link #template()} — this same document with {@code @QVM_XMX_MIB@}, {@code @QVM_CPUS@},
 * {@code @QVM_TMP_MIB@} and {@code @QVM_JIT_LEVEL@} in place of the numbers — and the guest init
 * substitutes them with {@code sed}. {@link #forLimits(WorkerLimits, int)} is what that
 * substitution yields for given limits and JIT level.
 */
public final class OciConfig {
    /** Where the JRE lives inside the bundle's root filesystem. */
    public static final String JAVA_HOME = "/opt/qvm/jre";
    /** Where the worker jar lives inside the bundle's root filesystem. */
    public static final String WORKER_JAR = "/opt/qvm/renderer-worker.jar";
    public static final String MAIN_CLASS = "io.qvm.worker.Main";
    /** The JRE's launcher inside the bundle's root filesystem. */
    public static final String JAVA = JAVA_HOME + "/bin/java";
    /**
     * The worker's class archive (CDS) inside the bundle's root filesystem. The image does not
     * hold one: the host's cache adds it to the initramfs after a boot made it (adr/0018), and a
     * JVM that finds none, or one that does not match, runs without it ({@code -Xshare:auto}).
     */
    public static final String CLASS_ARCHIVE = io.qvm.protocol.image.ImageDirectory.CLASS_ARCHIVE;

    public static final String XMX_PLACEHOLDER = "@QVM_XMX_MIB@";
    public static final String CPUS_PLACEHOLDER = "@QVM_CPUS@";
    public static final String TMP_PLACEHOLDER = "@QVM_TMP_MIB@";
    /** The worker JVM's {@code -XX:TieredStopAtLevel}, filled in at boot from {@code qvm.jit}. */
    public static final String JIT_LEVEL_PLACEHOLDER = "@QVM_JIT_LEVEL@";
    /** {@code -XX:TieredStopAtLevel} for {@code qvm.jit=tiered}: C1, then C2 (HotSpot's default). */
    public static final int JIT_LEVEL_TIERED = 4;
    /** {@code -XX:TieredStopAtLevel} for {@code qvm.jit=c1}: C1 without profiling, no C2 (adr/0019). */
    public static final int JIT_LEVEL_C1 = 1;

    /** The nobody user and group. */
    public static final int UID = 65534;
    public static final int GID = 65534;

    private static final ObjectMapper MAPPER = new ObjectMapper();

    private OciConfig() {
    }

    /**
     * config.json for these limits and {@code -XX:TieredStopAtLevel} ({@link #JIT_LEVEL_TIERED} or
     * {@link #JIT_LEVEL_C1}), exactly as the guest init produces it from the template.
     */
    public static String forLimits(WorkerLimits limits, int jitLevel) {
        return render(limits, Integer.toString(limits.xmxMib()), Integer.toString(limits.cpus()),
                Integer.toString(limits.tmpMib()), Integer.toString(jitLevel));
    }

    /**
     * config.json with placeholders for the boot-time limits (RLIMITs are fixed at build time,
     * from {@code fixed}).
     */
    public static String template(WorkerLimits fixed) {
        return render(fixed, XMX_PLACEHOLDER, CPUS_PLACEHOLDER, TMP_PLACEHOLDER, JIT_LEVEL_PLACEHOLDER);
    }

    /** The worker's command line, with the given (possibly placeholder) values. */
    public static List<String> args(String xmxMib, String cpus, String jitLevel) {
        List<String> args = new ArrayList<>();
        args.add(JAVA);
        args.add("-Xmx" + xmxMib + "m");
        args.add("-XX:ActiveProcessorCount=" + cpus);
        args.add("-XX:+UseSerialGC");
        args.add("-XX:TieredStopAtLevel=" + jitLevel);
        args.add("-XX:-UsePerfData");
        args.add("-XX:+ExitOnOutOfMemoryError");
        args.add("-XX:SharedArchiveFile=" + CLASS_ARCHIVE);
        args.add("-Xshare:auto");
        // HotSpot's own output (warnings, a fatal-error summary) goes to stdout by default, which
        // is the frame stream: send it to stderr, i.e. the guest console.
        args.add("-XX:+DisplayVMOutputToStderr");
        // A fatal error's whole report (hs_err: signal, native frames, memory map, the heap and the
        // threads) goes to stderr too, instead of a file in the sandbox's /tmp that nobody reads;
        // and no core file, which would only fill that tmpfs.
        args.add("-XX:+ErrorFileToStderr");
        args.add("-XX:-CreateCoredumpOnCrash");
        args.add("-Djava.awt.headless=true");
        args.add("-Djava.io.tmpdir=/tmp");
        args.add("-Dfile.encoding=UTF-8");
        args.add("-jar");
        args.add(WORKER_JAR);
        return args;
    }

    private static String render(WorkerLimits fixed, String xmx, String cpus, String tmp, String jitLevel) {
        ObjectNode root = MAPPER.createObjectNode();
        root.put("ociVersion", "1.0.2");

        ObjectNode process = root.putObject("process");
        process.put("terminal", false);
        ObjectNode user = process.putObject("user");
        user.put("uid", UID);
        user.put("gid", GID);
        user.putArray("additionalGids");
        ArrayNode args = process.putArray("args");
        args(xmx, cpus, jitLevel).forEach(args::add);
        ArrayNode env = process.putArray("env");
        env.add("PATH=" + JAVA_HOME + "/bin:/usr/bin:/bin");
        env.add("JAVA_HOME=" + JAVA_HOME);
        env.add("HOME=/tmp");
        env.add("LANG=C.UTF-8");
        env.add("TMPDIR=/tmp");
        // glibc writes its fatal messages (heap corruption, failed assertions) to /dev/tty, which
        // the sandbox does not have; this sends them to stderr, i.e. the guest console, so that
        // an abort of the worker (status 134) says why.
        env.add("LIBC_FATAL_STDERR_=1");
        process.put("cwd", "/tmp");
        ObjectNode caps = process.putObject("capabilities");
        for (String set : new String[] {"bounding", "effective", "inheritable", "permitted", "ambient"}) {
            caps.putArray(set);
        }
        ArrayNode rlimits = process.putArray("rlimits");
        rlimit(rlimits, "RLIMIT_NOFILE", fixed.nofile());
        rlimit(rlimits, "RLIMIT_NPROC", fixed.nproc());
        process.put("noNewPrivileges", true);

        ObjectNode rootfs = root.putObject("root");
        rootfs.put("path", "rootfs");
        rootfs.put("readonly", true);

        root.put("hostname", "qvm-worker");

        ArrayNode mounts = root.putArray("mounts");
        mount(mounts, "/proc", "proc", "proc", "nosuid", "noexec", "nodev");
        mount(mounts, "/dev", "tmpfs", "tmpfs", "nosuid", "strictatime", "mode=755", "size=1m");
        mount(mounts, "/sys", "sysfs", "sysfs", "nosuid", "noexec", "nodev", "ro");
        mount(mounts, "/tmp", "tmpfs", "tmpfs", "nosuid", "nodev", "noexec", "mode=1777",
                "size=" + tmp + "m");

        ObjectNode linux = root.putObject("linux");
        ArrayNode ns = linux.putArray("namespaces");
        for (String type : new String[] {"pid", "ipc", "uts", "mount", "network"}) {
            ns.addObject().put("type", type);
        }
        ArrayNode masked = linux.putArray("maskedPaths");
        for (String p : new String[] {"/proc/kcore", "/proc/keys", "/proc/timer_list",
                "/proc/sched_debug", "/sys/firmware"}) {
            masked.add(p);
        }
        ArrayNode ro = linux.putArray("readonlyPaths");
        for (String p : new String[] {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                "/proc/sysrq-trigger"}) {
            ro.add(p);
        }
        SeccompProfile.addTo(linux);
        try {
            DefaultPrettyPrinter pp = new DefaultPrettyPrinter()
                    .withObjectIndenter(new DefaultIndenter("  ", "\n"))
                    .withArrayIndenter(new DefaultIndenter("  ", "\n"));
            return MAPPER.writer(pp).writeValueAsString(root) + "\n";
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot render config.json", e);
        }
    }

    private static void rlimit(ArrayNode rlimits, String type, long value) {
        ObjectNode r = rlimits.addObject();
        r.put("type", type);
        r.put("hard", value);
        r.put("soft", value);
    }

    private static void mount(ArrayNode mounts, String dest, String type, String source,
            String... options) {
        ObjectNode m = mounts.addObject();
        m.put("destination", dest);
        m.put("type", type);
        m.put("source", source);
        ArrayNode o = m.putArray("options");
        for (String opt : options) {
            o.add(opt);
        }
    }
}
