package io.qvm.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.qvm.internal.probe.HostInfo;
import io.qvm.internal.host.HostOs;
import io.qvm.protocol.image.Arch;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** {@code qvm doctor} on an x86_64 JDK under Rosetta 2 (the probe's verdict given, as HostProbe makes it). */
@Tag("unit")
class DoctorRosettaTest {

    @Test
    void rosettaIsAnErrorNamingTheArm64Jdk() {
        DoctorCommand.Problem p = DoctorCommand.rosetta(true)
                .orElseThrow();
        assertEquals("error", p.severity());
        assertTrue(p.what().contains("Rosetta 2"), p.what());
        assertTrue(p.fix().contains("arm64 (aarch64) JDK"), p.fix());
        assertTrue(p.fix().contains("qemu-system-aarch64"), p.fix());
    }

    @Test
    void aNativeJvmHasNoRosettaProblem() {
        assertEquals(Optional.empty(), DoctorCommand.rosetta(false));
    }
}
