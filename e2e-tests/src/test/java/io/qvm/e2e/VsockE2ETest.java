package io.qvm.e2e;

import io.qvm.HostSetupException;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.qvm.QemuVmBackend;
import io.qvm.Sandbox;
import io.qvm.TransportPreference;
import io.qvm.internal.image.GuestImage;
import io.qvm.protocol.image.Arch;
import io.qvm.transport.vsock.VsockSupport;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** virtio-vsock end to end where the host has vhost-vsock; elsewhere the refusal is what is tested. */
@Tag("e2e")
@Tag("qemu")
class VsockE2ETest {

    @TempDir
    Path state;

    @Test
    void vsockEchoWhereTheHostHasVhostVsock() {
        VsockSupport.Verdict verdict = VsockSupport.probe();
        GuestImage image = GuestImage.load(E2e.imageRoot(), Arch.fromOsArch(System.getProperty("os.arch")).orElseThrow());
        assumeTrue(verdict.usable(), () -> {
            String why = "SKIPPED vsock end to end: " + verdict.reason();
            System.out.println(why);
            return why;
        });
        assumeTrue(image.transports().contains("vsock"), () -> {
            String why = "SKIPPED vsock end to end: the guest image supports only " + image.transports();
            System.out.println(why);
            return why;
        });
        try (QemuVmBackend backend = E2e.backend(state);
                Sandbox s = backend.start(E2e.config().transport(TransportPreference.VSOCK).build())) {
            byte[] payload = new byte[1 << 20];
            assertArrayEquals(payload, s.echo(payload));
        }
    }

    @Test
    void vsockRequestedWhereItIsUnusableFailsClosedWithTheReason() {
        assumeTrue(!VsockSupport.probe().usable(), "this host has vhost-vsock: covered by the test above");
        try (QemuVmBackend backend = E2e.backend(state)) {
            HostSetupException e = assertThrows(HostSetupException.class,
                    () -> backend.start(E2e.config().transport(TransportPreference.VSOCK).build()));
            assertEquals(HostSetupException.Problem.TRANSPORT_UNAVAILABLE, e.problem());
            E2e.log("refused as expected: " + e.getMessage());
        }
    }
}
