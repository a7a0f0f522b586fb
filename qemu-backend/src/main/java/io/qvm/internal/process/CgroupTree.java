package io.qvm.internal.process;

import io.qvm.SandboxConfig;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.Predicate;
import java.util.regex.Pattern;

/**
 * The cgroup v2 subtree qvm puts each QEMU in, where the host lets it: {@code /sys/fs/cgroup/qvm/<sandbox-id>},
 * with the memory, task and CPU limits of the sandbox's {@link SandboxConfig}, so a QEMU that a
 * guest drove into allocating, spawning or spinning without end hits a wall of its own instead of
 * the host's.
 *
 * <pre>
 * /sys/fs/cgroup/                 cgroup2; cgroup.subtree_control gets "+memory +pids" (and "+cpu")
 *   qvm/                          made once; cgroup.subtree_control gets "+memory +pids" (and "+cpu")
 *     &lt;sandbox-id&gt;/               one per sandbox, removed when it stops (or by the reaper)
 *       memory.max                guest RAM + {@link #QEMU_OVERHEAD_MIB} MiB (+ the TCG translation cache)
 *       memory.swap.max           0, where swap is accounted: the bound covers swap too
 *       pids.max                  {@link #TASKS_BASE} + one per vCPU
 *       cpu.max                   (vCPUs × {@link #CPU_PERIOD_MICROS} + {@link #EMULATOR_CPU_MICROS}) and the
 *                                 period, where the cpu controller is offered
 *       cgroup.procs              QEMU's pid, written right after QEMU started
 * </pre>
 *
 * <p>Usable when the mount is cgroup v2, offers the memory and pids controllers, and this process
 * may create the subtree and move processes into it (root, or a tree delegated to its user);
 * otherwise QEMU runs without, and {@link #availability()} says why (a cgroup v1 or hybrid host, a
 * read-only mount in a container, not root). The cpu controller is wanted, not required: where
 * it is not offered (or cannot be enabled) QEMU gets the other limits and no {@code cpu.max}, and
 * {@link #availability()} says so. QEMU is moved in right after the OS started it,
 * while it sets itself up and before the guest's first instruction; what it allocated in that
 * moment stays charged where the JVM runs.
 */
public final class CgroupTree {

    private static final System.Logger LOG = System.getLogger(CgroupTree.class.getName());

    /** Where the unified hierarchy is mounted on a cgroup v2 host. */
    public static final Path MOUNT = Path.of("/sys/fs/cgroup");
    /** qvm's subtree under the mount. */
    public static final String SUBTREE = "qvm";
    /**
     * What QEMU itself may use on top of the guest's RAM: its heap, device state, thread stacks,
     * I/O buffers and the page cache of its console and log files. QEMU's own resident memory
     * besides the guest's was about 100 MiB here; 256 leaves room without leaving the bound
     * meaningless. Under TCG the translation cache ({@code tb-size}) comes on top.
     */
    public static final long QEMU_OVERHEAD_MIB = 256;
    /**
     * Tasks QEMU may have besides one per vCPU: up to 64 for its I/O thread pool (QEMU's maximum),
     * and its main loop, RCU, signal, migration, chardev and vhost workers.
     */
    public static final int TASKS_BASE = 96;
    /** {@code cpu.max}'s period: the kernel's default, 100 ms. */
    public static final long CPU_PERIOD_MICROS = 100_000;
    /**
     * CPU time per period QEMU may use on top of one full CPU per vCPU: half a CPU for its own
     * threads — the main loop that moves the worker's bytes, the console and events and answers
     * QMP, and the RCU and I/O workers. A quota of exactly the vCPUs would let a guest whose vCPUs
     * all spin throttle those too (the whole cgroup waits for the next period), slowing the very
     * answer and QMP {@code quit} the host waits for; half a CPU keeps them running and still
     * bounds a runaway guest to its vCPUs and a half.
     */
    public static final long EMULATOR_CPU_MICROS = CPU_PERIOD_MICROS / 2;

