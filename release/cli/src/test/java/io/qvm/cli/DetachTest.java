package io.qvm.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * How {@code qvm up --detach} puts its supervisor in a session of its own where there is no
 * {@code setsid(1)} (macOS), simulated on Linux by hiding it from {@link DetachLauncher.Detach#find}:
 * the chosen prefix is then run for real, in front of a shell that reports its session.
 */
@Tag("unit")
class DetachTest {

    private static final Predicate<Path> REAL = p -> Files.isRegularFile(p) && Files.isExecutable(p);

    private static Predicate<Path> without(String... names) {
        return p -> REAL.test(p) && !List.of(names).contains(p.getFileName().toString());
    }

    /** Runs prefix + sh -c script; returns its stdout lines and checks its exit code. */
    private static List<String> run(List<String> prefix, String script, int expectedExit) throws Exception {
        List<String> cmd = new ArrayList<>(prefix);
        cmd.addAll(List.of("/bin/sh", "-c", script));
        Process p = new ProcessBuilder(cmd).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the child exits");
        assertEquals(expectedExit, p.exitValue(), "the exit code reaches the launcher; output: " + out);
        return out.lines().toList();
    }

    /** Field 6 of /proc/self/stat: this process's session id. */
    private static String ourSession() throws IOException {
        String stat = Files.readString(Path.of("/proc/self/stat"));
        return stat.substring(stat.lastIndexOf(')') + 2).split(" ")[3];
    }

    private static final String REPORT_SESSION = "echo $$; s=$(cat /proc/$$/stat); s=${s##*) }; set -- $s; echo $4; exit 7";

    @Test
    void linuxUsesSetsid() {
        DetachLauncher.Detach d = DetachLauncher.Detach.find(REAL);
        assertTrue(d.prefix().get(0).endsWith("/setsid"), d.toString());
        assertEquals("-w", d.prefix().get(1));
    }

    @Test
    void withoutSetsidPerlStartsANewSessionAndExecsInPlace() throws Exception {
        DetachLauncher.Detach d = DetachLauncher.Detach.find(without("setsid"));
        assertEquals("/usr/bin/perl", d.prefix().get(0), d.toString());
        List<String> lines = run(d.prefix(), REPORT_SESSION, 7);
        assertEquals(lines.get(0), lines.get(1), "the supervisor leads a session of its own: " + lines);
        assertNotEquals(ourSession(), lines.get(1));
    }

    @Test
    void perlPassesArgumentsThroughUntouched() throws Exception {
        DetachLauncher.Detach d = DetachLauncher.Detach.find(without("setsid"));
        List<String> cmd = new ArrayList<>(d.prefix());
        cmd.addAll(List.of("/bin/sh", "-c", "printf '%s|' \"$@\"", "sh", "-cp", "a b", "--", "$HOME", "-e"));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals("-cp|a b|--|$HOME|-e|", out);
    }

    @Test
    void withoutSetsidAndPerlNohupIgnoresSighup() throws Exception {
        DetachLauncher.Detach d = DetachLauncher.Detach.find(without("setsid", "perl"));
        assertTrue(d.prefix().get(0).endsWith("/nohup"), d.toString());
        List<String> lines = run(d.prefix(), "grep SigIgn /proc/$$/status; exit 7", 7);
        String mask = lines.stream().filter(l -> l.startsWith("SigIgn:")).findFirst().orElseThrow().split("\\s+")[1];
        assertEquals(1, Long.parseLong(mask, 16) & 1, "SIGHUP (signal 1) is ignored: " + lines);
    }

    @Test
    void withNothingTheSupervisorStartsAsItIs() {
        DetachLauncher.Detach d = DetachLauncher.Detach.find(p -> false);
        assertEquals(List.of(), d.prefix());
    }
}
