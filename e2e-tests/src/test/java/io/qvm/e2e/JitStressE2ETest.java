package io.qvm.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;
import io.qvm.internal.probe.HostInfo;
import io.qvm.internal.probe.HostProbe;
import io.qvm.internal.host.QemuInstallation;
import io.qvm.internal.sandbox.JvmCrashReport;
import io.qvm.image.ImageBuilder;
import io.qvm.probe.JitStress;
import io.qvm.protocol.image.Arch;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The experiment behind the worker JVM's intermittent native crash in the guest: {@link JitStress}
 * (the JIT patching code that another thread runs, as fast as it can) in guests booted with
 * multi-threaded TCG (one host thread per vCPU) and with single-threaded TCG (one host thread for
 * all vCPUs, qvm's choice since this measurement: MachineProfile), counting the boots whose JVM
 * crashed. Off by default (it is a
 * measurement, not a check): {@code -Dqvm.jitstress.boots=N} boots N guests of each kind, each
 * stressed for {@code -Dqvm.jitstress.seconds} (default 60); {@code -Dqvm.jitstress.arch=aarch64} stresses
 * the aarch64 guest (emulated), {@code -Dqvm.jitstress.threading=multi|single} one kind only. It asserts only that every boot ended
 * with a result or a crash report (a guest whose JVM never started is counted apart, {@code NO START}), and
 * prints the counts.
 */
@Tag("e2e")
@Tag("qemu")
@Tag("fault")
class JitStressE2ETest {

    @TempDir
    Path tmp;

    @Test
    void countsJvmCrashesUnderJitPatchingWithMultiAndSingleThreadedTcg() throws Exception {
        int boots = Integer.getInteger("qvm.jitstress.boots", 0);
        assumeTrue(boots > 0, "a measurement: run with -Dqvm.jitstress.boots=N");
        int seconds = Integer.getInteger("qvm.jitstress.seconds", 60);
        HostInfo host = HostProbe.system().probe();
        assumeTrue(host.arch() == Arch.X86_64, "x86_64 hosts only");
        Arch guest = Arch.parse(System.getProperty("qvm.jitstress.arch", "x86_64"));
        List<String> threadings = System.getProperty("qvm.jitstress.threading") == null
                ? List.of("thread=multi", "thread=single") : List.of("thread=" + System.getProperty("qvm.jitstress.threading"));
        QemuInstallation qemu = host.qemu(guest).orElseThrow();
        ImageBuilder.Result image = ProbeGuests.image(tmp.resolve("stress"), JitStress.class, guest);
        Map<String, List<String>> results = new LinkedHashMap<>();
        for (int i = 0; i < boots; i++) {
            for (String threading : threadings) {
                Path run = Files.createDirectories(tmp.resolve("r" + i + threading.substring(7)));
                List<String> argv = new ArrayList<>();
                for (String a : ProbeGuests.argv(host, qemu, image, run, guest)) {
                    argv.add(a.replaceAll("thread=(single|multi)", threading));
                }
                String outcome = boot(argv, run, seconds);
                results.computeIfAbsent(threading, k -> new ArrayList<>()).add(outcome);
                E2e.log("jitstress " + threading + " boot " + (i + 1) + ": " + outcome);
            }
        }
        results.forEach((k, v) -> E2e.log("jitstress " + k + ": " + v.stream().filter(o -> o.startsWith("CRASH"))
                .count() + " crashed of " + v.size() + " " + v));
        for (List<String> v : results.values()) {
            assertEquals(0, v.stream().filter(o -> o.startsWith("NO RESULT")).count(), v.toString());
        }
    }

    private static String boot(List<String> argv, Path run, int seconds) throws Exception {
        Process p = new ProcessBuilder(argv).redirectErrorStream(true).redirectOutput(run.resolve("qemu.out").toFile())
                .start();
        try {
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(60))
                    .until(() -> Files.exists(run.resolve("worker.sock")) || !p.isAlive());
            String result;
            try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
                ch.connect(UnixDomainSocketAddress.of(run.resolve("worker.sock")));
                try {
                    ProbeGuests.readLine(ch, Duration.ofMinutes(6), run);
                } catch (AssertionError silent) {
                    // a JVM that never started (an emulated boot's silent start: README, known
                    // problems) stressed nothing: counted apart, neither a result nor a crash
                    p.destroyForcibly();
                    p.waitFor(1, TimeUnit.MINUTES);
                    return JvmCrashReport.find(run.resolve("console.log")).map(c -> "CRASH " + c)
                            .orElse("NO START " + silent.getMessage().lines().findFirst().orElse(""));
                }
                ch.write(ByteBuffer.wrap(("stress " + seconds + "\n").getBytes(StandardCharsets.US_ASCII)));
                try {
                    result = ProbeGuests.readLine(ch, Duration.ofSeconds(seconds * 20L + 120), run);
                } catch (AssertionError e) {
                    result = null;
                }
            }
            p.waitFor(2, TimeUnit.MINUTES);
            java.util.Optional<List<String>> crash = JvmCrashReport.find(run.resolve("console.log"));
            if (crash.isPresent()) {
                return "CRASH " + crash.get();
            }
            return result != null ? "OK " + result : "NO RESULT";
        } finally {
            p.destroyForcibly();
            p.waitFor();
        }
    }
}
