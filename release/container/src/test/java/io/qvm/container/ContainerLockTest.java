package io.qvm.container;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import io.qvm.image.ImageException;

@Tag("unit")
class ContainerLockTest {
    @Test
    void theBundledLockPinsQemuFromBackportsAndTheJreWithoutTools() {
        ContainerLock lock = ContainerLock.bundled();
        assertEquals("1:10.0.2+ds-2+deb13u1~bpo12+1", lock.version("qemu-system-x86"));
        assertTrue(lock.version("openjdk-17-jre-headless").startsWith("17."));
        Set<String> names = lock.entries().stream().map(e -> e.name()).collect(Collectors.toSet());
        assertTrue(names.containsAll(Set.of("qemu-system-common", "qemu-system-data", "seabios", "libc6")), names.toString());
        for (String tool : Set.of("debconf", "adduser", "passwd", "util-linux", "openssl", "ca-certificates-java", "dpkg")) {
            assertTrue(!names.contains(tool), tool + " is in the lock");
        }
        lock.entries().stream().filter(e -> e.name().startsWith("qemu-"))
                .forEach(e -> assertEquals("bookworm-backports", e.suite(), e.label()));
        assertEquals(64, lock.sha256().length());
    }

    @Test
    void aLockWithAnotherRoleOrABadHashIsRefused() {
        String ok = "{\"format\":1,\"architectures\":{\"x86_64\":[{\"name\":\"x\",\"role\":\"%s\",\"suite\":\"bookworm\","
                + "\"version\":\"1\",\"architecture\":\"amd64\",\"filename\":\"pool/main/x/x_1_amd64.deb\",\"size\":1,"
                + "\"sha256\":\"%s\"}]}}";
        String hash = "a".repeat(64);
        assertEquals(1, ContainerLock.parse(String.format(ok, "library", hash).getBytes(StandardCharsets.UTF_8), "t")
                .entries().size());
        assertThrows(IllegalArgumentException.class,
                () -> ContainerLock.parse(String.format(ok, "kernel", hash).getBytes(StandardCharsets.UTF_8), "t"));
        assertThrows(ImageException.class,
                () -> ContainerLock.parse(String.format(ok, "library", "ABC").getBytes(StandardCharsets.UTF_8), "t"));
    }
}
