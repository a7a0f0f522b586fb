package io.qvm.internal.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.qvm.HostSetupException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The policy "QEMU never runs as root", for a root and a non-root host alike (the uid and the accounts are given). */
@Tag("unit")
@Tag("security")
class QemuUserTest {

    private static final QemuUser.Account QVM = new QemuUser.Account("qvm", 998, 997);

    private static QemuUser.Accounts accounts(QemuUser.Account... known) {
        return name -> java.util.Arrays.stream(known).filter(a -> a.name().equals(name)).findFirst();
    }

    @Test
    void anUnprivilegedHostKeepsItsUserForQemu() {
        assertEquals(Optional.empty(), QemuUser.of(1000, "qvm", accounts()).dropTo());
        assertTrue(QemuUser.of(1000, "qvm", accounts()).describe().contains("uid 1000"));
    }

    @Test
    void aRootHostDropsToTheConfiguredUser() {
        assertEquals(Optional.of(QVM), QemuUser.of(0, "qvm", accounts(QVM)).dropTo());
        assertTrue(QemuUser.of(0, "qvm", accounts(QVM)).describe().contains("drops to user qvm (uid 998"));
    }

    @Test
    void aRootHostWithoutTheUserFailsClosedWithTheCommandThatCreatesIt() {
        HostSetupException e = assertThrows(HostSetupException.class, () -> QemuUser.of(0, "qvm", accounts()).dropTo());
        assertEquals(HostSetupException.Problem.HOST_SETUP_NEEDED, e.problem());
        assertTrue(e.getMessage().contains("useradd --system --no-create-home --shell /usr/sbin/nologin qvm"),
                e.getMessage());
        assertTrue(e.getMessage().contains("QVM_QEMU_USER"), e.getMessage());
    }

    @Test
    void rootItselfOrABadNameIsNeverTheUser() {
        QemuUser.Accounts withRoot = accounts(new QemuUser.Account("root", 0, 0), new QemuUser.Account("toor", 0, 0));
        assertThrows(HostSetupException.class, () -> QemuUser.of(0, "root", withRoot).dropTo());
        assertThrows(HostSetupException.class, () -> QemuUser.of(0, "toor", withRoot).dropTo());
        assertThrows(HostSetupException.class, () -> QemuUser.of(0, "qvm,chroot=/", accounts(QVM)).dropTo());
    }

    @Test
    void accountsAreReadFromAPasswdFile(@TempDir Path tmp) throws Exception {
        Path passwd = Files.writeString(tmp.resolve("passwd"), "root:x:0:0:root:/root:/bin/bash\n"
                + "# comment\nbroken line\nqvm:x:998:997::/nonexistent:/usr/sbin/nologin\nqvm2:x:nan:1::/:/bin/false\n");
        assertEquals(Optional.of(QVM), QemuUser.fromPasswd(passwd, "qvm"));
        assertEquals(Optional.empty(), QemuUser.fromPasswd(passwd, "qvm2"));
        assertEquals(Optional.empty(), QemuUser.fromPasswd(passwd, "nobody"));
        assertEquals(Optional.empty(), QemuUser.fromPasswd(tmp.resolve("missing"), "qvm"));
    }

    @Test
    void theSystemLookupFindsRoot() {
        // every POSIX host has root in its user database; this is the real lookup, not a fake
        assertEquals(0, QemuUser.Accounts.system().find("root").orElseThrow().uid());
        assertEquals("sandboxer", QemuUser.system(io.qvm.internal.host.QvmEnvironment.of(Map.of("QVM_QEMU_USER", "sandboxer")))
                .wantedUser());
    }
}
