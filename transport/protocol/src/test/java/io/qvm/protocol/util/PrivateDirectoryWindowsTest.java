package io.qvm.protocol.util;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.common.jimfs.Configuration;
import com.google.common.jimfs.Jimfs;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystem;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.AclEntry;
import java.nio.file.attribute.AclEntryPermission;
import java.nio.file.attribute.AclEntryType;
import java.nio.file.attribute.AclFileAttributeView;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * {@link PrivateDirectory} on a Windows-shaped file system: Jimfs in Windows mode with the views
 * NTFS has (owner and ACL, no POSIX). Private there means: owned by the current user, and an ACL
 * whose ALLOW entries name nobody else.
 */
@Tag("unit")
@Tag("security")
class PrivateDirectoryWindowsTest {

    private FileSystem fs;
    private UserPrincipal me;
    private UserPrincipal mallory;
    private Path base;

    @BeforeEach
    void setUp() throws Exception {
        fs = Jimfs.newFileSystem(Configuration.windows().toBuilder()
                .setAttributeViews("basic", "owner", "acl")
                .setDefaultAttributeValue("owner:owner", System.getProperty("user.name"))
                .build());
        me = fs.getUserPrincipalLookupService().lookupPrincipalByName(System.getProperty("user.name"));
        mallory = fs.getUserPrincipalLookupService().lookupPrincipalByName("mallory");
        base = Files.createDirectories(fs.getPath("C:\\Users\\me\\AppData\\Local"));
    }

    @AfterEach
    void tearDown() throws Exception {
        fs.close();
    }

    private static AclEntry allow(UserPrincipal who) {
        return AclEntry.newBuilder().setType(AclEntryType.ALLOW).setPrincipal(who)
                .setPermissions(EnumSet.allOf(AclEntryPermission.class)).build();
    }

    private static List<AclEntry> acl(Path p) throws Exception {
        return Files.getFileAttributeView(p, AclFileAttributeView.class).getAcl();
    }

    @Test
    void theFileSystemIsWindowsShaped() {
        assertFalse(PrivateDirectory.ownersAndModes(base), "no POSIX owners and modes here");
        assertTrue(fs.supportedFileAttributeViews().contains("acl"));
    }

    @Test
    void aCreatedDirectoryIsOwnedByMeAndItsAclGrantsOnlyMe() throws Exception {
        Path dir = PrivateDirectory.ensure(base.resolve("qvm").resolve("state"));

        assertEquals(me, Files.getOwner(dir));
        List<AclEntry> acl = acl(dir);
        assertFalse(acl.isEmpty(), "an ACL that grants the owner");
        for (AclEntry e : acl) {
            assertTrue(e.type() != AclEntryType.ALLOW || e.principal().equals(me), "grants only me: " + acl);
        }
        assertTrue(acl.stream().anyMatch(e -> e.type() == AclEntryType.ALLOW && e.principal().equals(me)
                && e.permissions().containsAll(EnumSet.of(AclEntryPermission.READ_DATA, AclEntryPermission.WRITE_DATA,
                        AclEntryPermission.ADD_FILE, AclEntryPermission.DELETE_CHILD))), "" + acl);
        PrivateDirectory.verify(dir);
    }

    @Test
    void createNewMakesAPrivateDirectoryAndRefusesAnExistingOne() throws Exception {
        Path dir = PrivateDirectory.createNew(base.resolve("sandbox1"));
        PrivateDirectory.verify(dir);
        assertEquals(List.of(me), acl(dir).stream().map(AclEntry::principal).distinct().toList());
        assertThrows(FileAlreadyExistsException.class, () -> PrivateDirectory.createNew(dir));
    }

    @Test
    void ensureChainMakesEveryLevelPrivate() throws Exception {
        Path leaf = PrivateDirectory.ensureChain(base.resolve("qvm"), base.resolve("qvm\\images\\x86_64"));
        for (Path p = leaf; !p.equals(base); p = p.getParent()) {
            PrivateDirectory.verify(p);
        }
    }

    @Test
    void anExistingDirectoryOfAnotherUserIsRefusedNeverTakenOver() throws Exception {
        Path dir = Files.createDirectory(base.resolve("planted"));
        Files.getFileAttributeView(dir, AclFileAttributeView.class).setAcl(List.of(allow(me)));
        Files.setOwner(dir, mallory);

        UnsafeDirectoryException e = assertThrows(UnsafeDirectoryException.class, () -> PrivateDirectory.ensure(dir));
        assertEquals(UnsafeDirectoryException.Problem.FOREIGN_OWNER, e.problem());
        assertTrue(e.getMessage().contains("mallory"), e.getMessage());
        assertEquals(mallory, Files.getOwner(dir), "never chown-ed");
        assertThrows(UnsafeDirectoryException.class, () -> PrivateDirectory.verifyIfPresent(dir));
    }

    @Test
    void anExistingDirectoryOfMineWhoseAclGrantsSomeoneElseIsRefusedNeverChanged() throws Exception {
        Path dir = Files.createDirectory(base.resolve("shared"));
        UserPrincipal everyone = fs.getUserPrincipalLookupService().lookupPrincipalByName("Everyone");
        List<AclEntry> shared = new ArrayList<>(List.of(allow(me), allow(everyone)));
        Files.getFileAttributeView(dir, AclFileAttributeView.class).setAcl(shared);

        UnsafeDirectoryException e = assertThrows(UnsafeDirectoryException.class, () -> PrivateDirectory.ensure(dir));
        assertEquals(UnsafeDirectoryException.Problem.SHARED_MODE, e.problem());
        assertTrue(e.getMessage().contains("Everyone"), e.getMessage());
        assertTrue(e.getMessage().contains("icacls"), "says how to fix it: " + e.getMessage());
        assertEquals(shared, acl(dir), "never changed");
    }

    @Test
    void aDenyEntryForSomeoneElseTakesNothingFromPrivacy() throws Exception {
        Path dir = Files.createDirectory(base.resolve("denies"));
        AclEntry deny = AclEntry.newBuilder().setType(AclEntryType.DENY).setPrincipal(mallory)
                .setPermissions(EnumSet.allOf(AclEntryPermission.class)).build();
        Files.getFileAttributeView(dir, AclFileAttributeView.class).setAcl(List.of(deny, allow(me)));

        PrivateDirectory.verify(dir);
    }

    @Test
    void aSymlinkIsRefusedThereToo() throws Exception {
        Path target = PrivateDirectory.ensure(base.resolve("real"));
        Path link = Files.createSymbolicLink(base.resolve("link"), target);
        UnsafeDirectoryException e = assertThrows(UnsafeDirectoryException.class, () -> PrivateDirectory.ensure(link));
        assertEquals(UnsafeDirectoryException.Problem.SYMLINK, e.problem());
    }
}
