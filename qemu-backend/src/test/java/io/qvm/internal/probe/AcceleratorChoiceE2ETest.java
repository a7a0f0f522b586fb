package io.qvm.internal.probe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.Accelerator;
import io.qvm.HostSetupException;
import io.qvm.protocol.image.Arch;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The accelerator this host really gets, probed with a real kernel under real QEMU. */
@Tag("e2e")
@Tag("qemu")
class AcceleratorChoiceE2ETest {

    /**
     * The selection this host really makes, with the image kernel. On the project's build
     * machines (nested virtualization) KVM must come out unusable and AUTO must fall back to TCG
     * with a warning; on a host where KVM works, KVM must be chosen. Either way the outcome must be
     * consistent with the functional verdict.
     */
    @Test
    void autoOnThisHostWithARealKernel() {
        HostInfo h = FunctionalCheckTest.realHost();
        Optional<Path> kernel = TestImages.x86Kernel();
        Assumptions.assumeTrue(kernel.isPresent() && h.arch() == Arch.X86_64,
                "no x86_64 kernel (set QVM_TEST_KERNEL or build out/image/x86_64)");
        AcceleratorSelector s = AcceleratorSelector.builder().kernel(kernel.get()).useCache(false)
                .hardwareDeadline(Duration.ofSeconds(20)).build();
        AcceleratorChoice c = s.select(Accelerator.AUTO, h);
        c.verdicts().forEach(v -> System.out.println("verdict: " + v));
        c.warning().ifPresent(w -> System.out.println("warning: " + w));
        LayerVerdict kvmLast = c.verdicts().stream().filter(v -> v.accelerator() == Accelerator.KVM)
                .reduce((a, b) -> b).orElseThrow();
        if (kvmLast.passed()) {
            assertEquals(Accelerator.KVM, c.accelerator());
        } else {
            assertEquals(Accelerator.TCG, c.accelerator());
            assertTrue(c.fellBack());
            assertTrue(c.warning().orElseThrow().contains("kvm is not usable"));
            HostSetupException e = assertThrows(HostSetupException.class,
                    () -> s.select(Accelerator.KVM, h));
            assertEquals(HostSetupException.Problem.ACCELERATOR_UNAVAILABLE, e.problem());
            assertTrue(e.getMessage().contains("layer '" + kvmLast.layer().label() + "' failed"), e.getMessage());
        }
    }
}
