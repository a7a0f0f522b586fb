package io.qvm.internal.template;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;
import io.qvm.internal.host.Posix;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Templates on a real file system: built once, verified on every use, and refused — deleted and
 * rebuilt — when truncated, changed, writable by others, foreign-owned or described by another
 * key's metadata.
 */
@Tag("unit")
class TemplateStoreTest {

    private static final int STATE_BYTES = 5000;
    private static final int RAM_BYTES = 64 * 1024;

    @TempDir
    Path tmp;

    private TemplateStore store;
    private final FakeBuilder builder = new FakeBuilder();
    private final List<String> progress = new CopyOnWriteArrayList<>();

    /** Writes a small random state and RAM file, as a saved VM would; counts its calls. */
    static final class FakeBuilder implements TemplateStore.Builder {
        final AtomicInteger calls = new AtomicInteger();
        final List<Path> dirs = new CopyOnWriteArrayList<>();
        volatile long sleepMillis;

        @Override
        public TemplateStore.Built build(Path dir, TemplateMode mode) throws Exception {
            int n = calls.incrementAndGet();
            dirs.add(dir);
            if (sleepMillis > 0) {
                Thread.sleep(sleepMillis); // a slow build: others must wait for it, not build too
            }
            Random r = new Random(n);
            byte[] state = new byte[STATE_BYTES];
            r.nextBytes(state);
            Files.write(dir.resolve(Template.STATE), state);
            if (mode == TemplateMode.SHARED_RAM) {
                byte[] ram = new byte[RAM_BYTES];
                r.nextBytes(ram);
                Files.write(dir.resolve(Template.RAM), ram);
            }
            return new TemplateStore.Built(1024, 1234, 56);
        }
    }

    @BeforeEach
    void store() {
        store = TemplateStore.at(tmp.resolve("templates"));
    }

    private static TemplateKey key(String variant) {
        TreeMap<String, String> in = new TreeMap<>();
        in.put("format", TemplateKey.FORMAT);
        in.put("mode", "shared-ram");
        in.put("argv", "/usr/bin/qemu-system-x86_64\n-smp\n2\n-m\n1024M\n-append\n" + variant);
        in.put("image.vmlinuz", "ab".repeat(32));
        return new TemplateKey(in);
    }

    private static final TemplateKey KEY = key("a");

    private Template obtain() {
        return store.obtain(KEY, TemplateMode.SHARED_RAM, builder, progress::add);
    }

    private Path dirOf(TemplateKey key) {
        return store.root().resolve(key.id());
    }

    private List<String> leftovers() throws IOException {
        try (Stream<Path> s = Files.list(store.root())) {
            return s.map(p -> p.getFileName().toString()).filter(n -> n.startsWith(".build-")).toList();
        }
    }

    /**
     * Damages the template with {@code damage}, then: find refuses it saying {@code why} and
     * deletes it, and obtain builds it again.
     */
    private void assertRefusedAndRebuilt(String why, Damage damage) throws Exception {
        Template t = obtain();
        assertEquals(1, builder.calls.get());
        assertTrue(store.find(KEY).template().isPresent(), "intact before the damage");
        damage.apply(t);

        TemplateStore.Lookup l = store.find(KEY);
        assertTrue(l.template().isEmpty(), "refused: " + l);
        assertTrue(l.refused(), l.why());
        assertTrue(l.why().contains(why), "'" + why + "' in: " + l.why());
        assertFalse(Files.exists(t.dir()), "a refused template is deleted");
        assertEquals(TemplateStore.ABSENT, store.find(KEY).why());

        damage.apply(obtain()); // obtain refuses it too, and rebuilds
        Template rebuilt = obtain();
        assertEquals(3, builder.calls.get(), "built again after each refusal");
        assertTrue(progress.stream().anyMatch(p -> p.contains("rebuilding")), progress.toString());
        assertTrue(store.find(KEY).template().isPresent());
        assertTrue(Files.isRegularFile(rebuilt.stateFile()));
    }

    @FunctionalInterface
    interface Damage {
        void apply(Template t) throws Exception;
    }

    private static void rewriteMeta(Template t, UnaryOperator<TemplateMeta> change) throws IOException {
        change.apply(TemplateMeta.read(t.dir().resolve(Template.META))).write(t.dir().resolve(Template.META));
    }

