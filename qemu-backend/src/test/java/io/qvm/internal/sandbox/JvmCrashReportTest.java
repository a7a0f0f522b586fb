package io.qvm.internal.sandbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Finding the worker JVM's fatal-error summary on a console file, as HotSpot prints it to stderr. */
@Tag("unit")
class JvmCrashReportTest {

    @TempDir
    Path dir;

    @Test
    void theLastReportsSummaryIsFoundEscapedAndCapped() throws Exception {
        Path console = dir.resolve("console.log");
        String report = "#\n" + JvmCrashReport.BANNER + "\n#\n#  SIGSEGV (0xb) at pc=0x00007f0000001234, pid=1, tid=17\n#\n"
                + "# JRE version: OpenJDK Runtime Environment (17.0.21.1+2)\n# Problematic frame:\n"
                + "# C  [libawt.so+0x7b3c1]  \u001b[2Jloop" + "x".repeat(500) + "\n#\n\n---------------  S U M M A R Y ----\n";
        Files.writeString(console, "[ 1.0] boot\n" + report.replace("SIGSEGV", "SIGBUS") + "x".repeat(2 << 20)
                + report + "qvm: phase=worker-exit status=1 uptime=9.0\n", StandardCharsets.ISO_8859_1);
        List<String> lines = JvmCrashReport.find(console).orElseThrow();
        assertEquals(JvmCrashReport.BANNER.substring(2), lines.get(0));
        assertEquals("SIGSEGV (0xb) at pc=0x00007f0000001234, pid=1, tid=17", lines.get(1), "the last report");
        assertEquals("Problematic frame:", lines.get(3));
        assertTrue(lines.get(4).startsWith("C  [libawt.so+0x7b3c1]  \\x1b[2Jloop"), lines.get(4));
        assertTrue(lines.get(4).length() < 300, lines.get(4));
        assertTrue(JvmCrashReport.clause(console).startsWith("; the worker's JVM crashed (A fatal error"),
                JvmCrashReport.clause(console));
    }

    @Test
    void noReportNoClause() throws Exception {
        Path console = dir.resolve("console.log");
        Files.writeString(console, "qvm: phase=worker-exit status=134 uptime=9.0\n");
        assertEquals(Optional.empty(), JvmCrashReport.find(console));
        assertEquals("", JvmCrashReport.clause(console));
        assertEquals("", JvmCrashReport.clause(dir.resolve("missing")));
    }
}
