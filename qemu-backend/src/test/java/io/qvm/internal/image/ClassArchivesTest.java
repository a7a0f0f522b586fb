package io.qvm.internal.image;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.image.Arch;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The store of class archives on its own: claims, the cap, eviction, a directory that is not ours. */
@Tag("unit")
class ClassArchivesTest {

    @TempDir
    Path tmp;

    private GuestImage image(String tag) throws IOException {
        Path dir = TestImages.write(tmp.resolve("images-" + tag).resolve("x86_64"), Arch.X86_64, tag);
        return GuestImage.verify(dir, Arch.X86_64, "rebuild");
    }

    private Path archive(int bytes) throws IOException {
        byte[] b = new byte[bytes];
        b[0] = (byte) 0xa2;
        b[1] = (byte) 0xab;
        b[2] = 0x0b;
        b[3] = (byte) 0xf0;
        return Files.write(Files.createTempFile(tmp, "jsa", ""), b);
    }

    @Test
    void oneBootOfAProcessMakesAnImagesArchiveAtATime() throws IOException {
        ClassArchives store = ClassArchives.at(tmp.resolve("store"));
        GuestImage img = image("a");
        ClassArchives.Plan first = store.plan(img);
        assertInstanceOf(ClassArchives.Plan.Make.class, first);
        ClassArchives.Plan second = store.plan(img);
        assertInstanceOf(ClassArchives.Plan.None.class, second, "while the first makes it");
        assertInstanceOf(ClassArchives.Plan.Make.class, store.plan(image("b")), "another image is another claim");
        store.released((ClassArchives.Plan.Make) first);
        ClassArchives.Plan again = store.plan(img);
        assertInstanceOf(ClassArchives.Plan.Make.class, again, "released: tried again");
        Path initrd = store.install(img, (ClassArchives.Plan.Make) again, archive(1000), 1000);
        assertEquals(new ClassArchives.Plan.Use(initrd), store.plan(img));
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(initrd.getParent())));
    }

    @Test
    void anArchiveAboveTheCapIsRefusedAndRecorded() throws IOException {
        ClassArchives store = ClassArchives.at(tmp.resolve("store"), 4096);
        GuestImage img = image("a");
        ClassArchives.Plan.Make claim = (ClassArchives.Plan.Make) store.plan(img);
        IOException e = assertThrows(IOException.class, () -> store.install(img, claim, archive(4097), 4097));
        assertTrue(e.getMessage().contains("outside 4..4096"), e.getMessage());
        assertTrue(Files.readString(tmp.resolve("store").resolve(ClassArchives.name(img)).resolve("failed"))
                .contains("outside 4..4096"));
    }

    @Test
    void onlyTheMostRecentImagesAreKept() throws IOException {
        ClassArchives store = ClassArchives.at(tmp.resolve("store"));
        java.time.Instant longAgo = java.time.Instant.now().minus(java.time.Duration.ofHours(2));
        for (int i = 0; i < ClassArchives.MAX_IMAGES + 3; i++) {
            GuestImage img = image("i" + i);
            Path initrd = store.install(img, (ClassArchives.Plan.Make) store.plan(img), archive(100), 100);
            // used an hour or two ago, in this order: none is protected as recently used
            Files.setLastModifiedTime(initrd.getParent(), java.nio.file.attribute.FileTime.from(longAgo.plusSeconds(60L * i)));
        }
        try (Stream<Path> s = Files.list(tmp.resolve("store"))) {
            List<Path> left = s.toList();
            assertEquals(ClassArchives.MAX_IMAGES, left.size(), String.valueOf(left));
        }
        GuestImage last = image("i" + (ClassArchives.MAX_IMAGES + 2));
        assertInstanceOf(ClassArchives.Plan.Use.class, store.plan(last), "the newest is kept");
    }

    @Test
    void anImageUsedInTheLastHalfHourIsNotEvictedNorOneKeptMeanwhileReplaced() throws IOException {
        ClassArchives store = ClassArchives.at(tmp.resolve("store"));
        List<Path> made = new java.util.ArrayList<>();
        for (int i = 0; i < ClassArchives.MAX_IMAGES + 2; i++) {
            GuestImage img = image("r" + i);
            made.add(store.install(img, (ClassArchives.Plan.Make) store.plan(img), archive(100), 100));
        }
        for (Path p : made) {
            assertTrue(Files.exists(p), "recently used, so kept: " + p);
        }
        // two makers of one image (two processes): the second keeps the first one's archive
        GuestImage img = image("twice");
        ClassArchives other = ClassArchives.at(tmp.resolve("store"));
        ClassArchives.Plan.Make mine = (ClassArchives.Plan.Make) store.plan(img);
        ClassArchives.Plan.Make theirs = (ClassArchives.Plan.Make) other.plan(img);
        Path first = other.install(img, theirs, archive(100), 100);
        long size = Files.size(first);
        Path second = store.install(img, mine, archive(200), 200);
        assertEquals(first, second);
        assertEquals(size, Files.size(second), "the one kept first stays");
    }

    @Test
    void failedAttemptsOlderThanADayNoLongerCount() throws IOException {
        ClassArchives store = ClassArchives.at(tmp.resolve("store"));
        GuestImage img = image("f");
        store.failed((ClassArchives.Plan.Make) store.plan(img), "one");
        store.failed((ClassArchives.Plan.Make) store.plan(img), "two");
        assertInstanceOf(ClassArchives.Plan.None.class, store.plan(img), "given up after two");
        Path failed = tmp.resolve("store").resolve(ClassArchives.name(img)).resolve("failed");
        String old = java.time.Instant.now().minus(java.time.Duration.ofDays(2)).toString();
        Files.writeString(failed, old + " one\n" + old + " two\n");
        assertInstanceOf(ClassArchives.Plan.Make.class, store.plan(img), "tried again once they expired");
    }

    @Test
    void aStoreThatIsNotOursIsNeitherReadNorWritten() throws IOException {
        Path root = Files.createDirectories(tmp.resolve("store"));
        Files.setPosixFilePermissions(root, PosixFilePermissions.fromString("rwxrwxrwx"));
        ClassArchives.Plan p = ClassArchives.at(root).plan(image("a"));
        assertInstanceOf(ClassArchives.Plan.None.class, p);
        assertTrue(((ClassArchives.Plan.None) p).why().contains("cannot be used"), p.toString());
    }
}
