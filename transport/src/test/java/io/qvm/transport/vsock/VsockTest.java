package io.qvm.transport.vsock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.transport.TransportException;
import io.qvm.transport.netty.VsockTransport;
import io.qvm.transport.vsock.GuestCidAllocator.GuestCid;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("unit")
class VsockTest {

    @TempDir
    Path dir;

    @Test
    void probeOnThisHostSaysUnusableAndWhy() {
        VsockSupport.Verdict v = VsockSupport.probe();
        if (!Files.exists(VsockSupport.VHOST_VSOCK)) {
            assertFalse(v.usable());
            assertTrue(v.reason().contains("/dev/vhost-vsock") || v.reason().contains("AF_VSOCK"), v.reason());
        }
    }

    @Test
    void probeExplainsEachCondition() throws Exception {
        VsockSupport.Verdict mac = VsockSupport.probe("Mac OS X", VsockSupport.VHOST_VSOCK);
        assertFalse(mac.usable());
        assertTrue(mac.reason().contains("only on Linux"), mac.reason());
        VsockSupport.Verdict absent = VsockSupport.probe("Linux", dir.resolve("no-such-device"));
        assertFalse(absent.usable());
        assertTrue(absent.reason().contains("modprobe vhost_vsock") || absent.reason().contains("AF_VSOCK"),
                absent.reason());
    }

    @Test
    void connectRefusesWhenVsockIsUnusable() {
        if (VsockSupport.probe().usable()) {
            return; // a host with vhost-vsock: nothing to refuse
        }
        TransportException e = assertThrows(TransportException.class,
                () -> VsockTransport.connect(3, 5000, io.qvm.transport.netty.SandboxTransportAccess.LIMITS,
                        Duration.ofSeconds(1), () -> true));
        assertEquals(TransportException.Reason.CONNECT_FAILED, e.reason());
        assertTrue(e.getMessage().contains("vsock is not usable on this host"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> VsockTransport.connect(2, 5000,
                io.qvm.transport.netty.SandboxTransportAccess.LIMITS, Duration.ofSeconds(1), () -> true));
    }

    @Test
    void twoAllocatorsNeverHandOutTheSameCidAndCloseFreesIt() throws Exception {
        GuestCidAllocator a = new GuestCidAllocator(dir, 3, 10);
        GuestCidAllocator b = new GuestCidAllocator(dir, 3, 10);
        List<GuestCid> held = new ArrayList<>();
        Set<Integer> cids = new HashSet<>();
        for (int i = 0; i < 8; i++) {
            GuestCid c = (i % 2 == 0 ? a : b).allocate();
            held.add(c);
            assertTrue(cids.add(c.cid()), "unique: " + c);
            assertTrue(c.cid() >= 3 && c.cid() <= 10);
        }
        java.io.IOException full = assertThrows(java.io.IOException.class, a::allocate);
        assertTrue(full.getMessage().contains("every guest CID in 3..10 is held"), full.getMessage());
        GuestCid five = held.stream().filter(c -> c.cid() == 5).findFirst().orElseThrow();
        five.close();
        five.close();
        try (GuestCid again = b.allocate()) {
            assertEquals(5, again.cid(), "a released CID is free again");
        }
        for (GuestCid c : held) {
            c.close();
        }
    }

    /** Another process holds CID 3 through the same directory: this one must get 4. */
    @Test
    void allocationIsUniqueAcrossProcesses() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process child = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                CidHolderMain.class.getName(), dir.toString()).redirectErrorStream(true).start();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
            String line = out.readLine();
            assertEquals("held 3", line, "the child holds the first CID");
            try (GuestCid mine = new GuestCidAllocator(dir, 3, 100).allocate()) {
                assertNotEquals(3, mine.cid());
                assertEquals(4, mine.cid());
            }
            child.getOutputStream().close(); // the child releases and exits
            assertTrue(child.waitFor(30, TimeUnit.SECONDS));
            try (GuestCid mine = new GuestCidAllocator(dir, 3, 100).allocate()) {
                assertEquals(3, mine.cid(), "freed when the other process let go");
            }
        } finally {
            child.destroyForcibly();
        }
    }

    @Test
    @Tag("security")
    void aSymlinkedTmpFallbackIsRefusedAndNotFollowed() throws Exception {
        // another user planted /tmp/qvm-<user> as a symlink to a directory of their choice
        Path elsewhere = Files.createDirectory(dir.resolve("elsewhere"));
        Path base = Files.createSymbolicLink(dir.resolve("qvm-user"), elsewhere);
        java.io.IOException e = assertThrows(java.io.IOException.class, () -> GuestCidAllocator.under(base).allocate());
        assertTrue(e.getMessage().contains("symlink"), e.getMessage());
        try (var files = Files.list(elsewhere)) {
            assertEquals(0, files.count(), "nothing was created through the symlink");
        }
    }

    @Test
    @Tag("security")
    void aSharedOrForeignLockDirectoryIsRefused() throws Exception {
        Path base = Files.createDirectory(dir.resolve("qvm-shared"));
        Files.setPosixFilePermissions(base, java.nio.file.attribute.PosixFilePermissions.fromString("rwxrwxrwx"));
        java.io.IOException e = assertThrows(java.io.IOException.class, () -> GuestCidAllocator.under(base).allocate());
        assertTrue(e.getMessage().contains("rwxrwxrwx"), e.getMessage());
        assertFalse(Files.exists(base.resolve("vsock-cids")));
    }

    @Test
    @Tag("security")
    void aLockFilePlantedAsASymlinkIsNotFollowed() throws Exception {
        GuestCidAllocator allocator = GuestCidAllocator.under(dir.resolve("qvm-mine"));
        try (GuestCid first = allocator.allocate()) {
            assertEquals(3, first.cid());
        }
        Path target = dir.resolve("victim");
        Files.delete(allocator.directory().resolve("cid-3.lock"));
        Files.createSymbolicLink(allocator.directory().resolve("cid-3.lock"), target);
        assertThrows(java.io.IOException.class, allocator::allocate);
        assertFalse(Files.exists(target, java.nio.file.LinkOption.NOFOLLOW_LINKS), "the symlink's target was not created");
    }

    @Test
    void theDefaultLayoutIsCreatedPrivate() throws Exception {
        Path base = dir.resolve("qvm-fresh");
        try (GuestCid cid = GuestCidAllocator.under(base).allocate()) {
            assertEquals(3, cid.cid());
        }
        for (Path p : List.of(base, base.resolve("vsock-cids"))) {
            assertEquals("rwx------", java.nio.file.attribute.PosixFilePermissions.toString(
                    Files.getPosixFilePermissions(p)), p.toString());
        }
    }

    @Test
    void rangeIsChecked() {
        assertThrows(IllegalArgumentException.class, () -> new GuestCidAllocator(dir, 2, 10));
        assertThrows(IllegalArgumentException.class, () -> new GuestCidAllocator(dir, 10, 9));
    }
}
