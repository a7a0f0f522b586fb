package io.qvm.image;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.qvm.protocol.image.InitEvents;
import io.qvm.protocol.image.InitEvents.Phase;
import io.qvm.protocol.image.ControlProtocol;
import io.qvm.protocol.image.KernelCommandLine;
import io.qvm.protocol.image.KernelCommandLine.Key;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("unit")
class InitScriptTest {
    /** Generous: the shell's waits are short, but this machine may be busy. */
    private static final Duration PATIENCE = Duration.ofSeconds(30);
    private static final String INIT = InitScript.render("6.1.0-57-cloud-amd64",
            List.of(new KernelModules.Module("virtio_ring", "kernel/drivers/virtio/virtio_ring.ko"),
                    new KernelModules.Module("virtio", "kernel/drivers/virtio/virtio.ko")),
            "0.0~20240729.0-4+b7");

    @Test
    void printsEveryContractPhaseInOrder() {
        String[] phases = {"phase init", "phase modules", "phase rootfs", "phase port", "phase control",
            "phase archive-make", "phase=archive bytes=$bytes", "phase runsc", "phase=worker-exit status=$status"};
        int at = 0;
        for (String p : phases) {
            int i = INIT.indexOf(p, at);
            assertTrue(i >= 0, p + " missing or out of order");
            at = i;
        }
        assertTrue(INIT.contains("event \"qvm: phase=$1 uptime=$(uptime_s)\""), "event format");
        assertTrue(INIT.contains("event \"qvm: phase=poweroff uptime="), "poweroff event");
        assertTrue(INIT.substring(at).contains("\noff\n"), "powers off after the worker exits");
        assertTrue(INIT.contains("event \"qvm: error=$*\""), "error format");
        assertTrue(INIT.contains("        echo \"$1\" >&5\n"), "an event goes to the events port (fd 5)");
    }

    /**
     * The init side of the events contract: the lines the init reports, with their shell
     * expansions done by hand, are exactly the phases of {@link InitEvents}, and its parser
     * reads each of them.
     */
    @Test
    void thePhasesTheInitPrintsAreThoseOfTheContract() {
        Set<Phase> printed = EnumSet.noneOf(Phase.class);
        Matcher calls = Pattern.compile("(?m)^\\s*phase (\\S+)$").matcher(INIT);
        List<String> lines = new ArrayList<>();
        while (calls.find()) {
            lines.add("qvm: phase=" + calls.group(1) + " uptime=1.50"); // what phase() echoes
        }
        Matcher echoes = Pattern.compile("(?m)^\\s*event \"(qvm: phase=[a-z-]+ .*)\"$").matcher(INIT);
        while (echoes.find()) {
            lines.add(echoes.group(1).replace("$status", "0").replace("$bytes", "23941120").replace("$(uptime_s)", "1.50"));
        }
        for (String line : lines) {
            InitEvents.Event m = InitEvents.parse(line).orElseThrow(() -> new AssertionError(line));
            Phase p = m.phase().orElseThrow(() -> new AssertionError("not a phase of the contract: " + line));
            assertEquals(1_500_000_000L, m.uptimeNanos(), line);
            assertTrue(printed.add(p), "printed twice: " + p);
        }
        assertEquals(EnumSet.allOf(Phase.class), printed);
        assertEquals(0, InitEvents.parse(lines.get(lines.size() - 1)).orElseThrow().status().orElseThrow());
    }

    /** The template names every shared word by a placeholder: no key, marker or phase is written out. */
    @Test
    void theTemplateHoldsNoLiteralContractWord() {
        String template = InitScript.template();
        for (Key k : Key.values()) {
            assertFalse(template.contains(k.key()), k.key());
            assertTrue(INIT.contains(k.key()) || k == Key.ROOTFS && INIT.contains("qvm.rootfs=copy"), k.key());
        }
        assertFalse(template.contains(InitEvents.PREFIX), InitEvents.PREFIX);
        assertFalse(template.contains(KernelCommandLine.WORKER_PORT));
        assertFalse(template.contains(KernelCommandLine.CONTROL_PORT));
        assertFalse(template.contains(KernelCommandLine.EVENTS_PORT));
        for (Phase p : Phase.values()) {
            assertFalse(template.contains("phase " + p.id() + "\n"), p.id());
        }
        Matcher m = Pattern.compile("@([A-Z][A-Z0-9_]*)@").matcher(template);
        while (m.find()) {
            String name = m.group(1);
            assertTrue(InitScript.contractWords().containsKey(name) || Set.of("KVER", "MODULES", "RUNSC_VERSION")
                    .contains(name), name);
        }
    }

    @Test
    void fillsKernelVersionAndModuleOrderAndNothingIsLeftUnfilled() {
        assertTrue(INIT.contains("KVER='6.1.0-57-cloud-amd64'"));
        assertTrue(INIT.contains("MODULES='kernel/drivers/virtio/virtio_ring.ko kernel/drivers/virtio/virtio.ko'"));
        assertFalse(INIT.matches("(?s).*@[A-Z_]+@.*"
                .replace("@[A-Z_]+@", "@(KVER|MODULES|RUNSC_VERSION)@")), "unfilled placeholder");
    }

