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
    void anEventIsAWholeLineOfTheContract() {
        InitEvents.Event exit = InitEvents.parse("qvm: phase=worker-exit status=134 uptime=49.28").orElseThrow();
        assertEquals(Optional.of(InitEvents.Phase.WORKER_EXIT), exit.phase());
        assertEquals(Optional.of(134), exit.status());
        assertEquals(49_280_000_000L, exit.uptimeNanos());
        assertEquals(5_000_000_001L, InitEvents.parse("qvm: phase=init uptime=5.000000001").orElseThrow().uptimeNanos());
        assertEquals(7_000_000_000L, InitEvents.parse("qvm: phase=runsc uptime=7").orElseThrow().uptimeNanos());
        assertEquals(Optional.of("no port"), InitEvents.parse("qvm: error= no port ").orElseThrow().error());
        InitEvents.Event archive = InitEvents.parse("qvm: phase=archive bytes=23941120 uptime=31.5").orElseThrow();
        assertEquals(Optional.of(InitEvents.Phase.ARCHIVE), archive.phase());
        assertEquals(Optional.of(23_941_120L), archive.bytes());
        assertEquals(Optional.empty(), archive.status());
        assertEquals(Optional.empty(), exit.bytes());
        for (String notAnEvent : new String[] {
            "[ 5.1] x qvm: phase=init uptime=1.0",             // not the whole line
            "qvm: phase=init uptime=1.0 ",                      // trailing text
            "qvm: phase=later uptime=1.0",                      // not a phase of the contract
            "qvm: phase=init",                                  // no uptime
            "qvm: phase=init uptime=-1",                        // not a number of seconds
            "qvm: phase=init uptime=1234567890",                // more than 9 digits
            "qvm: phase=worker-exit uptime=1.0",                // worker-exit without its status
            "qvm: phase=worker-exit status=-9 uptime=1.0",      // negative status
            "qvm: phase=worker-exit status=256 uptime=1.0",     // beyond a shell status
            "qvm: phase=worker-exit status=99999999999 uptime=1.0",
            "qvm: phase=runsc status=1 uptime=2",               // a status only on worker-exit
            "qvm: phase=archive uptime=1.0",                    // archive without its size
            "qvm: phase=archive bytes=-1 uptime=1.0",           // negative size
            "qvm: phase=archive bytes=1234567890123 uptime=1",  // more than 12 digits
            "qvm: phase=runsc bytes=1 uptime=2",                // a size only on archive
            "qvm: phase=archive status=0 uptime=1",             // nor a status
            "qvm: hello",
            "phase=init uptime=1",
            "qvm: error=" + "x".repeat(InitEvents.MAX_LINE),    // longer than a line may be
        }) {
            assertEquals(Optional.empty(), InitEvents.parse(notAnEvent), notAnEvent);
        }
    }

    @Test
    void controlAnswersHaveOneShapeEach() {
        assertTrue(ControlProtocol.restoredPattern().matcher("restored ab1 clock=1700000000 forks=1").matches());
        assertTrue(ControlProtocol.pongPattern().matcher("pong " + "a".repeat(64)).matches());
        assertTrue(!ControlProtocol.pongPattern().matcher("pong " + "a".repeat(65)).matches());
        assertTrue(ControlProtocol.errorPattern().matcher("error - unknown-command").matches());
    }
}
