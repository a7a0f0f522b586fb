package io.qvm.protocol.util;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The private-directory rule on real directories: created 0700, else refused as found, never repaired. */
@Tag("unit")
@Tag("security")
class PrivateDirectoryTest {

    @TempDir
    Path tmp;

    @BeforeEach
    void posixOnly() {
        assumeTrue(PrivateDirectory.ownersAndModes(tmp), "these checks need POSIX owners and modes");
    }

    private static String mode(Path p) throws Exception {
        return PosixFilePermissions.toString(Files.getPosixFilePermissions(p, LinkOption.NOFOLLOW_LINKS));
    }

    @Test
    void aMissingDirectoryIsCreated0700WithItsParents() throws Exception {
        Path dir = tmp.resolve("a/b/root");
        assertEquals(dir, PrivateDirectory.ensure(dir));
        assertEquals("rwx------", mode(dir));
        assertEquals(dir, PrivateDirectory.ensure(dir), "a second call accepts what the first made");
        assertTrue(PrivateDirectory.verifyIfPresent(dir));
    }

    @Test
    void anExistingSharedDirectoryIsRefusedAndKeepsItsMode() throws Exception {
        Path shared = Files.createDirectory(tmp.resolve("shared"));
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxr-xr-x"));
        UnsafeDirectoryException e = assertThrows(UnsafeDirectoryException.class, () -> PrivateDirectory.ensure(shared));
        assertEquals(UnsafeDirectoryException.Problem.SHARED_MODE, e.problem());
        assertEquals(shared, e.directory());
        assertTrue(e.getMessage().contains(shared.toString()) && e.getMessage().contains("rwxr-xr-x")
                && e.getMessage().contains("chmod 700 " + shared), e.getMessage());
        assertEquals("rwxr-xr-x", mode(shared), "never chmod-ed");
        assertThrows(UnsafeDirectoryException.class, () -> PrivateDirectory.verifyIfPresent(shared));
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwx-----x"));
        assertThrows(UnsafeDirectoryException.class, () -> PrivateDirectory.ensure(shared), "one other bit is enough");
    }

    @Test
    void aSymlinkIsRefusedAndNotFollowed() throws Exception {
        Path target = PrivateDirectory.ensure(tmp.resolve("target"));
        Path link = Files.createSymbolicLink(tmp.resolve("link"), target);
        UnsafeDirectoryException e = assertThrows(UnsafeDirectoryException.class, () -> PrivateDirectory.ensure(link));
        assertEquals(UnsafeDirectoryException.Problem.SYMLINK, e.problem());
        assertTrue(e.getMessage().contains("symlink") && e.getMessage().contains(target.toString()), e.getMessage());
        assertThrows(UnsafeDirectoryException.class, () -> PrivateDirectory.verifyIfPresent(link));
        Path dangling = Files.createSymbolicLink(tmp.resolve("dangling"), tmp.resolve("nowhere"));
        assertThrows(UnsafeDirectoryException.class, () -> PrivateDirectory.ensure(dangling));
        assertFalse(Files.exists(tmp.resolve("nowhere")), "nothing was created where the link points");
    }

    @Test
    void aFileIsRefused() throws Exception {
        Path file = Files.writeString(tmp.resolve("file"), "x");
        assertEquals(UnsafeDirectoryException.Problem.NOT_A_DIRECTORY,
                assertThrows(UnsafeDirectoryException.class, () -> PrivateDirectory.ensure(file)).problem());
    }

    @Test
    void aDirectoryOfAnotherUserIsRefused() throws Exception {
        assumeTrue(PrivateDirectory.currentUid() == 0, "only root can give a directory to another user");
        Path foreign = PrivateDirectory.ensure(tmp.resolve("foreign"));
        UserPrincipal nobody = tmp.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("nobody");
        Files.setOwner(foreign, nobody);
        UnsafeDirectoryException e = assertThrows(UnsafeDirectoryException.class, () -> PrivateDirectory.ensure(foreign));
        assertEquals(UnsafeDirectoryException.Problem.FOREIGN_OWNER, e.problem());
        assertTrue(e.getMessage().contains("not by this process (uid 0)"), e.getMessage());
        assertEquals(nobody, Files.getOwner(foreign), "never chown-ed");
    }

    @Test
    void verifyIfPresentSaysFalseForAMissingDirectoryAndCreatesNothing() throws Exception {
        assertFalse(PrivateDirectory.verifyIfPresent(tmp.resolve("absent")));
        assertFalse(Files.exists(tmp.resolve("absent")));
        assertThrows(NoSuchFileException.class, () -> PrivateDirectory.verify(tmp.resolve("absent")));
    }

    @Test
    void createNewMakesAFresh0700DirectoryAndNeverReusesOne() throws Exception {
        Path dir = PrivateDirectory.createNew(tmp.resolve("fresh"));
        assertEquals("rwx------", mode(dir));
        assertThrows(FileAlreadyExistsException.class, () -> PrivateDirectory.createNew(dir));
    }

    @Test
    void ensureChainChecksEveryLevel() throws Exception {
        Path top = tmp.resolve("top");
        Path leaf = PrivateDirectory.ensureChain(top, top.resolve("a/b"));
        for (Path p : new Path[] {top, top.resolve("a"), leaf}) {
            assertEquals("rwx------", mode(p), p.toString());
        }
        Files.setPosixFilePermissions(top.resolve("a"), PosixFilePermissions.fromString("rwxrwxrwx"));
        assertThrows(UnsafeDirectoryException.class, () -> PrivateDirectory.ensureChain(top, top.resolve("a/b/c")));
        assertFalse(Files.exists(top.resolve("a/b/c")), "nothing below a refused level is created");
        assertThrows(IllegalArgumentException.class, () -> PrivateDirectory.ensureChain(top, tmp.resolve("elsewhere")));
    }
}