    /** The init side of the kernel command line contract: every key has its case, and its default. */
    @Test
    void readsEveryContractKeyAndFillsTheOciTemplatePlaceholders() {
        String loop = INIT.substring(INIT.lastIndexOf("for kv in $(cat /proc/cmdline); do"));
        loop = loop.substring(0, loop.indexOf("done\n"));
        String stage1 = INIT.substring(INIT.indexOf("for kv in $(cat /proc/cmdline); do"));
        stage1 = stage1.substring(0, stage1.indexOf("done\n"));
        assertTrue(stage1.contains(Key.EVENTS_PORT.key() + "=*) EVENTS_PORT="), "stage 1 reads the events port's name");
        assertTrue(INIT.contains("\n    EVENTS_PORT=" + Key.EVENTS_PORT.initDefault() + "\n"), "its default");
        for (Key k : Key.values()) {
            if (k == Key.EVENTS_PORT) {
                continue;
            }
            if (k == Key.ROOTFS) {
                assertTrue(INIT.contains("grep -q '" + k.word(KernelCommandLine.ROOTFS_COPY) + "' /proc/cmdline"));
                continue;
            }
            Matcher m = Pattern.compile(Pattern.quote(k.key()) + "=\\*\\) ([A-Z_]+)=").matcher(loop);
            assertTrue(m.find(), k.key());
            assertTrue(INIT.contains("\n" + m.group(1) + "=" + k.initDefault() + "\n"), k + " default");
        }
        assertTrue(INIT.contains("s/" + OciConfig.XMX_PLACEHOLDER + "/$XMX/g"));
        assertTrue(INIT.contains("s/" + OciConfig.CPUS_PLACEHOLDER + "/$CPUS/g"));
        assertTrue(INIT.contains("s/" + OciConfig.TMP_PLACEHOLDER + "/$TMP/g"));
        assertTrue(INIT.contains("s/" + OciConfig.JIT_LEVEL_PLACEHOLDER + "/$JIT_LEVEL/g"));
        assertTrue(INIT.contains("    " + KernelCommandLine.JIT_TIERED + ") JIT_LEVEL=" + OciConfig.JIT_LEVEL_TIERED + " ;;\n"
                + "    " + KernelCommandLine.JIT_C1 + ") JIT_LEVEL=" + OciConfig.JIT_LEVEL_C1 + " ;;\n"
                + "    *) fail \"" + Key.JIT.key() + "=$JIT: expected tiered or c1\" ;;\n"), "qvm.jit is checked, fails closed");
        assertTrue(INIT.contains("/bundle/" + BundleBuilder.TEMPLATE));
        assertTrue(INIT.contains("--network=none"));
        assertTrue(INIT.contains(" --oci-seccomp\n"), "runsc enforces the bundle's seccomp profile");
    }

    @Test
    void findsEveryPortWithOneFunctionAndTheControlPortIsOptional() {
        assertTrue(INIT.contains("CONTROL_PORT=qvm.control\n"), "default control port name");
        assertTrue(INIT.contains("find_port \"$PORT\" 200 || fail "), "the worker port is required (10 s)");
        assertTrue(INIT.contains("find_port \"$EVENTS_PORT\" 200 || fail "), "the events port is required (10 s)");
        assertTrue(INIT.contains("if find_port \"$CONTROL_PORT\" 40; then\n    exec 4<>\"$dev\""),
                "the control port is looked for 2 s, opened once as fd 4 only when found");
        assertEquals(1, count(INIT, "/sys/class/virtio-ports/vport*"), "one lookup, in find_port");
        int open = INIT.indexOf("exec 4<>\"$dev\"");
        int loop = INIT.indexOf("control_loop <&4 >&4 2>/dev/null 3>&- 4>&- 5>&- &");
        int runsc = INIT.indexOf("phase runsc");
        assertTrue(open > 0 && open < loop && loop < runsc, "fd 4 opened, then the loop started, then runsc");
    }

    @Test
    void theWorkerAndItsRelaysNeverInheritTheControlPort() {
        List<String> started = INIT.lines().map(String::strip)
                .filter(l -> l.startsWith("runsc ") || l.startsWith("cat <") || l.startsWith("perl -e \"$RELAY\" <")).toList();
        assertEquals(6, started.size(), started.toString());
        for (String l : started) {
            assertTrue(l.contains(" 4>&- 5>&-"), l);
        }
        assertTrue(INIT.contains("control_loop <&4 >&4 2>/dev/null 3>&- 4>&- 5>&- &"), "nor the control loop");
        assertTrue(INIT.contains("cap_stderr " + InitEvents.SANDBOX_STDERR_MAX_BYTES
                + " </run/qvm.err >/dev/console 2>&1 3>&- 4>&- 5>&- &"), "nor the stderr cap");
        assertEquals(2, count(INIT, " 2>/run/qvm.err "), "runsc's stderr goes through the cap, in both modes");
        assertFalse(INIT.contains("2>/dev/console"), "nothing of the sandbox reaches the console directly");
        int open = INIT.indexOf("exec 5>\"$dev\"");
        assertTrue(open > 0 && open < INIT.indexOf("exec switch_root") && open < INIT.indexOf("exec chroot"),
                "the events port is opened in stage 1, before the re-root");
        String block = controlBlock();
        for (String s : new String[] {">&3", "/dev/console", "phase ", "qvm:"}) {
            assertFalse(block.contains(s), "the control loop writes only to its port: " + s);
        }
        for (String applet : new String[] {"date", "dmesg", "grep", "usleep", "sleep"}) {
            assertTrue(InitScript.APPLETS.contains(applet), applet);
        }
    }

