package io.qvm.image;

import io.qvm.protocol.image.Arch;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.image.PackageLock.Entry;
import io.qvm.image.PackageLock.Role;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("unit")
class PackageLockTest {
    private static final String HASH_A = "a".repeat(64);

    @Test
    void tamperedDebIsRefusedWithTheExpectedAndActualHashAndTheRefreshCommand(@TempDir Path tmp)
            throws Exception {
        Path deb = tmp.resolve("runsc_1_amd64.deb");
        Files.writeString(deb, "not the pinned bytes");
        Entry pinned = new Entry("runsc", Role.RUNSC, "trixie", "0.0~20240729.0-4+b7", "amd64",
                "pool/main/g/golang-gvisor-gvisor/runsc_1_amd64.deb", 20, HASH_A);
        ImageException e = assertThrows(ImageException.class, () -> PackageStore.verify(pinned, deb));
        String m = e.getMessage();
        assertTrue(m.contains("runsc 0.0~20240729.0-4+b7 (amd64)"), m);
        assertTrue(m.contains("expected sha256 " + HASH_A), m);
        assertTrue(m.contains("actual " + Sha256.of(deb)), m);
        assertTrue(m.contains(PackageLock.REFRESH_COMMAND), m);
    }

    @Test
    void tamperedCacheEntryIsNotUsed(@TempDir Path tmp) throws Exception {
        // A cached .deb whose bytes do not hash to its name is discarded; with no registry
        // reachable (no mirror variables, no apt sources under this fake /etc/apt) the fetch
        // then fails loudly, naming the variables to set.
        Entry pinned = new Entry("busybox-static", Role.BUSYBOX, "bookworm", "1:1.35.0-4", "amd64",
                "pool/main/b/busybox/busybox-static_1.35.0-4_amd64.deb", 10, HASH_A);
        Path cached = tmp.resolve("debs").resolve(HASH_A + ".deb");
        Files.createDirectories(cached.getParent());
        Files.writeString(cached, "tampered");
        List<String> progress = new java.util.ArrayList<>();
        PackageStore store = new PackageStore(tmp, progress::add, tmp.resolve("etc-apt"), Map.of());
        ImageException e = assertThrows(MirrorConfigurationException.class, () -> store.deb(Arch.X86_64, pinned));
        assertTrue(e.getMessage().contains(DebianMirrors.ARCHIVE_ENV), e.getMessage());
        assertTrue(progress.get(0).contains("corrupt"), progress.toString());
        assertTrue(Files.notExists(cached), "the tampered file must be removed");
    }

    @Test
    void bundledLockIsValidAndComplete() {
        PackageLock lock = PackageLock.bundled();
        for (Arch a : Arch.values()) {
            assertTrue(lock.has(a), "no packages for " + a);
            for (Role r : new Role[] {Role.KERNEL, Role.BUSYBOX, Role.RUNSC, Role.JDK, Role.FONTS, Role.PERL}) {
                lock.one(a, r); // throws unless exactly one
            }
            String flavour = a == Arch.X86_64 ? "" : "cloud-"; // x86_64: the generic kernel, for vmgenid (adr/0006)
            assertTrue(lock.one(a, Role.KERNEL).name().matches("linux-image-6\\.1\\.0-\\d+-" + flavour + a.debian()),
                    lock.one(a, Role.KERNEL).name());
            assertEquals("trixie", lock.one(a, Role.RUNSC).suite());
            List<String> libs = lock.withRole(a, Role.LIBRARY).stream().map(Entry::name).toList();
            for (String l : LockSpec.LIBRARIES) {
                assertTrue(libs.contains(l), a + " lacks " + l);
            }
            for (Entry e : lock.entries(a)) {
                assertTrue(e.architecture().equals(a.debian()) || e.architecture().equals("all"), e.label());
            }
        }
    }

    @Test
    void jsonRoundTripIsStable() {
        Entry e = new Entry("libc6", Role.LIBRARY, "bookworm", "2.36-9+deb12u14", "arm64",
                "pool/main/g/glibc/libc6_2.36-9+deb12u14_arm64.deb", 2_000_000, HASH_A);
        PackageLock lock = new PackageLock(Map.of(Arch.AARCH64, List.of(e)));
        String json = lock.toJson();
        PackageLock back = PackageLock.parse(json, "test");
        assertEquals(json, back.toJson());
        assertEquals(e, back.one(Arch.AARCH64, Role.LIBRARY));
    }

    @Test
    void malformedHashInTheLockIsRefused() {
        String json = PackageLock.bundled().toJson().replaceFirst("\"sha256\" : \"[0-9a-f]{64}\"",
                "\"sha256\" : \"1234\"");
        ImageException e = assertThrows(ImageException.class, () -> PackageLock.parse(json, "packages.lock"));
        assertTrue(e.getMessage().contains("sha256 must be 64"), e.getMessage());
        assertTrue(e.getMessage().contains(PackageLock.REFRESH_COMMAND), e.getMessage());
    }
}
