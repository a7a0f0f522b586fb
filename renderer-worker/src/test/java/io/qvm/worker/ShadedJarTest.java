package io.qvm.worker;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.qvm.transport.Frame;
import io.qvm.transport.FrameKind;
import io.qvm.transport.Ready;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIf;

/**
 * The shaded jar the guest runs ({@code java -jar target/renderer-worker.jar}): its manifest, its
 * merged service files and its minimised classes must still serve. Runs when a previous
 * {@code mvn package} left the jar in {@code target/} (surefire runs before the package phase).
 */
@Timeout(120)
@EnabledIf("io.qvm.worker.ChildWorker#shadedJarExists")
class ShadedJarTest {

    @Test
    void theJarStartsAndServes() throws Exception {
        try (ChildWorker w = ChildWorker.startJar(ChildWorker.shadedJar())) {
            Ready ready = w.handshake(ChildWorker.LIMITS);
            assertNotEquals(WorkerVersion.UNKNOWN, ready.version(), "Implementation-Version from the manifest");
            w.send(Frame.of(FrameKind.ECHO, 1, new byte[] {4, 5, 6}));
            assertArrayEquals(new byte[] {4, 5, 6}, w.receive().body());
            w.send(Frame.of(FrameKind.GOODBYE, 2, (byte[]) null));
            assertEquals(FrameKind.GOODBYE, w.receive().kind());
            assertEquals(0, w.waitFor(30), w.stderr());
        }
    }
}