    private static final Set<String> CONTROLLERS = Set.of("memory", "pids");
    /** Enabled with the others where offered; its absence costs only {@code cpu.max}. */
    private static final String CPU = "cpu";
    private static final Pattern ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_-]{0,39}");

    private final Path mount;
    private final boolean kernelTree;

    private CgroupTree(Path mount, boolean kernelTree) {
        this.mount = Objects.requireNonNull(mount, "mount").toAbsolutePath().normalize();
        this.kernelTree = kernelTree;
    }

    /** The host's: {@link #MOUNT}, which must be a cgroup2 file system. */
    public static CgroupTree system() {
        return new CgroupTree(MOUNT, true);
    }

    /**
     * A tree at {@code mount} that only has to be laid out like cgroupfs (a test's directory:
     * {@code cgroup.controllers} naming the controllers, files written as cgroupfs takes them).
     */
    public static CgroupTree at(Path mount) {
        return new CgroupTree(mount, false);
    }

    /** Whether QEMUs get a cgroup here, and in a few words why (not). */
    public record Availability(boolean usable, String detail) {
    }

    /** The subtree qvm's cgroups live in. */
    public Path subtree() {
        return mount.resolve(SUBTREE);
    }

    /** Checks, without writing anything, whether sandboxes get a cgroup here. */
    public Availability availability() {
        try {
            if (!Files.isDirectory(mount)) {
                return new Availability(false, mount + " does not exist: no cgroup v2 here");
            }
            if (kernelTree) {
                String type = Files.getFileStore(mount).type();
                if (!type.equals("cgroup2")) {
                    return new Availability(false, mount + " is " + type + ", not cgroup v2 (a cgroup v1 or hybrid "
                            + "host): QEMU runs without a cgroup of its own");
                }
            }
            Path controllers = mount.resolve("cgroup.controllers");
            Set<String> offered = Set.of(Files.readString(controllers, StandardCharsets.US_ASCII).trim().split("\\s+"));
            if (!offered.containsAll(CONTROLLERS)) {
                return new Availability(false, "cgroup v2 at " + mount + " offers " + offered + ", not memory and pids");
            }
            Path sub = subtree();
            boolean canCreate = Files.isDirectory(sub, LinkOption.NOFOLLOW_LINKS) ? Files.isWritable(sub)
                    : Files.isWritable(mount);
            if (!canCreate || !Files.isWritable(mount.resolve("cgroup.procs"))) {
                return new Availability(false, "cgroup v2 at " + mount + " is not writable by this process (not root, "
                        + "or a read-only mount): QEMU runs without a cgroup of its own");
            }
            String cpu = offered.contains(CPU) ? ", cpu.max = vCPUs + " + EMULATOR_CPU_MICROS * 100 / CPU_PERIOD_MICROS
                    + "% of a CPU" : "; no cpu.max: cgroup v2 at " + mount + " offers no cpu controller, so a guest's"
                    + " vCPUs are bounded only by their number";
            return new Availability(true, "each QEMU in " + sub + "/<sandbox>, memory.max = guest RAM + "
                    + QEMU_OVERHEAD_MIB + " MiB (+ TCG's translation cache), pids.max = " + TASKS_BASE + " + vCPUs" + cpu);
        } catch (IOException | RuntimeException e) {
            return new Availability(false, "cannot read cgroup v2 at " + mount + ": " + e.getMessage());
        }
    }

    /**
     * Makes the subtree usable: creates {@code qvm/} and enables the memory and pids controllers
     * (and cpu, where offered and the host lets it) for its children (and for the mount's, where
     * they are not yet).
     *
     * @throws IOException when the host does not let this process; the caller runs without
     */
    public void prepare() throws IOException {
        Availability a = availability();
        if (!a.usable()) {
            throw new IOException(a.detail());
        }
        enableControllers(mount, controllers(mount.resolve("cgroup.controllers")));
        Path sub = subtree();
        if (!Files.isDirectory(sub, LinkOption.NOFOLLOW_LINKS)) {
            try {
                Files.createDirectory(sub);
            } catch (java.nio.file.FileAlreadyExistsException raced) {
                // another backend made it meanwhile
            }
        }
        enableControllers(sub, enabled(mount)); // a child is offered what its parent enabled
    }

    /**
     * Enables memory and pids, with cpu where {@code offered} has it, in one write (cgroupfs takes
     * a write whole or not at all). A host that offers cpu but refuses it — a realtime task outside
     * the root cgroup, a delegation without it — gets memory and pids alone.
     */
    private static void enableControllers(Path cgroup, Set<String> offered) throws IOException {
        Set<String> on = enabled(cgroup);
        boolean cpu = offered.contains(CPU);
        if (on.containsAll(CONTROLLERS) && (!cpu || on.contains(CPU))) {
            return;
        }
        Path control = cgroup.resolve("cgroup.subtree_control");
        if (cpu) {
            try {
                Files.writeString(control, "+memory +pids +cpu", StandardCharsets.US_ASCII);
                return;
            } catch (IOException e) {
                LOG.log(Level.INFO, "qvm: cannot enable the cpu controller in " + cgroup + " (" + e.getMessage()
                        + "): QEMU runs without cpu.max");
            }
        }
        Files.writeString(control, "+memory +pids", StandardCharsets.US_ASCII);
    }

    /** The controllers {@code cgroup} enables for its children ("+cpu" as a test's tree holds it counts as "cpu"). */
    private static Set<String> enabled(Path cgroup) throws IOException {
        return controllers(cgroup.resolve("cgroup.subtree_control"));
    }

    private static Set<String> controllers(Path file) throws IOException {
        if (!Files.exists(file)) {
            return Set.of();
        }
        Set<String> out = new java.util.HashSet<>();
        for (String w : Files.readString(file, StandardCharsets.US_ASCII).trim().split("\\s+")) {
            if (!w.isEmpty()) {
                out.add(w.startsWith("+") ? w.substring(1) : w);
            }
        }
        return out;
    }

    /** {@code memory.max} for a sandbox of {@code config}: guest RAM + QEMU's overhead (+ the translation cache under TCG). */
    public static long memoryMaxBytes(SandboxConfig config, boolean tcg, long translationCacheMib) {
        long mib = config.memoryMib() + QEMU_OVERHEAD_MIB + (tcg ? translationCacheMib : 0);
        return mib << 20;
    }

    /** {@code pids.max} for a sandbox of {@code config}. */
    public static int tasksMax(SandboxConfig config) {
        return TASKS_BASE + config.vcpus();
    }

    /** {@code cpu.max}: the CPU time a cgroup may use in each period, both in microseconds. */
    public record CpuMax(long quotaMicros, long periodMicros) {
        public CpuMax {
            if (periodMicros < 1_000 || periodMicros > 1_000_000 || quotaMicros < 1_000) {
                throw new IllegalArgumentException("cpu.max needs a period of 1 ms to 1 s and a quota of at least"
                        + " 1 ms (the kernel's bounds), got quota " + quotaMicros + " µs, period " + periodMicros + " µs");
            }
        }

        /** As {@code cpu.max} takes it: {@code "<quota> <period>"}. */
        public String value() {
            return quotaMicros + " " + periodMicros;
        }
    }

    /** {@code cpu.max} for a sandbox of {@code config}: one CPU per vCPU, and {@link #EMULATOR_CPU_MICROS} for QEMU. */
    public static CpuMax cpuMax(SandboxConfig config) {
        return new CpuMax(config.vcpus() * CPU_PERIOD_MICROS + EMULATOR_CPU_MICROS, CPU_PERIOD_MICROS);
    }

    /** {@link #create(String, long, int, Optional)} without a CPU bound. */
    public Cgroup create(String sandboxId, long memoryMaxBytes, int tasksMax) throws IOException {
        return create(sandboxId, memoryMaxBytes, tasksMax, Optional.empty());
    }

    /**
     * Creates {@code qvm/<sandboxId>} with these limits; {@code cpuMax} is written where the
     * subtree has the cpu controller enabled, and left out elsewhere ({@link #availability()}
     * says so). {@link #prepare()} must have succeeded.
     *
     * @throws IOException the cgroup could not be made or limited (nothing is left behind)
     */
    public Cgroup create(String sandboxId, long memoryMaxBytes, int tasksMax, Optional<CpuMax> cpuMax)
            throws IOException {
        Path dir = subtree().resolve(checkId(sandboxId));
        Files.createDirectory(dir);
        Cgroup g = new Cgroup(dir);
        try {
            write(dir.resolve("memory.max"), Long.toString(memoryMaxBytes));
            if (!kernelTree || Files.exists(dir.resolve("memory.swap.max"))) {
                write(dir.resolve("memory.swap.max"), "0");
            }
            write(dir.resolve("pids.max"), Integer.toString(tasksMax));
            if (cpuMax.isPresent() && enabled(subtree()).contains(CPU)) {
                write(dir.resolve("cpu.max"), cpuMax.get().value());
            }
        } catch (IOException | RuntimeException e) {
            g.close();
            throw e;
        }
        return g;
    }

    /** Removes {@code qvm/<sandboxId>} if it exists and holds no process. Returns whether it is gone. */
    public boolean remove(String sandboxId) {
        return removeDir(subtree().resolve(checkId(sandboxId)));
    }

    /**
     * Removes every cgroup of the subtree that holds no process and is older than {@code minAge}
     * (a QEMU moves into its cgroup right after it starts, so an older empty one is a leftover),
     * unless {@code keep} says it belongs to a live sandbox. Returns the ids removed.
     */
    public List<String> removeLeftovers(Duration minAge, Predicate<String> keep) {
        List<String> removed = new ArrayList<>();
        Path sub = subtree();
        if (!Files.isDirectory(sub, LinkOption.NOFOLLOW_LINKS)) {
            return removed;
        }
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(sub)) {
            for (Path p : ds) {
                String id = p.getFileName().toString();
                if (!ID.matcher(id).matches() || !Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS) || keep.test(id)) {
                    continue;
                }
                Instant made = Files.getLastModifiedTime(p, LinkOption.NOFOLLOW_LINKS).toInstant();
                if (made.plus(minAge).isBefore(Instant.now()) && processes(p).isEmpty() && removeDir(p)) {
                    removed.add(id);
                }
            }
        } catch (IOException e) {
            LOG.log(Level.DEBUG, "cannot list " + sub, e);
        }
        return removed;
    }

    private static List<Long> processes(Path cgroup) throws IOException {
        Path procs = cgroup.resolve("cgroup.procs");
        if (!Files.exists(procs)) {
            return List.of();
        }
        List<Long> out = new ArrayList<>();
        for (String line : Files.readAllLines(procs, StandardCharsets.US_ASCII)) {
            if (!line.isBlank()) {
                out.add(Long.parseLong(line.strip()));
            }
        }
        return out;
    }

    /**
     * {@code rmdir}: cgroupfs drops a cgroup's interface files with it. It refuses (EBUSY) while a
     * task is still leaving, so a busy cgroup is tried again for up to two seconds. A tree that
     * only mimics cgroupfs has real files: those qvm wrote are deleted first.
     */
    private boolean removeDir(Path dir) {
        for (int attempt = 0; attempt < 40; attempt++) {
            try {
                Files.delete(dir);
                return true;
            } catch (NoSuchFileException gone) {
                return true;
            } catch (DirectoryNotEmptyException e) {
                if (kernelTree) {
                    return false;
                }
                for (String f : List.of("memory.max", "memory.swap.max", "pids.max", "cpu.max", "cgroup.procs")) {
                    try {
                        Files.deleteIfExists(dir.resolve(f));
                    } catch (IOException ignored) {
                        return false;
                    }
                }
            } catch (FileSystemException busy) {
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            } catch (IOException e) {
                LOG.log(Level.DEBUG, "cannot remove " + dir, e);
                return false;
            }
        }
        LOG.log(Level.WARNING, "cgroup " + dir + " is still busy; the next backend's reaper removes it");
        return false;
    }

    private static void write(Path file, String value) throws IOException {
        Files.writeString(file, value, StandardCharsets.US_ASCII);
    }

    private static String checkId(String id) {
        if (id == null || !ID.matcher(id).matches()) {
            throw new IllegalArgumentException("not a sandbox id: " + id);
        }
        return id;
    }

    @Override
    public String toString() {
        return "CgroupTree[" + subtree() + "]";
    }

    /** One sandbox's cgroup. Closing it removes it (once its QEMU is gone); idempotent. */
    public final class Cgroup implements AutoCloseable {
        private final Path dir;
        private volatile boolean closed;

        private Cgroup(Path dir) {
            this.dir = dir;
        }

        public Path dir() {
            return dir;
        }

        /** Moves process {@code pid} (all its threads) into this cgroup. */
        public void add(long pid) throws IOException {
            write(dir.resolve("cgroup.procs"), Long.toString(pid));
        }

        /** The pids in this cgroup now. */
        public List<Long> processes() throws IOException {
            return CgroupTree.processes(dir);
        }

        /** The limit in {@code name} ({@code memory.max}, {@code pids.max}, {@code cpu.max}…) as cgroupfs shows it. */
        public Optional<String> limit(String name) {
            try {
                return Optional.of(Files.readString(dir.resolve(name), StandardCharsets.US_ASCII).strip());
            } catch (IOException e) {
                return Optional.empty();
            }
        }

        @Override
        public void close() {
            if (!closed) {
                closed = removeDir(dir);
            }
        }

        @Override
        public String toString() {
            return "Cgroup[" + dir + "]";
        }
    }
}
