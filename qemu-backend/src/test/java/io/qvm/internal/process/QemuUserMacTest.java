package io.qvm.internal.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.qvm.HostSetupException;
import io.qvm.internal.host.CommandRunner;
import io.qvm.internal.host.HostOs;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A root qvm on macOS, where accounts live in Directory Services (which neither
 * {@code /etc/passwd} nor a {@code getent} — there is none — sees): the lookup asks
 * {@code /usr/bin/id} then {@code /usr/bin/dscl}, replayed here with the outputs those tools print
 * (shaped after macOS 14; not recorded on a Mac), and the fix is a macOS one.
 */
@Tag("unit")
@Tag("security")
class QemuUserMacTest {

    private static final CommandRunner.Result NO_SUCH_USER = new CommandRunner.Result(1, "", "id: qvm: no such user\n", false);

    private static CommandRunner replay(Map<String, CommandRunner.Result> answers, List<String> asked) {
        return (argv, d) -> {
            String line = String.join(" ", argv);
            asked.add(line);
            if (!argv.get(0).startsWith("/")) {
                throw new UncheckedIOException(new IOException("Cannot run program \"" + argv.get(0) + "\": not on PATH"));
            }
            return answers.getOrDefault(line, new CommandRunner.Result(1, "", "unexpected: " + line, false));
        };
    }

    private static CommandRunner.Result out(String s) {
        return new CommandRunner.Result(0, s, "", false);
    }

    @Test
    void aDirectoryServicesUserIsFoundWithIdByAbsolutePath() {
        List<String> asked = new ArrayList<>();
        QemuUser.Accounts mac = QemuUser.Accounts.system(HostOs.MACOS, replay(Map.of(
                "/usr/bin/id -u qvm", out("499\n"), "/usr/bin/id -g qvm", out("-2\n")), asked));
        assertEquals(Optional.of(new QemuUser.Account("qvm", 499, -2)), mac.find("qvm"));
        assertEquals(List.of("/usr/bin/id -u qvm", "/usr/bin/id -g qvm"), asked);
        assertEquals(Optional.of(new QemuUser.Account("qvm", 499, -2)),
                QemuUser.of(0, "qvm", mac, HostOs.MACOS).dropTo());
    }

    @Test
    void dsclIsAskedWhenIdIsNotEnough() {
        List<String> asked = new ArrayList<>();
        QemuUser.Accounts mac = QemuUser.Accounts.system(HostOs.MACOS, replay(Map.of(
                "/usr/bin/id -u qvm", NO_SUCH_USER, "/usr/bin/id -g qvm", NO_SUCH_USER,
                "/usr/bin/dscl . -read /Users/qvm UniqueID PrimaryGroupID", out("PrimaryGroupID: -2\nUniqueID: 499\n")),
                asked));
        assertEquals(Optional.of(new QemuUser.Account("qvm", 499, -2)), mac.find("qvm"));
        assertTrue(asked.contains("/usr/bin/dscl . -read /Users/qvm UniqueID PrimaryGroupID"), asked.toString());
        assertTrue(asked.stream().noneMatch(c -> c.contains("getent")), asked.toString());
    }

    @Test
    void aMissingUserOnMacosGetsTheMacosFixNotUseradd() {
        QemuUser.Accounts mac = QemuUser.Accounts.system(HostOs.MACOS, replay(Map.of(
                "/usr/bin/id -u qvm", NO_SUCH_USER, "/usr/bin/id -g qvm", NO_SUCH_USER,
                "/usr/bin/dscl . -read /Users/qvm UniqueID PrimaryGroupID",
                new CommandRunner.Result(56, "", "<dscl_cmd> DS Error: -14136 (eDSRecordNotFound)\n", false)),
                new ArrayList<>()));
        QemuUser user = QemuUser.of(0, "qvm", mac, HostOs.MACOS);
        HostSetupException e = assertThrows(HostSetupException.class, user::dropTo);
        assertEquals(HostSetupException.Problem.HOST_SETUP_NEEDED, e.problem());
        assertFalse(e.getMessage().contains("useradd"), e.getMessage());
        assertTrue(e.getMessage().contains("run qvm as your own user instead (HVF needs no root on macOS)"), e.getMessage());
        assertTrue(e.getMessage().contains("sudo dscl . -create /Users/qvm UniqueID 499"), e.getMessage());
        assertTrue(e.getMessage().contains("IsHidden 1"), e.getMessage());
        assertEquals(QemuUser.createCommand(HostOs.MACOS, "qvm"), user.createCommand());
        assertTrue(QemuUser.of(0, "qvm", mac).createCommand().startsWith("useradd"), "Linux keeps useradd");
    }

    @Test
    void aRootAccountFromDirectoryServicesIsRefused() {
        QemuUser.Accounts mac = QemuUser.Accounts.system(HostOs.MACOS, replay(Map.of(
                "/usr/bin/id -u qvm", out("0\n"), "/usr/bin/id -g qvm", out("0\n")), new ArrayList<>()));
        assertThrows(HostSetupException.class, () -> QemuUser.of(0, "qvm", mac, HostOs.MACOS).dropTo());
    }
}