    /**
     * The stderr cap run by busybox sh: what stays under the cap passes unchanged; past it, one
     * notice, and the rest is read and dropped (so the writer never blocks on a full pipe).
     */
    @Test
    void theStderrCapPassesItsShareAndDrainsTheRest(@TempDir Path dir) throws Exception {
        assumeTrue(Files.isExecutable(Path.of("/bin/busybox")), "needs /bin/busybox");
        int from = INIT.indexOf("# ---- stderr cap");
        int to = INIT.indexOf("# ---- end of stderr cap ----");
        assertTrue(from >= 0 && to > from, "stderr cap markers");
        Files.writeString(dir.resolve("cap.sh"), INIT.substring(from, to) + "\ncap_stderr \"$1\"\n");
        byte[] small = "line one\nline two\n".getBytes(StandardCharsets.US_ASCII);
        assertEquals(new String(small, StandardCharsets.US_ASCII), runCap(dir, 1000, small));
        byte[] flood = new byte[3 << 20];
        java.util.Arrays.fill(flood, (byte) 'f');
        String out = assertTimeoutPreemptively(Duration.ofSeconds(60), () -> runCap(dir, 1000, flood));
        assertEquals("f".repeat(1000) + "[qvm init: the sandbox wrote more than 1000 bytes to stderr; the rest is "
                + "dropped]\n", out);
    }

