package io.qvm.internal.template;

import io.qvm.internal.process.QemuUser;
import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Objects;
import java.util.Optional;

/**
 * Where a template's QEMU connects to hand the host its migration stream ({@code migrate
 * unix:<path>}): the host listens, QEMU connects after the guest was saved — long after QEMU
 * dropped its privileges, so the path must be reachable by QEMU's user and by nobody else.
 *
 * <ul>
 * <li>QEMU runs as this process's user ({@link #inPrivateDirectory}): the sandbox's own 0700
 *     runtime directory, as for every other socket.</li>
 * <li>QEMU dropped from root to an unprivileged user ({@link #reachableBy}): that user cannot
 *     enter root's runtime directory, so the socket goes into a fresh directory of its own under
 *     {@code /tmp} — owned by root, group the user's, mode 0710 (the group may enter it, not list
 *     it) — under a random 128-bit name, group-writable (0660). Another process of that user (a
 *     QEMU of another sandbox) cannot find the name, and the host checks the peer's credentials
 *     ({@code SO_PEERCRED}) before it reads a byte. Both are removed when the save ends.</li>
 * </ul>
 */
public final class MigrationSocket implements AutoCloseable {

    private static final SecureRandom RANDOM = new SecureRandom();
    /** Where a hand-over directory is made: short (a socket path has at most 103 bytes) and present on every POSIX host. */
    static final Path HANDOVER_BASE = Path.of("/tmp");

    private final Path path;
    private final Optional<QemuUser.Account> peer;
    private final Path ownDirectory;

    private MigrationSocket(Path path, Optional<QemuUser.Account> peer, Path ownDirectory) {
        this.path = path;
        this.peer = peer;
        this.ownDirectory = ownDirectory;
    }

    /** {@code socket}, in a private directory of this process's user (QEMU runs as that user too). */
    public static MigrationSocket inPrivateDirectory(Path socket) {
        return new MigrationSocket(Objects.requireNonNull(socket, "socket"), Optional.empty(), null);
    }

    /** A socket only {@code qemu}'s user can reach, in a fresh hand-over directory under {@code /tmp}. */
    public static MigrationSocket reachableBy(QemuUser.Account qemu) throws IOException {
        return reachableBy(qemu, HANDOVER_BASE);
    }

    /** As {@link #reachableBy(QemuUser.Account)}, with the hand-over directory made in {@code base}. */
    public static MigrationSocket reachableBy(QemuUser.Account qemu, Path base) throws IOException {
        Objects.requireNonNull(qemu, "qemu");
        Path dir = Files.createTempDirectory(base, "qvm-save-"); // 0700, a name nobody held
        try {
            Files.setAttribute(dir, "unix:gid", qemu.gid(), LinkOption.NOFOLLOW_LINKS);
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x---"));
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(dir);
            throw e;
        }
        byte[] name = new byte[16];
        RANDOM.nextBytes(name);
        return new MigrationSocket(dir.resolve(HexFormat.of().formatHex(name) + ".sock"), Optional.of(qemu), dir);
    }

    /** The socket's path (the {@code unix:} URI QEMU is given). */
    public Path path() {
        return path;
    }

    /** The user QEMU runs as when it is not this process's. */
    public Optional<QemuUser.Account> peer() {
        return peer;
    }

    /** Called once the host's listening socket is bound at {@link #path()}: lets QEMU's group connect. */
    void grantAccess() throws IOException {
        if (peer.isPresent()) {
            Files.setAttribute(path, "unix:gid", peer.get().gid(), LinkOption.NOFOLLOW_LINKS);
            Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rw-rw----"));
        }
    }

    /**
     * Refuses a connection that is not from QEMU's user (where QEMU runs as another user than
     * this process; a same-user peer sits behind a 0700 directory already).
     *
     * @throws TemplateException naming the peer that connected
     */
    void checkPeer(SocketChannel ch) throws IOException {
        if (peer.isEmpty()) {
            return;
        }
        jdk.net.UnixDomainPrincipal who = ch.getOption(jdk.net.ExtendedSocketOptions.SO_PEERCRED);
        String user = who.user().getName();
        QemuUser.Account qemu = peer.get();
        if (!user.equals(qemu.name()) && !user.equals(Integer.toString(qemu.uid()))) {
            throw new TemplateException("the template's migration socket was connected by user " + user + ", not by "
                    + "QEMU's user " + qemu.name() + ": refusing its stream");
        }
    }

    /** Removes the socket and, for a hand-over socket, its directory. Idempotent. */
    @Override
    public void close() throws IOException {
        Files.deleteIfExists(path);
        if (ownDirectory != null) {
            Files.deleteIfExists(ownDirectory);
        }
    }

    @Override
    public String toString() {
        return "MigrationSocket[" + path + peer.map(p -> ", for user " + p.name()).orElse("") + "]";
    }
}