    private static TemplateMeta withState(TemplateMeta m, TemplateMeta.FileFacts state) {
        return new TemplateMeta(m.format(), m.key(), m.inputs(), m.mode(), m.memoryMib(), m.created(), m.ownerUid(),
                m.bootMillis(), m.saveMillis(), state, m.ram());
    }

    // ---- build and find --------------------------------------------------------------------------

    @Test
    void obtainBuildsOnceAndFindReturnsTheTemplateWithoutBuildingAgain() throws Exception {
        assertEquals(TemplateStore.ABSENT, store.find(KEY).why());
        assertFalse(store.find(KEY).refused());

        Template t = obtain();
        assertEquals(1, builder.calls.get());
        assertEquals(dirOf(KEY), t.dir());
        assertEquals(KEY.id(), t.id());
        assertEquals(TemplateMode.SHARED_RAM, t.mode());
        assertEquals(STATE_BYTES, Files.size(t.stateFile()));
        assertEquals(RAM_BYTES, Files.size(t.ramFile().orElseThrow()));
        TemplateMeta meta = t.meta();
        assertEquals(KEY.hash(), meta.key());
        assertEquals(KEY.inputs(), meta.inputs());
        assertEquals(1024, meta.memoryMib());
        assertEquals(1234, meta.bootMillis());
        assertEquals(56, meta.saveMillis());
        assertEquals(Posix.currentUid(), meta.ownerUid());
        assertEquals(STATE_BYTES, meta.state().bytes());
        assertEquals(RAM_BYTES, meta.ram().bytes());
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(t.dir())));
        for (String f : List.of(Template.STATE, Template.RAM, Template.META)) {
            assertEquals("r--------", PosixFilePermissions.toString(Files.getPosixFilePermissions(t.dir().resolve(f))),
                    f + ": read-only once saved");
        }
        assertTrue(progress.stream().anyMatch(p -> p.contains("saved")), progress.toString());
        assertEquals(List.of(), leftovers());

        TemplateStore.Lookup found = store.find(KEY);
        assertEquals(t.dir(), found.template().orElseThrow().dir());
        assertEquals(t.meta(), found.template().orElseThrow().meta());
        assertEquals(t.dir(), obtain().dir());
        assertEquals(1, builder.calls.get(), "found, not built again");
        assertEquals(1, builder.dirs.size());
        assertFalse(Files.exists(builder.dirs.get(0)), "the build directory was renamed into place");
    }

    @Test
    void hashesComparedOnceAreRecordedAndNotReadAgainByTheNextProcessWhileTheFilesAreUnchanged() throws Exception {
        Template t = obtain();
        Path record = t.dir().resolve(TemplateStore.VERIFIED);
        assertEquals("r--------", PosixFilePermissions.toString(Files.getPosixFilePermissions(record)));
        assertEquals(2, Files.readAllLines(record).size(), "the state and the RAM file, hashed by the build: "
                + Files.readAllLines(record));
        TemplateStore.forgetVerifiedInThisProcess(); // as a new process starts
        long before = TemplateStore.hashesComputed();
        assertTrue(store.find(KEY).template().isPresent());
        assertEquals(before, TemplateStore.hashesComputed(), "the record stands for both hashes");

        // a file changed since: its inode/ctime no longer match the record (nor meta.json)
        flipByte(t.stateFile(), 0);
        TemplateStore.Lookup l = store.find(KEY);
        assertTrue(l.refused(), l.why());
        assertTrue(l.why().contains("was changed after the template was saved"), l.why());
    }

    @Test
    void aRecordNotOursAloneIsIgnoredTheHashesAreComparedAgainAndItIsWrittenAnew() throws Exception {
        Template t = obtain();
        Path record = t.dir().resolve(TemplateStore.VERIFIED);
        Files.setPosixFilePermissions(record, PosixFilePermissions.fromString("rw-rw-rw-"));
        TemplateStore.forgetVerifiedInThisProcess();
        long before = TemplateStore.hashesComputed();
        assertTrue(store.find(KEY).template().isPresent());
        assertEquals(before + 2, TemplateStore.hashesComputed(), "both files hashed again");
        assertEquals("r--------", PosixFilePermissions.toString(Files.getPosixFilePermissions(record)));
        TemplateStore.forgetVerifiedInThisProcess();
        assertTrue(store.find(KEY).template().isPresent());
        assertEquals(before + 2, TemplateStore.hashesComputed(), "the new record stands");
    }

    @Test
    void aRecordedHashDoesNotStandForAnotherOneInMetaJson() throws Exception {
        Template t = obtain();
        rewriteMeta(t, m -> withState(m, new TemplateMeta.FileFacts(m.state().bytes(), "00".repeat(32),
                m.state().inode(), m.state().ctime())));
        TemplateStore.forgetVerifiedInThisProcess();
        TemplateStore.Lookup l = store.find(KEY);
        assertTrue(l.refused(), l.why());
        assertTrue(l.why().contains("the state file's SHA-256 is"), l.why());
    }

    @Test
    void aFullModeTemplateHasNoRamFile() {
        Template t = store.obtain(KEY, TemplateMode.FULL, builder, progress::add);
        assertEquals(TemplateMode.FULL, t.mode());
        assertTrue(t.ramFile().isEmpty());
        assertNull(t.meta().ram());
        assertTrue(store.find(KEY).template().isPresent());
    }

    @Test
    void anotherKeyIsAnotherTemplate() {
        Template a = obtain();
        Template b = store.obtain(key("b"), TemplateMode.SHARED_RAM, builder, progress::add);
        assertFalse(a.dir().equals(b.dir()));
        assertEquals(2, builder.calls.get());
        assertTrue(store.find(KEY).template().isPresent());
        assertTrue(store.find(key("b")).template().isPresent());
    }

    // ---- refusals ----------------------------------------------------------------------------------

    @Test
    void aTruncatedRamFileIsRefused() throws Exception {
        assertRefusedAndRebuilt("ram has " + RAM_BYTES / 2 + " bytes",
                t -> truncate(t.ramFile().orElseThrow(), RAM_BYTES / 2));
    }

    @Test
    void aTruncatedStateFileIsRefused() throws Exception {
        assertRefusedAndRebuilt("state has 100 bytes", t -> truncate(t.stateFile(), 100));
    }

    @Test
    void aStateFileChangedInPlaceIsRefused() throws Exception {
        // same size; the write moves the ctime, which is what gives it away
        assertRefusedAndRebuilt("state", t -> flipByte(t.stateFile(), 10));
    }

    @Test
    void aRamFileChangedInPlaceIsRefused() throws Exception {
        assertRefusedAndRebuilt("ram was changed after the template was saved",
                t -> flipByte(t.ramFile().orElseThrow(), RAM_BYTES - 1));
    }

    @Test
    void aStateWhoseHashDiffersFromMetaIsRefused() throws Exception {
        // the file untouched (size, inode, ctime as recorded): only its content hash can tell
        assertRefusedAndRebuilt("the state file's SHA-256 is", t -> rewriteMeta(t, m -> withState(m,
                new TemplateMeta.FileFacts(m.state().bytes(), "00".repeat(32), m.state().inode(), m.state().ctime()))));
    }

    @Test
    void aRamFileWhoseHashDiffersFromMetaIsRefused() throws Exception {
        assertRefusedAndRebuilt("the RAM file's SHA-256 is", t -> rewriteMeta(t, m -> new TemplateMeta(m.format(),
                m.key(), m.inputs(), m.mode(), m.memoryMib(), m.created(), m.ownerUid(), m.bootMillis(),
                m.saveMillis(), m.state(), new TemplateMeta.FileFacts(m.ram().bytes(), "11".repeat(32),
                        m.ram().inode(), m.ram().ctime()))));
    }

    @Test
    void aMissingRamFileIsRefused() throws Exception {
        assertRefusedAndRebuilt("ram is missing or not a regular file", t -> Files.delete(t.ramFile().orElseThrow()));
    }

    @Test
    void aStateFileReplacedByASymlinkIsRefused() throws Exception {
        assertRefusedAndRebuilt("state is missing or not a regular file", t -> {
            Path copy = tmp.resolve("elsewhere");
            Files.copy(t.stateFile(), copy, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            Files.delete(t.stateFile());
            Files.createSymbolicLink(t.stateFile(), copy);
        });
    }

    @Test
    void aGroupWritableStateFileIsRefused() throws Exception {
        assertRefusedAndRebuilt("state is writable by others",
                t -> Files.setPosixFilePermissions(t.stateFile(), PosixFilePermissions.fromString("rw-rw----")));
    }

    @Test
    void aWorldWritableRamFileIsRefused() throws Exception {
        assertRefusedAndRebuilt("ram is writable by others", t -> Files.setPosixFilePermissions(
                t.ramFile().orElseThrow(), PosixFilePermissions.fromString("rw----rw-")));
    }

    @Test
    @Tag("security")
    void aTemplateFileItsOwnerMayWriteIsRefused() throws Exception {
        assertRefusedAndRebuilt("ram is writable (rw-------)", t -> Files.setPosixFilePermissions(
                t.ramFile().orElseThrow(), PosixFilePermissions.fromString("rw-------")));
    }

    @Test
    @Tag("security")
    void aMetaJsonItsOwnerMayWriteIsRefused() throws Exception {
        assertRefusedAndRebuilt("meta.json is writable (rw-------)", t -> Files.setPosixFilePermissions(
                t.dir().resolve(Template.META), PosixFilePermissions.fromString("rw-------")));
    }

    @Test
    void aGroupWritableMetaJsonIsRefused() throws Exception {
        assertRefusedAndRebuilt("meta.json is writable by others", t -> Files.setPosixFilePermissions(
                t.dir().resolve(Template.META), PosixFilePermissions.fromString("rw-rw----")));
    }

    @Test
    void aGroupWritableTemplateDirectoryIsRefused() throws Exception {
        assertRefusedAndRebuilt("is writable by others",
                t -> Files.setPosixFilePermissions(t.dir(), PosixFilePermissions.fromString("rwxrwx---")));
    }

    @Test
    void aMetaJsonReplacedByASymlinkIsRefused() throws Exception {
        assertRefusedAndRebuilt("meta.json is a symbolic link", t -> {
            Path copy = tmp.resolve("meta-elsewhere.json");
            Files.copy(t.dir().resolve(Template.META), copy, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            Files.delete(t.dir().resolve(Template.META));
            Files.createSymbolicLink(t.dir().resolve(Template.META), copy);
        });
    }

    @Test
    @Tag("security")
    void anExistingSharedTemplateRootIsRefusedNeverChmodded() throws Exception {
        Path root = Files.createDirectories(store.root());
        Files.setPosixFilePermissions(root, PosixFilePermissions.fromString("rwxr-xr-x"));
        TemplateException e = assertThrows(TemplateException.class, this::obtain);
        assertTrue(e.getMessage().contains("rwxr-xr-x") && e.getMessage().contains("chmod 700 " + root), e.getMessage());
        assertEquals("rwxr-xr-x", PosixFilePermissions.toString(Files.getPosixFilePermissions(root)), "left as it was");
        assertEquals(0, builder.calls.get(), "nothing was built in it");
        Files.delete(root);
        assertEquals(KEY.id(), obtain().id(), "a root qvm creates itself is used");
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(root)));
    }

    @Test
    @Tag("security")
    void aTemplateInARootThatBecameSharedIsNeverRestoredListedOrDeleted() throws Exception {
        Template t = obtain();
        Files.setPosixFilePermissions(store.root(), PosixFilePermissions.fromString("rwxrwxrwx"));
        TemplateStore.Lookup found = store.find(KEY);
        assertTrue(found.template().isEmpty() && found.why().contains("refused"), found.why());
        assertThrows(java.io.IOException.class, store::list);
        assertTrue(Files.exists(t.dir().resolve(Template.STATE)), "nothing in it was deleted");
        Files.setPosixFilePermissions(store.root(), PosixFilePermissions.fromString("rwx------"));
        assertEquals(t.id(), store.find(KEY).template().orElseThrow().id());
    }

    @Test
    void aForeignOwnedStateFileIsRefused() throws Exception {
        assumeTrue(Posix.currentUid() == 0, "only root can give a file to another user");
        assertRefusedAndRebuilt("state belongs to uid 12345", t -> Files.setAttribute(t.stateFile(), "unix:uid", 12345));
    }

    @Test
    void aMetaJsonNamingAnotherKeyIsRefused() throws Exception {
        TemplateKey other = key("other");
        assertRefusedAndRebuilt("its meta.json names another key", t -> rewriteMeta(t, m -> new TemplateMeta(m.format(),
                other.hash(), other.inputs(), m.mode(), m.memoryMib(), m.created(), m.ownerUid(), m.bootMillis(),
                m.saveMillis(), m.state(), m.ram())));
    }

    @Test
    void aMetaJsonWithTheRightHashButOtherInputsIsRefused() throws Exception {
        assertRefusedAndRebuilt("its meta.json names another key", t -> rewriteMeta(t, m -> new TemplateMeta(m.format(),
                m.key(), key("other").inputs(), m.mode(), m.memoryMib(), m.created(), m.ownerUid(), m.bootMillis(),
                m.saveMillis(), m.state(), m.ram())));
    }

    @Test
    void aMetaJsonOfAnotherFormatIsRefused() throws Exception {
        assertRefusedAndRebuilt("it has format 0", t -> rewriteMeta(t, m -> new TemplateMeta("0", m.key(), m.inputs(),
                m.mode(), m.memoryMib(), m.created(), m.ownerUid(), m.bootMillis(), m.saveMillis(), m.state(),
                m.ram())));
    }

    @Test
    void aMissingMetaJsonIsRefused() throws Exception {
        assertRefusedAndRebuilt("its meta.json is unreadable", t -> Files.delete(t.dir().resolve(Template.META)));
    }

    @Test
    void aGarbledMetaJsonIsRefused() throws Exception {
        assertRefusedAndRebuilt("its meta.json is unreadable",
                t -> Files.writeString(t.dir().resolve(Template.META), "{\"format\": "));
    }

    // ---- concurrency and failures ------------------------------------------------------------

    @Test
    void fourThreadsObtainingAtOnceBuildOnce() throws Exception {
        builder.sleepMillis = 300;
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            CountDownLatch go = new CountDownLatch(1);
            List<Future<Template>> got = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                got.add(pool.submit(() -> {
                    go.await();
                    return obtain();
                }));
            }
            go.countDown();
            Set<Path> dirs = new HashSet<>();
            for (Future<Template> f : got) {
                dirs.add(f.get(30, TimeUnit.SECONDS).dir());
            }
            assertEquals(Set.of(dirOf(KEY)), dirs);
            assertEquals(1, builder.calls.get(), "one build; the others waited for it");
            assertEquals(List.of(), leftovers());
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aFailingBuildLeavesNothingBehind() throws Exception {
        TemplateStore.Builder failing = (dir, mode) -> {
            Files.write(dir.resolve(Template.STATE), new byte[100]); // half done
            throw new IOException("disk full");
        };
        TemplateException e = assertThrows(TemplateException.class,
                () -> store.obtain(KEY, TemplateMode.SHARED_RAM, failing, progress::add));
        assertTrue(e.getMessage().contains("disk full"), e.getMessage());
        assertFalse(Files.exists(dirOf(KEY)));
        assertEquals(List.of(), leftovers());
        assertEquals(TemplateStore.ABSENT, store.find(KEY).why());

        obtain();
        assertEquals(1, builder.calls.get(), "the next obtain builds it");
    }

    @Test
    void aBuildThatSavedNoStateFails() throws Exception {
        TemplateException e = assertThrows(TemplateException.class,
                () -> store.obtain(KEY, TemplateMode.FULL, (dir, mode) -> new TemplateStore.Built(1024, 1, 1), progress::add));
        assertTrue(e.getMessage().contains("left no migration stream"), e.getMessage());
        assertFalse(Files.exists(dirOf(KEY)));
        assertEquals(List.of(), leftovers());
    }

    @Test
    void aTemplateExceptionOfTheBuilderIsThrownAsItIs() throws Exception {
        TemplateException mine = new TemplateException("QEMU refused to migrate");
        assertSame(mine, assertThrows(TemplateException.class,
                () -> store.obtain(KEY, TemplateMode.SHARED_RAM, (dir, mode) -> {
                    throw mine;
                }, progress::add)));
        assertEquals(List.of(), leftovers());
    }

    @Test
    void aStaleBuildOfADeadProcessIsRemovedByTheNextBuild() throws Exception {
        io.qvm.protocol.util.PrivateDirectory.ensure(store.root()); // the root as obtain() makes it: private
        Files.createDirectories(store.root().resolve(".build-" + KEY.id() + "-deadbeef0000"));
        Files.writeString(store.root().resolve(".build-" + KEY.id() + "-deadbeef0000").resolve(Template.STATE), "x");
        obtain();
        assertEquals(List.of(), leftovers());
    }

    // ---- quota -------------------------------------------------------------------------------

    @Test
    void pastTheCountQuotaTheOldestTemplatesArePruned() throws Exception {
        TemplateStore small = store.withQuota(2, Long.MAX_VALUE);
        Template a = small.obtain(key("a"), TemplateMode.SHARED_RAM, builder, progress::add);
        Template b = small.obtain(key("b"), TemplateMode.SHARED_RAM, builder, progress::add);
        Template c = small.obtain(key("c"), TemplateMode.SHARED_RAM, builder, progress::add);
        assertEquals(List.of(b.id(), c.id()).stream().sorted().toList(),
                small.list().stream().map(TemplateStore.Listed::id).toList(), "a, the oldest, went");
        assertFalse(Files.exists(a.dir()));
        assertTrue(progress.stream().anyMatch(l -> l.contains("removed the 1 oldest") && l.contains(a.id())),
                progress.toString());
    }

    @Test
    void pastTheByteQuotaTheOldestTemplatesArePrunedButNeverTheNewOne() throws Exception {
        long one = STATE_BYTES + RAM_BYTES + 4096; // a template's files, meta.json included
        TemplateStore small = store.withQuota(100, 2 * one);
        Template a = small.obtain(key("a"), TemplateMode.SHARED_RAM, builder, progress::add);
        Template b = small.obtain(key("b"), TemplateMode.SHARED_RAM, builder, progress::add);
        Template c = small.obtain(key("c"), TemplateMode.SHARED_RAM, builder, progress::add);
        assertFalse(Files.exists(a.dir()), "the oldest went");
        assertTrue(Files.exists(b.dir()) && Files.exists(c.dir()));
        TemplateStore tiny = store.withQuota(100, 1);
        Template d = tiny.obtain(key("d"), TemplateMode.SHARED_RAM, builder, progress::add);
        assertEquals(List.of(d.id()), tiny.list().stream().map(TemplateStore.Listed::id).toList(),
                "a template above the quota alone is kept, alone");
        assertThrows(IllegalArgumentException.class, () -> store.withQuota(0, 1));
        assertThrows(IllegalArgumentException.class, () -> store.withQuota(1, 0));
    }

    // ---- list, remove ------------------------------------------------------------------------

    @Test
    void listShowsEveryTemplateWithItsMetadata() throws Exception {
        assertEquals(List.of(), store.list(), "no root yet");
        Template a = obtain();
        Template b = store.obtain(key("b"), TemplateMode.FULL, builder, progress::add);
        Files.createDirectories(store.root().resolve("0000broken"));
        Files.createDirectories(store.root().resolve(".build-" + KEY.id() + "-123456"));

        List<TemplateStore.Listed> listed = store.list();
        List<String> ids = listed.stream().map(TemplateStore.Listed::id).toList();
        List<String> want = new ArrayList<>(List.of(a.id(), b.id(), "0000broken"));
        want.sort(null);
        assertEquals(want, ids, "sorted, without the dot directories");
        for (TemplateStore.Listed l : listed) {
            if (l.id().equals("0000broken")) {
                assertTrue(l.meta().isEmpty());
                assertTrue(l.problem().startsWith("unreadable meta.json"), l.problem());
            } else {
                assertEquals("", l.problem(), l.id());
                assertEquals(l.id().equals(a.id()) ? "shared-ram" : "full", l.meta().orElseThrow().mode());
            }
        }
    }

    @Test
    void listFlagsAMetaJsonWhoseKeyDoesNotMatchItsInputs() throws Exception {
        Template t = obtain();
        rewriteMeta(t, m -> new TemplateMeta(m.format(), key("x").hash(), m.inputs(), m.mode(), m.memoryMib(),
                m.created(), m.ownerUid(), m.bootMillis(), m.saveMillis(), m.state(), m.ram()));
        assertEquals("meta.json's key does not match its inputs", store.list().get(0).problem());
    }

    @Test
    void removeDeletesTheTemplatesOfAnIdPrefix() throws Exception {
        Template a = obtain();
        Template b = store.obtain(key("b"), TemplateMode.SHARED_RAM, builder, progress::add);
        assertThrows(IllegalArgumentException.class, () -> store.remove(a.id().substring(0, 3)));
        assertThrows(IllegalArgumentException.class, () -> store.remove("zzzz"));
        String nobody = "0123456789abcdef".chars().mapToObj(c -> (char) c + "000")
                .filter(p -> !a.id().startsWith(p.substring(0, 1)) && !b.id().startsWith(p.substring(0, 1)))
                .findFirst().orElseThrow();
        assertEquals(List.of(), store.remove(nobody), "a prefix of no template");
        assertTrue(Files.exists(a.dir()) && Files.exists(b.dir()));

        assertEquals(List.of(a.id()), store.remove(a.id().substring(0, 8)));
        assertFalse(Files.exists(a.dir()));
        assertTrue(Files.exists(b.dir()));
        assertEquals(TemplateStore.ABSENT, store.find(KEY).why());
        assertEquals(List.of(b.id()), store.list().stream().map(TemplateStore.Listed::id).toList());
    }

    @Test
    void removeAllDeletesEveryTemplateAndLeftoverBuild() throws Exception {
        Template a = obtain();
        Template b = store.obtain(key("b"), TemplateMode.FULL, builder, progress::add);
        Files.createDirectories(store.root().resolve(".build-" + KEY.id() + "-123456"));
        List<String> removed = new ArrayList<>(store.removeAll());
        removed.sort(null);
        List<String> want = new ArrayList<>(List.of(a.id(), b.id()));
        want.sort(null);
        assertEquals(want, removed);
        assertEquals(List.of(), store.list());
        assertEquals(List.of(), leftovers());
        assertEquals(List.of(), store.removeAll());
    }

    @Test
    void discardDeletesOneTemplate() {
        Template t = obtain();
        store.discard(t.id());
        assertFalse(Files.exists(t.dir()));
        store.discard(t.id()); // absent: nothing to do
    }

    // ---- helpers ---------------------------------------------------------------------------------

    private static void truncate(Path file, long size) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.truncate(size);
        }
    }

    private static void flipByte(Path file, long at) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.allocate(1);
            ch.read(b, at);
            b.put(0, (byte) (b.get(0) ^ 0x01));
            b.rewind();
            ch.write(b, at);
        }
    }

    private static TemplateKey imageKey(String qemu, String kernelSha, String variant) {
        TreeMap<String, String> in = new TreeMap<>();
        in.put("format", TemplateKey.FORMAT);
        in.put("mode", "shared-ram");
        in.put("argv", qemu + "\n-m\n1024M\n-append\n" + variant);
        in.put("qemu.binary", qemu);
        in.put("image.vmlinuz", kernelSha.repeat(32));
        return new TemplateKey(in);
    }

    @Test
    void buildingFromANewImageRemovesTheTemplatesOfTheOldImageForThatQemuOnly() throws Exception {
        TemplateKey oldX86 = imageKey("/usr/bin/qemu-system-x86_64", "aa", "1");
        TemplateKey oldX86Other = imageKey("/usr/bin/qemu-system-x86_64", "aa", "2");
        TemplateKey arm = imageKey("/usr/bin/qemu-system-aarch64", "cc", "1");
        for (TemplateKey k : List.of(oldX86, oldX86Other, arm)) {
            store.obtain(k, TemplateMode.SHARED_RAM, builder, progress::add);
        }
        TemplateKey newX86 = imageKey("/usr/bin/qemu-system-x86_64", "bb", "1");
        store.obtain(newX86, TemplateMode.SHARED_RAM, builder, progress::add);

        assertFalse(Files.exists(dirOf(oldX86)), "the old image's templates are gone");
        assertFalse(Files.exists(dirOf(oldX86Other)));
        assertTrue(Files.exists(dirOf(arm)), "another QEMU's template stays");
        assertTrue(Files.exists(dirOf(newX86)));
        assertTrue(progress.stream().anyMatch(p -> p.contains("earlier guest image")), progress.toString());
    }
}
