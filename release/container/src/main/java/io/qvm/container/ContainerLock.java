package io.qvm.container;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.List;

import io.qvm.image.PackageLock;
import io.qvm.image.PackageLock.Entry;
import io.qvm.protocol.image.Arch;

/**
 * The Debian packages of the container image, pinned like the guest image's
 * ({@link PackageLock}'s JSON format, every role {@code library}):
 * {@code io/qvm/container/container-packages.lock}. It holds the {@code Depends} closure of
 * {@code qemu-system-x86} (bookworm-backports, with the qemu-system-common, qemu-system-data and
 * seabios it requires from there) and {@code openjdk-17-jre-headless} (bookworm), without
 * recommends, and without the packages that only run maintainer scripts or are tools a container
 * with no shell never calls ({@code release/container/lock.py}'s NOT_FOLLOWED: debconf, adduser,
 * passwd, util-linux, ca-certificates(-java), openssl, java-common, the PAM modules).
 */
public final class ContainerLock {
    public static final String RESOURCE = "/io/qvm/container/container-packages.lock";
    public static final String REFRESH =
            "python3 release/container/lock.py > release/container/src/main/resources/io/qvm/container/container-packages.lock";

    private final List<Entry> entries;
    private final String sha256;

    ContainerLock(List<Entry> entries, String sha256) {
        this.entries = List.copyOf(entries);
        this.sha256 = sha256;
    }

    /** The lock in this jar. */
    public static ContainerLock bundled() {
        try (InputStream in = ContainerLock.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException("no " + RESOURCE + " on the class path: create it with " + REFRESH);
            }
            return parse(in.readAllBytes(), RESOURCE);
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + RESOURCE + ": " + e, e);
        }
    }

    public static ContainerLock parse(byte[] json, String where) {
        PackageLock lock = PackageLock.parse(new String(json, StandardCharsets.UTF_8), where);
        List<Entry> x86 = lock.entries(Arch.X86_64);
        for (Entry e : x86) {
            if (e.role() != PackageLock.Role.LIBRARY) {
                throw new IllegalArgumentException(where + ": " + e.label() + " has role " + e.role().id()
                        + "; every package of the container lock is a library");
            }
        }
        return new ContainerLock(x86, HexFormat.of().formatHex(OciImage.sha256().digest(json)));
    }

    public List<Entry> entries() {
        return entries;
    }

    /** The SHA-256 of the lock file's bytes (a label of the image). */
    public String sha256() {
        return sha256;
    }

    /** The pinned version of {@code name}. */
    public String version(String name) {
        return entries.stream().filter(e -> e.name().equals(name)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("the container lock has no " + name)).version();
    }
}
