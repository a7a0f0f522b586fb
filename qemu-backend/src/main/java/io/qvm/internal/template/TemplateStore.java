package io.qvm.internal.template;

import io.qvm.internal.host.QvmEnvironment;
import io.qvm.protocol.util.Sha256;
import io.qvm.internal.host.Posix;
import io.qvm.protocol.util.FileTrees;
import io.qvm.protocol.util.PrivateDirectory;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * Templates on disk, under {@code $QVM_CACHE/templates} (default {@code ~/.cache/qvm/templates}):
 *
 * <pre>
 *   templates/
 *     &lt;id&gt;/               one template, id = the first 20 hex digits of its key's hash
 *       meta.json          {@link TemplateMeta}: key, inputs, file facts
 *       state              the migration stream (device state; all RAM in full mode)
 *       ram                the guest RAM file, sparse (shared-ram mode)
 *       verified           the hashes already compared, one line per file
 *     .locks/&lt;id&gt;.lock    held while a template is built (across processes and threads)
 *     .build-&lt;id&gt;-&lt;rnd&gt;/   a build in progress; renamed to &lt;id&gt; when complete
 * </pre>
 *
 * <p><b>Verification</b> (adr/0006), so that a truncated, foreign-owned or tampered template is
 * refused — deleted and rebuilt — and never booted, without costing the restore its speed:
 * <ul>
 *   <li><b>every use</b> ({@link #find}): the directory and every file are ours (owner = this
 *       uid, no group or other write, regular files, no symlinks); {@code meta.json} parses and
 *       names this key with these inputs; the state and RAM files have their recorded size,
 *       inode and ctime — any write, truncation, chmod or utime since the build moves the ctime,
 *       which no unprivileged user can set back. Nothing is read.</li>
 *   <li><b>once per file as it is</b>: its SHA-256 against {@code meta.json} (about a second per
 *       GiB: a RAM file, or a full template's state), remembered per (path, inode, ctime, size,
 *       hash) for the process' life and recorded in {@code verified} for later processes.</li>
 * </ul>
 * A template is built in a private directory and renamed into place only when complete, under
 * an exclusive lock, so two processes never both build one key and nobody sees half a template.
 */
public final class TemplateStore {

    private static final System.Logger LOG = System.getLogger(TemplateStore.class.getName());
    private static final Set<String> FULLY_VERIFIED = ConcurrentHashMap.newKeySet();
    private static final Map<Path, ReentrantLock> JVM_LOCKS = new ConcurrentHashMap<>();
    private static final Set<PosixFilePermission> GROUP_OTHER_WRITE = Set.of(PosixFilePermission.GROUP_WRITE,
            PosixFilePermission.OTHERS_WRITE);

    /** Most templates kept by default: a few configs on a few QEMUs and images. */
    public static final int DEFAULT_MAX_TEMPLATES = 8;
    /** Most bytes kept by default (files' apparent sizes: a shared-RAM template counts its whole RAM). */
    public static final long DEFAULT_MAX_BYTES = 16L << 30;

    private final Path root;
    private final int maxTemplates;
    private final long maxBytes;

    private TemplateStore(Path root, int maxTemplates, long maxBytes) {
        this.root = root.toAbsolutePath().normalize();
        if (maxTemplates < 1) {
            throw new IllegalArgumentException("maxTemplates must be at least 1, got " + maxTemplates);
        }
        if (maxBytes < 1) {
            throw new IllegalArgumentException("maxBytes must be positive, got " + maxBytes);
        }
        this.maxTemplates = maxTemplates;
        this.maxBytes = maxBytes;
    }

    private TemplateStore(Path root) {
        this(root, DEFAULT_MAX_TEMPLATES, DEFAULT_MAX_BYTES);
    }

    public static TemplateStore at(Path root) {
        return new TemplateStore(root);
    }

    /**
     * This store keeping at most {@code maxTemplates} templates of at most {@code maxBytes} in
     * all: after each build the oldest others are deleted until both hold (a template larger than
     * the quota on its own is kept, alone).
     */
    public TemplateStore withQuota(int maxTemplates, long maxBytes) {
        return new TemplateStore(root, maxTemplates, maxBytes);
    }

    /** {@code $QVM_CACHE/templates}, else {@code ~/.cache/qvm/templates}. */
    public static TemplateStore defaultLocation() {
        return new TemplateStore(QvmEnvironment.system().templateRoot());
    }

    /** {@link #defaultLocation()} for the environment {@code env}. */
    public static TemplateStore defaultLocation(Map<String, String> env) {
        return new TemplateStore(QvmEnvironment.of(env).templateRoot());
    }

    public Path root() {
        return root;
    }

    /** Makes a template's files; called by {@link #obtain} under the key's lock. */
    @FunctionalInterface
    public interface Builder {
        /**
         * Boots a VM to READY and saves it into {@code dir}: {@link Template#STATE} always, and
         * {@link Template#RAM} in shared-ram mode.
         */
        Built build(Path dir, TemplateMode mode) throws Exception;
    }

    /** The guest RAM the build's VM had, and how long its cold boot and save took. */
    public record Built(int memoryMib, long bootMillis, long saveMillis) {
    }

    /** The outcome of {@link #find}: a verified template, or why there is none. */
    public record Lookup(Optional<Template> template, String why) {
        static Lookup found(Template t) {
            return new Lookup(Optional.of(t), "");
        }

        static Lookup missing(String why) {
            return new Lookup(Optional.empty(), why);
        }

        /** True when a template existed but was refused (and deleted). */
        public boolean refused() {
            return template.isEmpty() && !why.equals(ABSENT);
        }
    }

    static final String ABSENT = "no template yet";

    /**
     * The verified template of {@code key}, if there is one. A template that fails verification
     * is deleted; {@link Lookup#why()} says what was wrong.
     */
    public Lookup find(TemplateKey key) {
        try {
            PrivateDirectory.verifyIfPresent(root); // nothing is read, restored or deleted from a shared root
        } catch (IOException e) {
            return Lookup.missing("the template directory is refused: " + e.getMessage());
        }
        Path dir = root.resolve(key.id());
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            return Lookup.missing(ABSENT);
        }
        Optional<String> problem;
        TemplateMeta meta = null;
        try {
            meta = TemplateMeta.read(dir.resolve(Template.META));
            problem = verify(dir, meta, key);
        } catch (IOException | RuntimeException e) {
            problem = Optional.of("its meta.json is unreadable (" + e.getMessage() + ")");
        }
        if (problem.isPresent()) {
            String why = "template " + key.id() + " at " + dir + " was refused: " + problem.get();
            LOG.log(System.Logger.Level.WARNING, why + "; deleting it");
            deleteQuietly(dir);
            return Lookup.missing(why);
        }
        return Lookup.found(new Template(dir, meta));
    }

    /**
     * The template of {@code key}: found and verified, or built now with {@code builder} (once,
     * even when several threads or processes ask at the same time: the others wait for it).
     *
     * @param progress one line when a template is refused or built
     * @throws TemplateException the build failed (the partial template is removed)
     */
    public Template obtain(TemplateKey key, TemplateMode mode, Builder builder, Consumer<String> progress) {
        Lookup first = find(key);
        if (first.template().isPresent()) {
            return first.template().get();
        }
        if (first.refused()) {
            progress.accept(first.why() + "; rebuilding it");
        }
        try {
            PrivateDirectory.ensure(root); // created 0700, or refused as found: never chmod-ed
            Path locks = root.resolve(".locks");
            Files.createDirectories(locks);
            Path lockFile = locks.resolve(key.id() + ".lock");
            ReentrantLock jvm = JVM_LOCKS.computeIfAbsent(lockFile, p -> new ReentrantLock());
            jvm.lockInterruptibly();
            try (FileChannel ch = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
                    FileLock lock = ch.lock()) {
                Lookup again = find(key);
                if (again.template().isPresent()) {
                    return again.template().get(); // another process or thread built it meanwhile
                }
                return build(key, mode, builder, progress);
            } finally {
                jvm.unlock();
            }
        } catch (IOException e) {
            throw new TemplateException("cannot use the template directory " + root + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TemplateException("interrupted while waiting for template " + key.id(), e);
        }
    }

    private Template build(TemplateKey key, TemplateMode mode, Builder builder, Consumer<String> progress)
            throws IOException {
        removeStaleBuilds(key);
        Path tmp = root.resolve(".build-" + key.id() + "-" + random());
        PrivateDirectory.createNew(tmp);
        try {
            Built built;
            try {
                built = builder.build(tmp, mode);
            } catch (TemplateException e) {
                throw e;
            } catch (Exception e) {
                throw new TemplateException("building template " + key.id() + " failed: " + e.getMessage(), e);
            }
            Path state = tmp.resolve(Template.STATE);
            if (!Files.isRegularFile(state) || Files.size(state) == 0) {
                throw new TemplateException("building template " + key.id() + " left no migration stream");
            }
            TemplateMeta.FileFacts ram = null;
            if (mode == TemplateMode.SHARED_RAM) {
                Path ramFile = tmp.resolve(Template.RAM);
                privateFile(ramFile);
                ram = facts(ramFile, Sha256.of(ramFile));
            }
            privateFile(state);
            TemplateMeta.FileFacts stateFacts = facts(state, Sha256.of(state));
            TemplateMeta meta = new TemplateMeta(TemplateKey.FORMAT, key.hash(), key.inputs(), mode.id(),
                    built.memoryMib(), Instant.now().toString(), Posix.supported(tmp) ? Posix.currentUid() : -1,
                    built.bootMillis(), built.saveMillis(), stateFacts, ram);
            // hashed just now: recorded under the paths they will have once moved into place
            Path finalDir = root.resolve(key.id());
            List<String> stableLines = new ArrayList<>();
            for (Map.Entry<String, TemplateMeta.FileFacts> f : ram == null ? Map.of(Template.STATE, stateFacts).entrySet()
                    : Map.of(Template.STATE, stateFacts, Template.RAM, ram).entrySet()) {
                String vk = verifiedKey(finalDir.resolve(f.getKey()), f.getValue());
                FULLY_VERIFIED.add(vk);
                if (stable(f.getValue())) {
                    stableLines.add(vk);
                }
            }
            record(tmp, stableLines);
            Path metaFile = tmp.resolve(Template.META);
            meta.write(metaFile);
            privateFile(metaFile);
            Path dir = root.resolve(key.id());
            Files.move(tmp, dir, StandardCopyOption.ATOMIC_MOVE);
            List<String> pruned = pruneSuperseded(key);
            if (!pruned.isEmpty()) {
                progress.accept("removed " + pruned.size() + " template(s) of an earlier guest image: " + pruned);
            }
            List<String> overQuota = pruneOverQuota(key);
            if (!overQuota.isEmpty()) {
                progress.accept("removed the " + overQuota.size() + " oldest template(s) to stay within " + maxTemplates
                        + " templates and " + (maxBytes >> 20) + " MiB: " + overQuota);
            }
            progress.accept("template " + key.id() + " saved (" + mode.id() + ", state " + meta.state().bytes() / 1024
                    + " KiB, boot " + built.bootMillis() + " ms, save " + built.saveMillis() + " ms) in " + dir);
            return new Template(dir, meta);
        } finally {
            deleteQuietly(tmp);
        }
    }

    /** Every check of the class comment for {@code dir} against {@code meta} and {@code key}. */
    Optional<String> verify(Path dir, TemplateMeta meta, TemplateKey key) throws IOException {
        Optional<String> own = owned(dir);
        if (own.isPresent()) {
            return own;
        }
        own = owned(dir.resolve(Template.META)); // "every file": meta.json too, not only state and ram
        if (own.isPresent()) {
            return own;
        }
        own = readOnly(dir.resolve(Template.META));
        if (own.isPresent()) {
            return own;
        }
        if (!TemplateKey.FORMAT.equals(meta.format())) {
            return Optional.of("it has format " + meta.format() + ", this qvm reads " + TemplateKey.FORMAT);
        }
        if (!key.hash().equals(meta.key()) || !key.inputs().equals(meta.inputs())) {
            return Optional.of("its meta.json names another key");
        }
        Optional<String> p = check(dir.resolve(Template.STATE), meta.state());
        if (p.isPresent()) {
            return p;
        }
        if (meta.templateMode() == TemplateMode.SHARED_RAM) {
            if (meta.ram() == null) {
                return Optional.of("meta.json describes no RAM file");
            }
            p = check(dir.resolve(Template.RAM), meta.ram());
            if (p.isPresent()) {
                return p;
            }
        }
        p = hashed(dir, Template.STATE, "the state file", meta.state());
        if (p.isPresent() || meta.templateMode() != TemplateMode.SHARED_RAM) {
            return p;
        }
        return hashed(dir, Template.RAM, "the RAM file", meta.ram());
    }

    /**
     * Where the SHA-256 of a template file that {@link #check} found unchanged (owner, mode, size,
     * inode, ctime as recorded) was already compared: once per process ({@link #FULLY_VERIFIED}),
     * and across processes in {@value #VERIFIED} — one line per file, its path, inode, ctime, size
     * and hash — so that a one-shot {@code qvm render} does not read a 1 GiB RAM file, or a
     * full template's state, on every run. A line counts only while the file still has that
     * inode and ctime: any write, truncation, chmod or utime moves the ctime, which no
     * unprivileged process can set back. Where the file system has no inode or ctime (-1), the
     * record is neither read nor written: the hash is compared once per process.
     */
    private Optional<String> hashed(Path dir, String name, String what, TemplateMeta.FileFacts want)
            throws IOException {
        Path file = dir.resolve(name);
        String vk = verifiedKey(file, want);
        if (FULLY_VERIFIED.contains(vk)) {
            return Optional.empty();
        }
        boolean stable = stable(want);
        if (stable && recorded(dir).contains(vk)) {
            FULLY_VERIFIED.add(vk);
            return Optional.empty();
        }
        HASHED.incrementAndGet();
        String sha = Sha256.of(file);
        if (!sha.equals(want.sha256())) {
            return Optional.of(what + "'s SHA-256 is " + sha + ", meta.json says " + want.sha256());
        }
        FULLY_VERIFIED.add(vk);
        if (stable) {
            record(dir, List.of(vk));
        }
        return Optional.empty();
    }

    /** Whether the file system gave the file an inode and a ctime, so that a record of it can hold. */
    private static boolean stable(TemplateMeta.FileFacts f) {
        return f.inode() >= 0 && f.ctime() >= 0;
    }

    private static final java.util.concurrent.atomic.AtomicLong HASHED = new java.util.concurrent.atomic.AtomicLong();

    /** How many template files this process hashed to verify them (a test's view). */
    static long hashesComputed() {
        return HASHED.get();
    }

    /** Forgets what this process verified, as a new process would start (a test's seam). */
    static void forgetVerifiedInThisProcess() {
        FULLY_VERIFIED.clear();
    }

    /** The record of hashes compared in earlier processes, next to the template's files. */
    static final String VERIFIED = "verified";

    /** The lines of {@value #VERIFIED}, or none when it is absent, not ours alone, or unreadable. */
    private static Set<String> recorded(Path dir) {
        Path f = dir.resolve(VERIFIED);
        try {
            if (!Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS) || owned(f).isPresent() || Files.size(f) > 64 * 1024) {
                return Set.of();
            }
            return Set.copyOf(Files.readAllLines(f, java.nio.charset.StandardCharsets.UTF_8));
        } catch (IOException | RuntimeException e) {
            return Set.of();
        }
    }

    /** Adds {@code added} to {@value #VERIFIED} (written aside, 0400, then moved into place); best effort. */
    private static void record(Path dir, List<String> added) {
        if (added.isEmpty()) {
            return;
        }
        java.util.Set<String> lines = new java.util.TreeSet<>(recorded(dir));
        lines.addAll(added);
        Path tmp = dir.resolve(".verified-" + random());
        try {
            Files.write(tmp, lines, java.nio.charset.StandardCharsets.UTF_8, java.nio.file.StandardOpenOption.CREATE_NEW,
                    java.nio.file.StandardOpenOption.WRITE);
            if (Posix.supported(tmp)) {
                Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("r--------"));
            }
            Files.move(tmp, dir.resolve(VERIFIED), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException | RuntimeException e) {
            LOG.log(System.Logger.Level.DEBUG, "could not record a verified hash in " + dir + ": " + e);
            deleteQuietly(tmp);
        }
    }

    private static Optional<String> check(Path file, TemplateMeta.FileFacts want) throws IOException {
        String name = file.getFileName().toString();
        if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
            return Optional.of(name + " is missing or not a regular file");
        }
        Optional<String> own = owned(file);
        if (own.isEmpty()) {
            own = readOnly(file);
        }
        if (own.isPresent()) {
            return own;
        }
        long size = Files.size(file);
        if (size != want.bytes()) {
            return Optional.of(name + " has " + size + " bytes, " + want.bytes() + " were saved (truncated or replaced)");
        }
        TemplateMeta.FileFacts have = facts(file, want.sha256());
        if (have.inode() != want.inode() || have.ctime() != want.ctime()) {
            return Optional.of(name + " was changed after the template was saved (inode/ctime differ)");
        }
        return Optional.empty();
    }

    /** Refuses what is not ours alone: another owner, group/other write, a symlink. */
    private static Optional<String> owned(Path p) throws IOException {
        if (Files.isSymbolicLink(p)) {
            return Optional.of(p.getFileName() + " is a symbolic link");
        }
        if (!Posix.supported(p)) {
            return Optional.empty();
        }
        int owner = (Integer) Files.getAttribute(p, "unix:uid", LinkOption.NOFOLLOW_LINKS);
        if (owner != Posix.currentUid()) {
            return Optional.of(p.getFileName() + " belongs to uid " + owner + ", not to this user ("
                    + Posix.currentUid() + ")");
        }
        Set<PosixFilePermission> perms = Files.getPosixFilePermissions(p, LinkOption.NOFOLLOW_LINKS);
        for (PosixFilePermission w : GROUP_OTHER_WRITE) {
            if (perms.contains(w)) {
                return Optional.of(p.getFileName() + " is writable by others ("
                        + PosixFilePermissions.toString(perms) + ")");
            }
        }
        return Optional.empty();
    }

    private static TemplateMeta.FileFacts facts(Path file, String sha) throws IOException {
        long size = Files.size(file);
        if (!Posix.supported(file)) {
            return new TemplateMeta.FileFacts(size, sha, -1, -1);
        }
        long ino = ((Number) Files.getAttribute(file, "unix:ino", LinkOption.NOFOLLOW_LINKS)).longValue();
        Instant ct = ((FileTime) Files.getAttribute(file, "unix:ctime", LinkOption.NOFOLLOW_LINKS)).toInstant();
        return new TemplateMeta.FileFacts(size, sha, ino, ct.getEpochSecond() * 1_000_000_000L + ct.getNano());
    }

    private static String verifiedKey(Path ram, TemplateMeta.FileFacts f) {
        return ram.toAbsolutePath() + "|" + f.inode() + "|" + f.ctime() + "|" + f.bytes() + "|" + f.sha256();
    }

    /** One listed template: its directory and metadata, or why it cannot be read. */
    public record Listed(Path dir, Optional<TemplateMeta> meta, String problem) {
        public String id() {
            return dir.getFileName().toString();
        }
    }

    /** Every template directory, with its metadata (not verified: {@link #find} does that). */
    public List<Listed> list() throws IOException {
        List<Listed> out = new ArrayList<>();
        if (!PrivateDirectory.verifyIfPresent(root)) {
            return out;
        }
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(root)) {
            for (Path d : ds) {
                if (d.getFileName().toString().startsWith(".") || !Files.isDirectory(d, LinkOption.NOFOLLOW_LINKS)) {
                    continue;
                }
                try {
                    TemplateMeta m = TemplateMeta.read(d.resolve(Template.META));
                    boolean consistent = new TemplateKey(m.inputs()).hash().equals(m.key());
                    out.add(new Listed(d, Optional.of(m), consistent ? "" : "meta.json's key does not match its inputs"));
                } catch (IOException | RuntimeException e) {
                    out.add(new Listed(d, Optional.empty(), "unreadable meta.json: " + e.getMessage()));
                }
            }
        }
        out.sort((a, b) -> a.id().compareTo(b.id()));
        return out;
    }

    /** Deletes the templates whose id starts with {@code idPrefix} (at least 4 characters); returns their ids. */
    public List<String> remove(String idPrefix) throws IOException {
        if (idPrefix.length() < 4 || !idPrefix.matches("[0-9a-f]+")) {
            throw new IllegalArgumentException("a template id (or a prefix of at least 4 hex digits) is needed, got '"
                    + idPrefix + "'");
        }
        List<String> removed = new ArrayList<>();
        for (Listed l : list()) {
            if (l.id().startsWith(idPrefix)) {
                FileTrees.delete(l.dir());
                removed.add(l.id());
            }
        }
        return removed;
    }

    /** Deletes the template {@code id} if it is there (a template found unusable at restore). */
    public void discard(String id) {
        deleteQuietly(root.resolve(id));
    }

    /** Deletes every template (and stale builds); returns the ids removed. */
    public List<String> removeAll() throws IOException {
        List<String> removed = new ArrayList<>();
        for (Listed l : list()) {
            FileTrees.delete(l.dir());
            removed.add(l.id());
        }
        if (Files.isDirectory(root)) {
            try (DirectoryStream<Path> ds = Files.newDirectoryStream(root, ".build-*")) {
                for (Path d : ds) {
                    deleteQuietly(d);
                }
            }
        }
        return removed;
    }

    /**
     * Deletes the templates for the same QEMU binary made from another guest image than
     * {@code key}'s: once an image is rebuilt they can never be restored again (the key holds
     * the image's hashes), and each holds hundreds of MB. Templates of other QEMUs, or without
     * image inputs, are left alone.
     */
    List<String> pruneSuperseded(TemplateKey key) throws IOException {
        Map<String, String> image = imageInputs(key.inputs());
        String qemu = key.inputs().get("qemu.binary");
        List<String> removed = new ArrayList<>();
        if (image.isEmpty() || qemu == null) {
            return removed;
        }
        for (Listed l : list()) {
            if (l.meta().isEmpty() || l.id().equals(key.id())) {
                continue;
            }
            Map<String, String> in = l.meta().get().inputs();
            Map<String, String> theirs = imageInputs(in);
            if (qemu.equals(in.get("qemu.binary")) && !theirs.isEmpty() && !theirs.equals(image)) {
                deleteQuietly(l.dir());
                removed.add(l.id());
            }
        }
        return removed;
    }

    /**
     * Deletes the oldest templates other than {@code key}'s until at most {@link #maxTemplates}
     * remain and their files hold at most {@link #maxBytes}. A clone running from a deleted
     * template keeps its open file; only later clones are affected, and they rebuild.
     */
    List<String> pruneOverQuota(TemplateKey key) throws IOException {
        record Sized(Listed listed, String created, long bytes) {
        }
        List<Sized> all = new ArrayList<>();
        for (Listed l : list()) {
            all.add(new Sized(l, l.meta().map(TemplateMeta::created).orElse(""), bytesIn(l.dir())));
        }
        long count = all.size();
        long bytes = all.stream().mapToLong(Sized::bytes).sum();
        all.sort(java.util.Comparator.comparing(Sized::created)); // ISO-8601: oldest first; unreadable ones first of all
        List<String> removed = new ArrayList<>();
        for (Sized s : all) {
            if (count <= maxTemplates && bytes <= maxBytes) {
                break;
            }
            if (s.listed().id().equals(key.id())) {
                continue;
            }
            deleteQuietly(s.listed().dir());
            removed.add(s.listed().id());
            count--;
            bytes -= s.bytes();
        }
        return removed;
    }

    /** The apparent size of a template directory's files (it holds no subdirectories). */
    private static long bytesIn(Path dir) throws IOException {
        long total = 0;
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
            for (Path f : ds) {
                if (Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)) {
                    total += Files.size(f);
                }
            }
        }
        return total;
    }

    private static Map<String, String> imageInputs(Map<String, String> inputs) {
        Map<String, String> out = new java.util.TreeMap<>();
        inputs.forEach((k, v) -> {
            if (k.startsWith("image.")) {
                out.put(k, v);
            }
        });
        return out;
    }

    /** Under the key's lock nobody else builds it: what is left of its builds is from a dead process. */
    private void removeStaleBuilds(TemplateKey key) throws IOException {
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(root, ".build-" + key.id() + "-*")) {
            for (Path d : ds) {
                deleteQuietly(d);
            }
        }
    }

    /**
     * A saved template file: readable by its owner alone and writable by nobody ({@code 0400}),
     * so no process of this user — a clone's QEMU least of all — opens it for writing by mistake
     * (clones open the RAM file read-only anyway: {@code QemuCommand}).
     */
    private static void privateFile(Path file) throws IOException {
        if (Posix.supported(file)) {
            Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("r--------"));
        }
    }

    /** Refuses a saved template file that anyone may write, its owner included. */
    private static Optional<String> readOnly(Path file) throws IOException {
        if (!Posix.supported(file)) {
            return Optional.empty();
        }
        Set<PosixFilePermission> perms = Files.getPosixFilePermissions(file, LinkOption.NOFOLLOW_LINKS);
        if (perms.contains(PosixFilePermission.OWNER_WRITE)) {
            return Optional.of(file.getFileName() + " is writable (" + PosixFilePermissions.toString(perms)
                    + "); a saved template's files are read-only (r--------)");
        }
        return Optional.empty();
    }

    private static void deleteQuietly(Path dir) {
        try {
            FileTrees.delete(dir);
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot delete " + dir + ": " + e.getMessage());
        }
    }

    private static String random() {
        byte[] b = new byte[6];
        new SecureRandom().nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    @Override
    public String toString() {
        return "TemplateStore[" + root + "]";
    }
}
