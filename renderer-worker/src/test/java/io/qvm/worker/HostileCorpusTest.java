package io.qvm.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.Messages;
import io.qvm.protocol.RenderResult;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The whole {@link HostileCorpus} through one real worker ({@link Main}) in a child JVM with the
 * guest's default heap: every case gets its outcome, the same worker answers an ECHO after it, and
 * no OutOfMemoryError reaches the worker's top level. Prints the time per case and the OOM counts
 * (no timing assertions). A worker that died is replaced so the remaining cases still run, and the
 * test fails with the list of cases it lost.
 */
@Tag("unit")
@Tag("security")
@Timeout(value = 15, unit = java.util.concurrent.TimeUnit.MINUTES)
class HostileCorpusTest {

    /**
     * The guest worker's default {@code -Xmx}: SandboxConfig's default 1024 MiB of guest memory
     * less its {@code GUEST_OVERHEAD_MIB} (384) and the default 64 MiB {@code /tmp}.
     */
    static final int GUEST_HEAP_MIB = 1024 - 384 - 64;

    /**
     * The limits a guest worker gets in HELLO with SandboxConfig's defaults (as its console
     * prints them), so that host and guest judge every case alike.
     */
    static final io.qvm.protocol.Limits GUEST_LIMITS = new io.qvm.protocol.Limits(32 << 20, 64 << 20, 50_000_000,
            16_384, 1000, 120_000);

    @Test
    void everyCaseGetsItsOutcomeAndTheWorkerSurvives() throws Exception {
        List<HostileCase> cases = HostileCorpus.all();
        List<String> wrong = new ArrayList<>();
        List<String> died = new ArrayList<>();
        StringBuilder table = new StringBuilder(String.format("%-26s %-22s %-16s %-16s %8s%n", "class", "case",
                "expected", "got", "ms"));
        long caught = 0;
        long fatal = 0;
        ChildWorker w = start();
        try {
            long id = 0;
            for (HostileCase c : cases) {
                long t0 = System.nanoTime();
                String got;
                try {
                    w.send(Messages.toFrame(c.request().get(), ++id));
                    got = outcome(w.receive(), c);
                    w.send(Frame.of(FrameKind.ECHO, ++id, new byte[] {1}));
                    if (w.receive().kind() != FrameKind.ECHO_REPLY) {
                        died.add(c + ": no ECHO_REPLY after it");
                    }
                } catch (java.io.IOException e) {
                    got = "DIED";
                    int status = w.waitFor(10);
                    if (status == FatalErrors.OUT_OF_MEMORY_STATUS) {
                        fatal++;
                    }
                    died.add(c + ": worker exited with status " + status);
                    caught += count(w.stderr(), MemoryGuard.RECOVERED_LINE);
                    w.close();
                    w = start();
                }
                long ms = (System.nanoTime() - t0) / 1_000_000;
                table.append(String.format("%-26s %-22s %-16s %-16s %8d%n", c.attackClass(), c.name(), c.expected(),
                        got, ms));
                if (!got.equals(c.expected())) {
                    wrong.add(c + ", got " + got);
                }
            }
            w.send(Frame.of(FrameKind.GOODBYE, ++id, (byte[]) null));
            w.receive();
            assertEquals(0, w.waitFor(30), w.stderr());
            caught += count(w.stderr(), MemoryGuard.RECOVERED_LINE);
        } finally {
            w.close();
        }
        table.append("cases ").append(cases.size()).append(", out-of-memory caught in a render ").append(caught)
                .append(", fatal ").append(fatal).append('\n');
        System.out.print(table);
        assertEquals(List.of(), died, "cases after which the worker was gone");
        assertEquals(0, fatal, "OutOfMemoryErrors that reached the top level");
        assertEquals(List.of(), wrong, "cases with another outcome");
    }

    private static ChildWorker start() throws java.io.IOException {
        ChildWorker w = ChildWorker.start("-Xmx" + GUEST_HEAP_MIB + "m", "-XX:+UseSerialGC");
        w.handshake(GUEST_LIMITS);
        return w;
    }

    /** {@code OK}, {@code SIZE wxh} for an image of another size than expected, or the error code. */
    private static String outcome(Frame f, HostileCase c) {
        if (f.kind() == FrameKind.ERROR) {
            ErrorCode code = Messages.errorReply(f).code();
            return code.name();
        }
        RenderResult r = Messages.renderResult(f);
        if (c.width() != 0 && (r.width() != c.width() || r.height() != c.height())) {
            return "SIZE " + r.width() + "x" + r.height();
        }
        return "OK";
    }

    static long count(String text, String line) {
        long n = 0;
        for (int i = text.indexOf(line); i >= 0; i = text.indexOf(line, i + 1)) {
            n++;
        }
        return n;
    }
}
