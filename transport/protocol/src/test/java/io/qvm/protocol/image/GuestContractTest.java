package io.qvm.protocol.image;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The parsers of the contract between the host and the guest init. */
@Tag("unit")
class GuestContractTest {

    @Test
    void theCommandLineIsReadLikeTheInitReadsIt() {
        Map<String, String> keys = KernelCommandLine.parse(" console=ttyS0 panic=-1 qvm.cpus=2 qvm.debug "
                + "qvm.port=qvm.worker  qvm.cpus=3 other.key=1");
        assertEquals(Map.of("qvm.cpus", "3", "qvm.port", "qvm.worker"), keys);
        assertEquals("qvm.xmx_mib=576", KernelCommandLine.Key.XMX_MIB.word(576));
        assertEquals("5000", KernelCommandLine.Key.VSOCK_PORT.initDefault());
    }

    @Test
    void markersAreFoundAfterOtherOutputOnTheLine() {
        ConsoleMarkers.Marker m = ConsoleMarkers.parse("[ 5.1] x qvm: phase=worker-exit status=-9 uptime=49.28")
                .orElseThrow();
        assertEquals(Optional.of("worker-exit"), m.phase());
        assertEquals(Optional.of(-9), m.status());
        assertEquals(Optional.of("49.28"), m.uptime());
        assertEquals(Optional.of("no port"), ConsoleMarkers.parse("qvm: error= no port ").orElseThrow().error());
        ConsoleMarkers.Marker unknown = ConsoleMarkers.parse("qvm: phase=later").orElseThrow();
        assertEquals(Optional.of("later"), unknown.phase());
        assertEquals(Optional.empty(), unknown.uptime());
        assertEquals(Optional.empty(), ConsoleMarkers.parse("qvm: hello"));
        assertEquals(Optional.empty(), ConsoleMarkers.parse("phase=init uptime=1"));
        assertEquals(Optional.empty(), ConsoleMarkers.parse("qvm: phase=runsc status=1 uptime=2").orElseThrow().status(),
                "a status only on worker-exit");
    }

    @Test
    void controlAnswersHaveOneShapeEach() {
        assertTrue(ControlProtocol.restoredPattern().matcher("restored ab1 clock=1700000000 forks=1").matches());
        assertTrue(ControlProtocol.pongPattern().matcher("pong " + "a".repeat(64)).matches());
        assertTrue(!ControlProtocol.pongPattern().matcher("pong " + "a".repeat(65)).matches());
        assertTrue(ControlProtocol.errorPattern().matcher("error - unknown-command").matches());
    }
}
