package io.qvm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.image.ImageDirectory;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The worker's class archive (adr/0018) through the whole backend, against a fake QEMU whose
 * "init" makes one when asked, fails to, lies about it, or writes one without end: the first cold
 * boot of an image asks for it and keeps what the guest wrote; later boots boot the image's
 * initramfs with it appended; what is refused is recorded, and after two refusals the image boots
 * without; nothing ever fails a boot but a guest that writes past the cap.
 */
@Tag("unit")
@Tag("qemu")
class ClassArchiveTest extends FakeQemuFixture {

    private Path archives() {
        return tmp.resolve("class-archives");
    }

    private static String initrd(List<String> argv) {
        int i = argv.indexOf("-initrd");
        return i < 0 ? "" : argv.get(i + 1);
    }

    private static String archiveChardev(List<String> argv) {
        return argv.stream().filter(a -> a.contains("id=qvma")).findFirst().orElse("");
    }

    private List<Path> kept() throws IOException {
        if (!Files.isDirectory(archives())) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(archives())) {
            return s.filter(d -> Files.exists(d.resolve("initramfs.cpio"))).toList();
        }
    }

    private List<String> failures() throws IOException {
        if (!Files.isDirectory(archives())) {
            return List.of();
        }
        try (Stream<Path> s = Files.walk(archives())) {
            return s.filter(f -> f.getFileName().toString().equals("failed")).flatMap(f -> {
                try {
                    return Files.readAllLines(f).stream();
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }).toList();
        }
    }

    @Test
    void theFirstBootMakesTheArchiveAndTheNextBootsUseIt() throws Exception {
        try (QemuVmBackend backend = host.backend().templates(false).build()) {
            try (Sandbox s = backend.start(FakeQemuHost.config().build())) {
                List<String> argv = host.lastArgv();
                assertTrue(argv.stream().anyMatch(a -> a.contains("qvm.class_archive=make qvm.class_archive_seconds=30")),
                        "asked, with half the boot deadline for it: " + argv);
                assertTrue(archiveChardev(argv).startsWith("file,id=qvma,path="), archiveChardev(argv));
                assertTrue(s.bootReport().notes().stream().anyMatch(n -> n.startsWith("class archive: made in this boot")),
                        String.valueOf(s.bootReport().notes()));
                assertTrue(s.bootReport().phases().containsKey("guest:archive"), String.valueOf(s.bootReport().phases()));
            }
            assertEquals(1, kept().size(), "kept once");
            Path initrd = kept().get(0).resolve("initramfs.cpio");
            byte[] image = Files.readAllBytes(host.imageRoot().resolve("x86_64/initramfs.cpio.lz4"));
            byte[] combined = Files.readAllBytes(initrd);
            assertArrayEquals(image, Arrays.copyOf(combined, image.length), "the image's initramfs comes first, unchanged");
            String rest = new String(combined, image.length, combined.length - image.length, StandardCharsets.ISO_8859_1);
            assertTrue(rest.contains("070701"), "then a newc cpio");
            assertTrue(rest.contains(ImageDirectory.CLASS_ARCHIVE_IN_INITRAMFS + "\0"), "naming the archive's place");
            assertTrue(rest.contains("TRAILER!!!"), "ended");
            assertEquals(0, combined.length % 512);

            try (Sandbox s = backend.start(FakeQemuHost.config().build())) {
                List<String> argv = host.lastArgv();
                assertEquals(initrd.toString(), initrd(argv), "boots the image with its archive");
                assertFalse(argv.stream().anyMatch(a -> a.contains("qvm.class_archive=make")));
                assertEquals("null,id=qvma", archiveChardev(argv), "the port is there, on nothing");
                assertTrue(s.bootReport().notes().contains("class archive: in use"), String.valueOf(s.bootReport().notes()));
            }
        }
        try (QemuVmBackend again = host.backend().templates(false).build();
             Sandbox s = again.start(FakeQemuHost.config().build())) {
            assertEquals(kept().get(0).resolve("initramfs.cpio").toString(), initrd(host.lastArgv()),
                    "another process (here: backend) verifies and uses it too");
        }
    }

    @Test
    void aTamperedArchiveIsNeverBootedAndTheBootSaysWhy() throws Exception {
        try (QemuVmBackend backend = host.backend().templates(false).build()) {
            backend.start(FakeQemuHost.config().build()).close();
        }
        Path initrd = kept().get(0).resolve("initramfs.cpio");
        byte[] b = Files.readAllBytes(initrd);
        b[b.length - 600] ^= 1;
        Files.write(initrd, b);
        try (QemuVmBackend backend = host.backend().templates(false).build();
             Sandbox s = backend.start(FakeQemuHost.config().build())) {
            assertTrue(initrd(host.lastArgv()).endsWith(ImageDirectory.INITRAMFS), "the image's own: " + host.lastArgv());
            String note = s.bootReport().notes().stream().filter(n -> n.startsWith("class archive:")).findFirst().orElse("");
            assertTrue(note.contains("SHA-256"), note);
        }
    }

    @Test
    void whatTheGuestCouldNotMakeOrLiedAboutIsRecordedAndAfterTwoTheImageBootsWithout() throws Exception {
        try (QemuVmBackend backend = host.backend().templates(false).build()) {
            host.set("archive", "fail");
            try (Sandbox s = backend.start(FakeQemuHost.config().build())) {
                assertTrue(s.isAlive(), "the boot goes on without");
                assertTrue(s.bootReport().notes().stream().anyMatch(n -> n.contains("the guest could not make it")),
                        String.valueOf(s.bootReport().notes()));
            }
            host.set("archive", "lie");
            backend.start(FakeQemuHost.config().build()).close();
            List<String> why = failures();
            assertEquals(2, why.size(), String.valueOf(why));
            assertTrue(why.get(1).contains("announced 4097 bytes") && why.get(1).contains("QEMU wrote 4096"), why.get(1));
            assertTrue(kept().isEmpty());

            host.set("archive", "ok");
            try (Sandbox s = backend.start(FakeQemuHost.config().build())) {
                List<String> argv = host.lastArgv();
                assertFalse(argv.stream().anyMatch(a -> a.contains("qvm.class_archive=make")), "given up: " + argv);
                String note = s.bootReport().notes().stream().filter(n -> n.startsWith("class archive:")).findFirst()
                        .orElse("");
                assertTrue(note.contains("remove") && note.contains("to try again"), "says what to do: " + note);
            }
        }
    }

    @Test
    void notAClassArchiveAndNoAnnouncementAreRefused() throws Exception {
        try (QemuVmBackend backend = host.backend().templates(false).build()) {
            host.set("archive", "garbage");
            backend.start(FakeQemuHost.config().build()).close();
            host.set("archive", "silent");
            backend.start(FakeQemuHost.config().build()).close();
        }
        List<String> why = failures();
        assertEquals(2, why.size(), String.valueOf(why));
        assertTrue(why.get(0).contains("not a class-data-sharing archive"), why.get(0));
        assertTrue(why.get(1).contains("reported no class archive"), why.get(1));
        assertTrue(kept().isEmpty());
    }

    @Test
    void aGuestThatWritesPastTheCapIsStoppedAndNotAskedAgain() throws Exception {
        host.set("archive", "huge");
        try (QemuVmBackend backend = host.backend().templates(false).classArchiveMaxBytes(256 * 1024).build()) {
            BootFailedException e = assertThrows(BootFailedException.class,
                    () -> backend.start(FakeQemuHost.config().build()));
            assertTrue(e.getMessage().contains("the class archive file passed its cap of 262144 bytes"), e.getMessage());
            assertTrue(failures().get(0).contains("more than 262144 bytes"), String.valueOf(failures()));
            assertThrows(BootFailedException.class, () -> backend.start(FakeQemuHost.config().build()));
            try (Sandbox s = backend.start(FakeQemuHost.config().build())) {
                assertEquals("null,id=qvma", archiveChardev(host.lastArgv()), "not asked a third time");
            }
        }
    }

    /**
     * One worker that dies at start proves nothing (it happens on its own, and a fresh VM boots);
     * two in a row with the archive set it aside, and the next boot makes a new one.
     */
    @Test
    void workersThatDieTwiceInARowWithTheArchiveSetItAsideAndTheNextBootMakesAnother() throws Exception {
        try (QemuVmBackend backend = host.backend().templates(false).build()) {
            backend.start(FakeQemuHost.config().build()).close(); // boot 1 makes it
            assertEquals(1, kept().size());
            host.set("workerExitStatus", "134").set("failingBoots", "3"); // boots 2 and 3 die at start
            BootFailedException e = assertThrows(BootFailedException.class,
                    () -> backend.start(FakeQemuHost.config().build()));
            assertTrue(e.getMessage().contains("status 134"), e.getMessage());
            assertTrue(kept().isEmpty(), "set aside after two deaths in a row with it");
            assertTrue(failures().get(0).contains("2 workers in a row died before READY with this archive"),
                    String.valueOf(failures()));
            try (Sandbox s = backend.start(FakeQemuHost.config().build())) { // boot 4
                assertTrue(host.lastArgv().stream().anyMatch(a -> a.contains("qvm.class_archive=make")),
                        "the next boot makes a new one: " + host.lastArgv());
            }
            assertEquals(1, kept().size());
        }
    }

    @Test
    void offMeansNeitherMadeNorUsed() throws Exception {
        try (QemuVmBackend backend = host.backend().templates(false).classArchives(false).build();
             Sandbox s = backend.start(FakeQemuHost.config().build())) {
            assertEquals("null,id=qvma", archiveChardev(host.lastArgv()));
            assertTrue(initrd(host.lastArgv()).endsWith(ImageDirectory.INITRAMFS));
            assertTrue(s.bootReport().notes().stream().anyMatch(n -> n.startsWith("class archive: none (class archives are off")),
                    String.valueOf(s.bootReport().notes()));
        }
        assertFalse(Files.exists(archives()));
    }
}
