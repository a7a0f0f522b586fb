package io.qvm.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.admin.HostReport;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code qvm doctor}'s reading of Yama's {@code ptrace_scope}, from a file laid out like
 * {@code /proc/sys/kernel/yama/ptrace_scope} (this host's is not a test's to set): 0 and a kernel
 * without Yama are warnings with their fix, 1 to 3 are active, and nothing is ever an error.
 */
@Tag("unit")
@Tag("security")
class DoctorPtraceScopeTest {

    @TempDir
    Path tmp;

    private Path scope(String value) throws Exception {
        return Files.writeString(tmp.resolve("ptrace_scope"), value + "\n");
    }

    @Test
    void zeroLetsAnyProcessOfQemusUserAttachAndIsAWarningWithTheFix() throws Exception {
        List<DoctorCommand.Problem> problems = new ArrayList<>();
        DoctorCommand.ConfinementEntry e = DoctorCommand.ptraceScope(HostReport.Os.LINUX, scope("0"), problems);
        assertEquals("ptrace", e.name());
        assertEquals("inactive", e.status());
        assertTrue(e.detail().startsWith("kernel.yama.ptrace_scope = 0, classic: any process running as QEMU's user "
                + "can ptrace QEMU"), e.detail());
        assertEquals(1, problems.size());
        assertEquals("warning", problems.get(0).severity());
        assertTrue(problems.get(0).fix().startsWith("sudo sysctl -w kernel.yama.ptrace_scope=1"), problems.get(0).fix());
    }

    @ParameterizedTest
    @ValueSource(strings = {"1", "2", "3"})
    void oneOrHigherIsActiveAndNoProblem(String value) throws Exception {
        List<DoctorCommand.Problem> problems = new ArrayList<>();
        DoctorCommand.ConfinementEntry e = DoctorCommand.ptraceScope(HostReport.Os.LINUX, scope(value), problems);
        assertEquals("active", e.status(), e.detail());
        assertTrue(e.detail().startsWith("kernel.yama.ptrace_scope = " + value + ", "), e.detail());
        assertEquals(List.of(), problems);
    }

    @Test
    void noYamaIsAWarningThatSaysYamaIsNotEnabled() {
        List<DoctorCommand.Problem> problems = new ArrayList<>();
        DoctorCommand.ConfinementEntry e = DoctorCommand.ptraceScope(HostReport.Os.LINUX, tmp.resolve("absent"), problems);
        assertEquals("inactive", e.status());
        assertTrue(e.detail().startsWith("Yama is not enabled in this kernel"), e.detail());
        assertEquals(1, problems.size());
        assertEquals("warning", problems.get(0).severity());
    }

    @Test
    void anUnknownValueIsAWarningNotAnError() throws Exception {
        List<DoctorCommand.Problem> problems = new ArrayList<>();
        DoctorCommand.ConfinementEntry e = DoctorCommand.ptraceScope(HostReport.Os.LINUX, scope("7"), problems);
        assertEquals("inactive", e.status());
        assertTrue(e.detail().contains("not a value Yama knows"), e.detail());
        assertEquals("warning", problems.get(0).severity());
    }

    @Test
    void notCheckedOffLinux() {
        List<DoctorCommand.Problem> problems = new ArrayList<>();
        assertEquals("not-needed", DoctorCommand.ptraceScope(HostReport.Os.MACOS, tmp.resolve("absent"), problems).status());
        assertEquals(List.of(), problems);
    }
}