    private static String runCap(Path dir, int cap, byte[] input) throws Exception {
        ProcessBuilder pb = new ProcessBuilder("/bin/busybox", "sh", "cap.sh", Integer.toString(cap))
                .directory(dir.toFile()).redirectError(ProcessBuilder.Redirect.INHERIT);
        pb.environment().put("PATH", "/bin");
        Process p = pb.start();
        Thread writer = new Thread(() -> {
            try (OutputStream o = p.getOutputStream()) {
                o.write(input);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        writer.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
        writer.join();
        assertEquals(0, p.waitFor());
        return out;
    }

    /**
     * The stdio relay run by busybox sh and perl, between two FIFOs as in the guest: 5 MiB of
     * random bytes written in bursts of small writes arrive whole and in order, the relay makes the
     * pipe it writes 1 MiB (read back with F_GETPIPE_SZ by the reader), and it ends with status 0
     * at the end of its input.
     */
    @Test
    void theStdioRelayCopiesEveryByteThroughMiBPipes(@TempDir Path dir) throws Exception {
        Relay relay = startRelay(dir, "");
        byte[] data = random(5 << 20, 7);
        Thread writer = writeInBackground(relay.in(), data, 3 * 4096);
        // The reader copies the relay's output to its stdout and says the pipe's size once its first
        // bytes came (the relay sizes its pipes before its first read).
        Process reader = new ProcessBuilder("perl", "-e", "binmode STDOUT; my $said; "
                + "while (sysread(STDIN, my $b, 65536)) { print $b; "
                + "print STDERR fcntl(STDIN, 1032, 0), \"\\n\" unless $said++ }")
                .redirectInput(relay.out().toFile()).start();
        byte[] got = assertTimeoutPreemptively(Duration.ofSeconds(60), () -> reader.getInputStream().readAllBytes());
        writer.join();
        assertTrue(relay.process().waitFor(30, TimeUnit.SECONDS), "the relay ends at the end of its input");
        assertEquals(0, relay.process().exitValue());
        assertTrue(java.util.Arrays.equals(data, got), "every byte, in order (" + got.length + " of " + data.length + ")");
        String size = new String(reader.getErrorStream().readAllBytes(), StandardCharsets.US_ASCII).strip();
        assertEquals("1048576", size, "the pipe the relay writes is 1 MiB");
    }

    /**
     * A relay whose reader is gone ends with status 1 at its first failed write, never blocks or
     * spins. SIGPIPE is ignored here, as a write to the port that fails never raises it: the write's
     * error itself must end the relay.
     */
    @Test
    void theStdioRelayEndsWhenItsReaderIsGone(@TempDir Path dir) throws Exception {
        Relay relay = startRelay(dir, "trap '' PIPE");
        Process reader;
        try (OutputStream o = Files.newOutputStream(relay.in())) {
            reader = new ProcessBuilder("head", "-c", "10").redirectInput(relay.out().toFile()).start();
            byte[] chunk = new byte[64 << 10];
            // the relay is gone once its write fails: then this write fails too (no reader left)
            assertTimeoutPreemptively(Duration.ofSeconds(60), () -> assertThrows(IOException.class, () -> {
                for (int i = 0; i < 10_000; i++) {
                    o.write(chunk);
                }
            }));
        }
        assertEquals("0123456789".length(), reader.getInputStream().readAllBytes().length);
        assertTrue(relay.process().waitFor(30, TimeUnit.SECONDS), "the relay ended");
        assertEquals(1, relay.process().exitValue(), "the failed write's status");
    }

    /**
     * Short writes: the relay stopped and continued every few milliseconds while it writes into a
     * pipe read slowly, so its writes are cut short by the signals (as a write of the port is cut at
     * 32 KiB); every byte still arrives once, in order.
     */
    @Test
    void theStdioRelayFinishesEveryShortWrite(@TempDir Path dir) throws Exception {
        Relay relay = startRelay(dir, "");
        byte[] data = random(5 << 20, 9);
        Thread writer = writeInBackground(relay.in(), data, data.length);
        Process signals = new ProcessBuilder("/bin/busybox", "sh", "-c",
                "while kill -STOP \"$1\" 2>/dev/null && kill -CONT \"$1\" 2>/dev/null; do usleep 3000; done", "sh",
                Long.toString(relay.process().pid())).start();
        java.io.ByteArrayOutputStream got = new java.io.ByteArrayOutputStream();
        assertTimeoutPreemptively(Duration.ofSeconds(120), () -> {
            try (java.io.InputStream r = Files.newInputStream(relay.out())) {
                byte[] b = new byte[64 << 10];
                for (int n; (n = r.read(b)) > 0;) {
                    got.write(b, 0, n);
                    Thread.sleep(2);
                }
            }
        });
        writer.join();
        assertTrue(relay.process().waitFor(30, TimeUnit.SECONDS), "the relay ends at the end of its input");
        signals.destroy();
        assertEquals(0, relay.process().exitValue());
        assertTrue(java.util.Arrays.equals(data, got.toByteArray()), "every byte once, in order (" + got.size() + " of "
                + data.length + ")");
    }

    /** Every relay a test started; killed after it, so a relay that never ends outlives no test. */
    private final List<Process> relays = new ArrayList<>();

    @org.junit.jupiter.api.AfterEach
    void killRelays() {
        relays.forEach(Process::destroyForcibly);
    }

    /** A relay started by {@link #startRelay}, reading FIFO {@code in} and writing FIFO {@code out}. */
    private record Relay(Process process, Path in, Path out) {
    }

    /**
     * The relay block run by busybox sh, after {@code prelude}, as {@code perl -e "$RELAY"} from a
     * new FIFO {@code dir/in} to a new FIFO {@code dir/out}; with no library path, as the image's
     * perl has no module. Its shell waits in the opens until both FIFOs have their other ends.
     */
    private Relay startRelay(Path dir, String prelude) throws IOException, InterruptedException {
        assumeTrue(Files.isExecutable(Path.of("/bin/busybox")), "needs /bin/busybox");
        Path in = dir.resolve("in");
        Path out = dir.resolve("out");
        mkfifo(in, out);
        int from = INIT.indexOf("# ---- stdio relay");
        int to = INIT.indexOf("# ---- end of stdio relay ----");
        assertTrue(from >= 0 && to > from, "stdio relay markers");
        Files.writeString(dir.resolve("relay.sh"), INIT.substring(from, to) + "\n" + prelude
                + "\nexec perl -e 'BEGIN { @INC = () }' -e \"$RELAY\" <\"$1\" >\"$2\"\n");
        ProcessBuilder pb = new ProcessBuilder("/bin/busybox", "sh", "relay.sh", in.toString(), out.toString())
                .directory(dir.toFile()).redirectError(ProcessBuilder.Redirect.INHERIT);
        pb.environment().put("PATH", "/usr/bin:/bin");
        Process p = pb.start();
        relays.add(p);
        return new Relay(p, in, out);
    }

    /**
     * A started thread that writes {@code data} to {@code fifo} in writes of 1 to {@code maxWrite}
     * bytes (sizes from a fixed seed), then closes it. Opening a FIFO waits for its other end, so
     * the writer is started before the relay's reader opens the relay's output.
     */
    private static Thread writeInBackground(Path fifo, byte[] data, int maxWrite) {
        Thread writer = new Thread(() -> {
            try (OutputStream o = Files.newOutputStream(fifo)) {
                java.util.Random sizes = new java.util.Random(8);
                for (int at = 0; at < data.length;) {
                    int n = Math.min(data.length - at, 1 + sizes.nextInt(maxWrite));
                    o.write(data, at, n);
                    at += n;
                }
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        writer.start();
        return writer;
    }

    private static byte[] random(int length, long seed) {
        byte[] b = new byte[length];
        new java.util.Random(seed).nextBytes(b);
        return b;
    }

    private static void mkfifo(Path... fifos) throws IOException, InterruptedException {
        for (Path f : fifos) {
            assertEquals(0, new ProcessBuilder("mkfifo", f.toString()).start().waitFor(), "mkfifo " + f);
        }
    }

    /** The control block run by busybox sh with fake date, dmesg, sleep, usleep, perl and vmgenid device, over a pipe. */
    @Test
    void controlLoopAnswersRestorePingAndBadInput(@TempDir Path dir) throws Exception {
        ShellLoop sh = ShellLoop.start(dir, null);
        try {
            assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
                Files.writeString(dir.resolve("dmesg.txt"), "random: crng init done\n");
                vmgenid(dir, true);
                Path usleeps = dir.resolve("usleep.log");
                String restored = sh.ask("restore 1700000000 t0");
                assertEquals("restored t0 clock=1700000000 forks=0 reseeded=0", restored,
                        "no reseed: the loop gives up and the host decides");
                assertTrue(ControlProtocol.restoredPattern().matcher(restored).matches(), "the host reads it");
                assertEquals(Collections.nCopies(60, "50000"), Files.readAllLines(usleeps),
                        "it gave up after 60 looks, 50 ms apart (3 s)");

                sh.send("restore 1700000100 abc");
                await().atMost(PATIENCE).until(() -> Files.readAllLines(usleeps).size() > 60);
                replace(dir.resolve("dmesg.txt"),
                        "random: crng init done\nrandom: crng reseeded due to virtual machine fork\n");
                assertEquals("restored abc clock=1700000100 forks=1 reseeded=0", sh.answer(),
                        "the reseed that came while it waited");
                assertEquals(List.of("1700000000", "1700000100"), Files.readAllLines(dir.resolve("set.log")),
                        "the helper set each");
                assertEquals("", Files.readString(dir.resolve("perl.log")), "no seed, no reseed");

                // with the host's seed: perl's two ioctls get it, and no vmgenid device means no wait
                String seed = "0123456789abcdef".repeat(4);
                vmgenid(dir, false);
                Files.writeString(dir.resolve("dmesg.txt"), "random: crng init done\n");
                int looks = Files.readAllLines(usleeps).size();
                assertEquals("restored s1 clock=1700000200 forks=0 reseeded=1", sh.ask("restore 1700000200 s1 " + seed));
                assertEquals(List.of(seed), Files.readAllLines(dir.resolve("perl.log")), "the seed, on perl's stdin");
                assertEquals(looks, Files.readAllLines(usleeps).size(), "no vmgenid device: nothing to wait for");
                Files.writeString(dir.resolve("perl.rc"), "4"); // RNDRESEEDCRNG refused
                assertEquals("restored s2 clock=1700000300 forks=0 reseeded=0", sh.ask("restore 1700000300 s2 " + seed));
                Files.writeString(dir.resolve("perl.rc"), "0");
                vmgenid(dir, true);
                Files.writeString(dir.resolve("dmesg.txt"), "random: crng reseeded due to virtual machine fork\n");
                assertEquals("restored s3 clock=1700000400 forks=1 reseeded=1", sh.ask("restore 1700000400 s3 " + seed),
                        "on a vmgenid machine both reseeds");
                assertTrue(ControlProtocol.restoredPattern().matcher("restored s3 clock=1700000400 forks=1 reseeded=1")
                        .matches());

                // a resumed sandbox: the clock alone, no reseed, no vmgenid wait
                int looksBefore = Files.readAllLines(usleeps).size();
                List<String> perlBefore = Files.readAllLines(dir.resolve("perl.log"));
                String set = sh.ask("setclock 1700000500 c1");
                assertEquals("clockset c1 clock=1700000500", set);
                assertTrue(ControlProtocol.clockSetPattern().matcher(set).matches(), "the host reads it");
                assertEquals("-s @1700000500\n", Files.readString(dir.resolve("date.log")), "setclock keeps date -s");
                assertEquals(looksBefore, Files.readAllLines(usleeps).size(), "setclock never waits for a reseed");
                assertEquals(perlBefore, Files.readAllLines(dir.resolve("perl.log")), "setclock never reseeds");

                // a step: the signed microseconds go to the helper, which reads and sets the clock
                Files.writeString(dir.resolve("step.log"), "");
                String stepped = sh.ask("step -1250000 k1");
                assertEquals("stepped k1 clock=1700000500.000042", stepped);
                assertTrue(ControlProtocol.steppedPattern().matcher(stepped).matches(), "the host reads it");
                assertEquals("stepped k2 clock=1700000500.000042", sh.ask("step 0 k2"));
                assertEquals("stepped k3 clock=1700000500.000042", sh.ask("step " + "9".repeat(
                        ControlProtocol.MAX_STEP_DIGITS) + " k3"));
                assertEquals(List.of("-1250000", "0", "9".repeat(ControlProtocol.MAX_STEP_DIGITS)),
                        Files.readAllLines(dir.resolve("step.log")));
                Files.writeString(dir.resolve("step.rc"), "5"); // clock_settime refused
                assertEquals("error k4 step-failed", sh.ask("step 7 k4"));
                Files.writeString(dir.resolve("step.rc"), "0");
                assertEquals(perlBefore, Files.readAllLines(dir.resolve("perl.log")), "a step never reseeds");

                // the helper refuses to set the clock: the restore fails, and says so
                Files.writeString(dir.resolve("set.rc"), "5");
                assertEquals("error r1 restore-failed", sh.ask("restore 1700000600 r1 " + seed));
                assertEquals(perlBefore, Files.readAllLines(dir.resolve("perl.log")), "nor reseeds after");
                Files.writeString(dir.resolve("set.rc"), "0");
                assertEquals(List.of(UNAME_M), Files.readAllLines(dir.resolve("helper.starts")),
                        "one helper, started with the loop and told the architecture");

                assertEquals("pong x", sh.ask("ping x"));
                assertEquals("pong " + "Z9".repeat(32), sh.ask("ping " + "Z9".repeat(32)));
                String[][] bad = {
                    {"restore 0 t1", "error t1 bad-command"},
                    {"restore 017 t2", "error t2 bad-command"},
                    {"restore 12345678901 t3", "error t3 bad-command"},
                    {"restore 1700000000", "error - bad-command"},
                    {"restore 1700000000 a-b", "error - bad-command"},
                    {"restore 1700000000 * ", "error - bad-command"},
                    {"restore x1 t4", "error t4 bad-command"},
                    {"restore 1700000000 t5 " + "0".repeat(63), "error t5 bad-command"},
                    {"restore 1700000000 t6 " + "0".repeat(65), "error t6 bad-command"},
                    {"restore 1700000000 t7 " + "A".repeat(64), "error t7 bad-command"},
                    {"restore 1700000000 t8 " + "0".repeat(64) + " x", "error t8 bad-command"},
                    {"restore 1700000000 t9 ../" + "0".repeat(61), "error t9 bad-command"},
                    {"setclock 1700000000", "error - bad-command"},
                    {"setclock 0 c2", "error c2 bad-command"},
                    {"setclock 1700000000 c3 " + "0".repeat(64), "error c3 bad-command"},
                    {"setclock x c4", "error c4 bad-command"},
                    {"step 5", "error - bad-command"},
                    {"step - s1", "error s1 bad-command"},
                    {"step --5 s2", "error s2 bad-command"},
                    {"step 1.5 s3", "error s3 bad-command"},
                    {"step 1" + "0".repeat(ControlProtocol.MAX_STEP_DIGITS) + " s4", "error s4 bad-command"},
                    {"step 5 s5 x", "error s5 bad-command"},
                    {"step +5 s6", "error s6 bad-command"},
                    {"ping", "error - bad-command"},
                    {"ping " + "a".repeat(65), "error - bad-command"},
                    {"ping ../etc", "error - bad-command"},
                    {"", "error - bad-command"},
                    {"reboot now", "error now unknown-command"},
                    {"reboot", "error - unknown-command"},
                    {"ping " + "x".repeat(200), "error - bad-command"},
                };
                for (String[] b : bad) {
                    assertEquals(b[1], sh.ask(b[0]), b[0]);
                }
                assertEquals("pong y", sh.ask("ping y"), "still serving");
                assertTrue(ControlProtocol.pongPattern().matcher("pong y").matches());
                for (String[] b : bad) {
                    assertTrue(ControlProtocol.errorPattern().matcher(b[1]).matches(), "the host reads " + b[1]);
                }
                assertEquals("", Files.readString(dir.resolve("sleep.log")), "no sleep while input flows");
            });
        } finally {
            sh.close();
        }
    }

    /**
     * A fake ACPI device directory: with or without vmgenid's {@code QEMUVGID:00} (and another
     * device beside it), which the init's real {@code control_vmgenid} lists (it runs under
     * {@code set -f}: a glob would never match).
     */
    private static void vmgenid(Path dir, boolean present) throws IOException {
        Path acpi = Files.createDirectories(dir.resolve("acpi"));
        Files.createDirectories(acpi.resolve("PNP0A08:00"));
        if (present) {
            Files.createDirectories(acpi.resolve("QEMUVGID:00"));
        } else {
            Files.deleteIfExists(acpi.resolve("QEMUVGID:00"));
        }
    }

    /**
     * A helper that does not answer is given up on after {@code CONTROL_HELPER_WAIT}, the word
     * fails, and the next word gets a fresh helper; a late answer of the old one is never taken
     * for the new one's.
     */
    @Test
    void aHelperThatDoesNotAnswerIsReplaced(@TempDir Path dir) throws Exception {
        ShellLoop sh = ShellLoop.start(dir, null);
        try {
            assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
                Files.writeString(dir.resolve("clock"), "1700000000");
                assertEquals("stepped a clock=1700000000.000042", sh.ask("step 0 a"));
                Files.writeString(dir.resolve("helper.hang"), "");
                assertEquals("error b step-failed", sh.ask("step 5 b"));
                assertEquals("error c restore-failed", sh.ask("restore 1700000100 c"), "a restore fails closed");
                Files.delete(dir.resolve("helper.hang"));
                assertEquals("stepped d clock=1700000000.000042", sh.ask("step 0 d"));
                assertEquals("pong e", sh.ask("ping e"));
                assertEquals(3, Files.readAllLines(dir.resolve("helper.starts")).size(),
                        "the first helper, one after each word it did not answer");
                assertEquals(List.of("0", "0"), Files.readAllLines(dir.resolve("step.log")), "the hung helpers did nothing");
            });
        } finally {
            sh.close();
        }
    }

    /**
     * The init's real helper with this host's perl, without {@code CAP_SYS_TIME} (setpriv), so it
     * can never move this host's clock: a step of 0 reads the clock (proving the clock_gettime
     * number and timespec layout against a real kernel: the answer is this host's clock to the
     * microsecond); a step or a set is refused by clock_settime (status 5); as root the seed goes
     * in through both ioctls (harmless: it only adds entropy; as anyone else RNDADDENTROPY is
     * refused, status 3); /dev/kmsg is read to its end without blocking; malformed lines get 9 or,
     * without an id, nothing.
     */
    @Test
    void theRealHelperReadsTheClockReseedsAndCountsWithoutTheRightToSetTheClock() throws Exception {
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/perl")), "needs /usr/bin/perl");
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/setpriv")), "needs /usr/bin/setpriv");
        assumeTrue(List.of("x86_64", "aarch64").contains(UNAME_M), "x86_64 or aarch64");
        Process p = new ProcessBuilder("/usr/bin/setpriv", "--inh-caps=-sys_time", "--bounding-set=-sys_time",
                "/usr/bin/perl", "-e", helperProgram(), UNAME_M).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        try (Writer in = new OutputStreamWriter(p.getOutputStream(), StandardCharsets.US_ASCII);
             BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.US_ASCII))) {
            assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
                long before = System.currentTimeMillis();
                String read = ask(in, out, "1 step 0");
                long after = System.currentTimeMillis();
                Matcher m = Pattern.compile("1 0 (\\d+\\.\\d{6})").matcher(read);
                assertTrue(m.matches(), read);
                assertTrue(ControlProtocol.steppedPattern().matcher("stepped t clock=" + m.group(1)).matches(), read);
                long millis = Math.round(Double.parseDouble(m.group(1)) * 1000);
                assertTrue(millis >= before - 5 && millis <= after + 5, read + " is not this host's clock, "
                        + before + ".." + after);
                assertEquals("2 5 ", ask(in, out, "2 step 1"), "clock_settime refused without CAP_SYS_TIME");
                assertEquals("3 5 ", ask(in, out, "3 set 1700000000"));
                byte[] seed = new byte[ControlProtocol.SEED_BYTES];
                new java.security.SecureRandom().nextBytes(seed);
                boolean root = "root".equals(System.getProperty("user.name"));
                assertEquals(root ? "4 0 " : "4 3 ", ask(in, out, "4 seed " + java.util.HexFormat.of().formatHex(seed)));
                String forks = ask(in, out, "5 forks");
                assertTrue(forks.matches(Files.isReadable(Path.of("/dev/kmsg")) ? "5 0 \\d+" : "5 2 "), forks);
                String[][] bad = {
                    {"6 step 1.5", "6 9 "},
                    {"7 step " + "1".repeat(16), "7 9 "},
                    {"8 set 0", "8 9 "},
                    {"9 seed " + "A".repeat(64), "9 9 "},
                    {"10 forks 1", "10 9 "},
                    {"11 step 0 0", "11 9 "},
                    {"12 reboot", "12 9 "},
                    {"13", "13 9 "},
                };
                for (String[] b : bad) {
                    assertEquals(b[1], ask(in, out, b[0]), b[0]);
                }
                in.write("x step 0\n\n1234567890 step 0\n");
                assertTrue(ask(in, out, "14 step 0").startsWith("14 0 "), "lines without an id go unanswered");
            });
        }
        assertTrue(p.waitFor(10, TimeUnit.SECONDS), "it ends with its input");
        assertEquals(0, p.exitValue());
    }

    private static String ask(Writer in, BufferedReader out, String line) throws IOException {
        in.write(line + "\n");
        in.flush();
        String a = out.readLine();
        assertNotNull(a, "the helper ended");
        return a;
    }

    /** The helper's perl program, as the init starts it. */
    private static String helperProgram() {
        Matcher m = Pattern.compile("perl -e '([^']*)'").matcher(controlBlock());
        assertTrue(m.find(), "the helper's program");
        return m.group(1);
    }

    private static final String UNAME_M = "amd64".equals(System.getProperty("os.arch")) ? "x86_64"
            : System.getProperty("os.arch");

    /**
     * The image carries perl's binary alone (ImageBuilder), not one module or pragma: every perl
     * program of the init must use builtins only (a {@code use integer} once made every step fail
     * in the guest while this host's full perl ran it fine).
     */
    @Test
    void thePerlOfTheInitUsesBuiltinsOnly() {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("perl -e '([^']*)'").matcher(INIT);
        int programs = 0;
        while (m.find()) {
            programs++;
            assertFalse(java.util.regex.Pattern.compile("\\b(use|no|require)\\s+[A-Za-z]|\\bdo\\s+['\"]|%!|\\$!\\{")
                    .matcher(m.group(1)).find(), "a module in the init's perl: " + m.group(1));
        }
        assertEquals(1, programs, "the control helper");
    }

    /** End of input (the host end disconnected) is retried once a second, and a reconnect is served. */
    @Test
    void controlLoopWaitsOutEndOfInputAndServesTheNextConnection(@TempDir Path dir) throws Exception {
        Path fifo = dir.resolve("port");
        ShellLoop sh = ShellLoop.start(dir, fifo);
        try {
            assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
                try (OutputStream host = Files.newOutputStream(fifo)) {
                    host.write("ping a\n".getBytes(StandardCharsets.US_ASCII));
                }
                assertEquals("pong a", sh.answer());
                Path sleeps = dir.resolve("sleep.log");
                await().atMost(PATIENCE).until(() -> Files.readAllLines(sleeps).size() >= 2);
                assertEquals(Set.of("1"), Set.copyOf(Files.readAllLines(sleeps)),
                        "end of input is waited out a second at a time, never spun on");
                assertTrue(sh.process.isAlive());
                try (OutputStream host = Files.newOutputStream(fifo)) {
                    host.write("ping b\n".getBytes(StandardCharsets.US_ASCII));
                }
                assertEquals("pong b", sh.answer());
            });
        } finally {
            sh.close();
        }
    }

    /** The control block of the script, between its markers. */
    private static String controlBlock() {
        int from = INIT.indexOf("# ---- control channel");
        int to = INIT.indexOf("# ---- end of control channel ----");
        assertTrue(from >= 0 && to > from, "control channel markers");
        return INIT.substring(from, to);
    }

    private static int count(String s, String part) {
        int n = 0;
        for (int i = s.indexOf(part); i >= 0; i = s.indexOf(part, i + 1)) {
            n++;
        }
        return n;
    }

    /** Replaces {@code file} at once, so a reader sees the old text or the new, never half. */
    private static void replace(Path file, String text) throws IOException {
        Path tmp = file.resolveSibling(file.getFileName() + ".new");
        Files.writeString(tmp, text);
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
    }

    /**
     * {@code control_loop} under the host's busybox sh, reading the process's stdin or a FIFO.
     * busybox sh runs its own applets before anything on PATH, so the fakes are shell functions,
     * defined before the block is sourced; the harness exits if {@code date} is not the fake, so
     * the host clock is never set.
     */
    private static final class ShellLoop implements AutoCloseable {
        private static final Path BUSYBOX = Path.of("/bin/busybox");
        private static final String HARNESS = String.join("\n",
                "date() {",
                "    case \"$1\" in",
                "        -s) printf '%s\\n' \"$*\" >>date.log; echo \"${2#@}\" >clock ;;",
                "        +%s) cat clock ;;",
                "        *) return 1 ;;",
                "    esac",
                "}",
                "sleep() { echo \"$1\" >>sleep.log; command sleep \"$1\"; }",
                "usleep() { echo \"$1\" >>usleep.log; command usleep \"$1\"; }",
                // the helper: the real one's protocol over the same FIFOs, its kernel calls faked by files
                "perl() {",
                "    [ \"$1\" = -e ] && [ -n \"$3\" ] || return 2",
                "    echo \"$3\" >>helper.starts",
                "    while read -r id op arg; do",
                "        [ -e helper.hang ] && continue",
                "        case \"$op\" in",
                "            step) echo \"$arg\" >>step.log; rc=$(cat step.rc)",
                "                if [ \"$rc\" = 0 ]; then echo \"$id 0 $(cat clock).000042\"; else echo \"$id $rc\"; fi ;;",
                "            set) echo \"$arg\" >>set.log; rc=$(cat set.rc); [ \"$rc\" = 0 ] && echo \"$arg\" >clock",
                "                echo \"$id $rc\" ;;",
                "            seed) echo \"$arg\" >>perl.log; echo \"$id $(cat perl.rc)\" ;;",
                "            forks) echo \"$id 0 $(grep -c 'crng reseeded due to virtual machine fork' dmesg.txt)\" ;;",
                "            *) echo \"$id 9\" ;;",
                "        esac",
                "    done",
                "}",
                ". ./control.sh",
                "ACPI_DEVICES=./acpi",
                "CONTROL_DIR=.",
                "CONTROL_HELPER_WAIT=1",
                "type date | grep -q function || exit 97",
                "type perl | grep -q function || exit 97",
                "[ -z \"$1\" ] || exec <\"$1\"",
                "control_loop",
                "");

        final Process process;
        private final Writer in;
        private final BufferedReader out;

        private ShellLoop(Process process) {
            this.process = process;
            this.in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.US_ASCII);
            this.out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.US_ASCII));
        }

        /** Starts the loop in {@code dir}; it reads {@code fifo} (created here) if given, else stdin. */
        static ShellLoop start(Path dir, Path fifo) throws IOException, InterruptedException {
            assumeTrue(Files.isExecutable(BUSYBOX), "needs " + BUSYBOX);
            Files.writeString(dir.resolve("control.sh"), controlBlock());
            Files.writeString(dir.resolve("harness.sh"), HARNESS);
            Files.writeString(dir.resolve("sleep.log"), "");
            Files.writeString(dir.resolve("usleep.log"), "");
            Files.writeString(dir.resolve("perl.log"), "");
            Files.writeString(dir.resolve("perl.rc"), "0");
            Files.writeString(dir.resolve("step.log"), "");
            Files.writeString(dir.resolve("step.rc"), "0");
            Files.writeString(dir.resolve("set.log"), "");
            Files.writeString(dir.resolve("set.rc"), "0");
            Files.writeString(dir.resolve("helper.starts"), "");
            List<String> cmd = new ArrayList<>(List.of(BUSYBOX.toString(), "sh", "harness.sh"));
            if (fifo != null) {
                Process mkfifo = new ProcessBuilder(BUSYBOX.toString(), "mkfifo", fifo.toString()).start();
                assertEquals(0, mkfifo.waitFor());
                cmd.add(fifo.toString());
            }
            ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile())
                    .redirectError(dir.resolve("stderr.txt").toFile());
            pb.environment().put("PATH", "/bin");
            return new ShellLoop(pb.start());
        }

        /** Sends one line and returns the one answer. */
        String ask(String line) throws IOException {
            send(line);
            return answer();
        }

        void send(String line) throws IOException {
            in.write(line + "\n");
            in.flush();
        }

        String answer() throws IOException {
            String a = out.readLine();
            if (a == null) {
                throw new IOException("the loop ended (status " + process.exitValue() + ")");
            }
            return a;
        }

        @Override
        public void close() throws InterruptedException {
            process.descendants().forEach(ProcessHandle::destroyForcibly); // the helper, in its subshell
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void refusesShellMetacharactersInSubstitutedValues() {
        assertThrows(ImageException.class, () -> InitScript.render("6.1'; rm -rf /", List.of(), "1"));
    }
}
