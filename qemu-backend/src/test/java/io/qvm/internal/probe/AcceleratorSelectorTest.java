package io.qvm.internal.probe;

import io.qvm.internal.host.QemuInstallation;
import io.qvm.internal.host.QemuVersion;

import io.qvm.internal.host.HostOs;
import io.qvm.HostSetupException;
import io.qvm.protocol.image.Arch;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.qvm.Accelerator;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Selection logic over scripted layers (each layer a tiny strategy; these are stand-ins for the host). */
@Tag("unit")
class AcceleratorSelectorTest {

    private static final HostInfo LINUX = new HostInfo(HostOs.LINUX, Arch.X86_64, Map.of());
    private static final AcceleratorCheck PASS = (a, h, g) -> LayerVerdict.pass(a, Layer.COMPILED_IN, "ok");

    private static AcceleratorCheck failing(Layer layer, Set<Accelerator> failFor, String reason, String fix) {
        return (a, h, g) -> failFor.contains(a) ? LayerVerdict.fail(a, layer, reason, fix)
                : LayerVerdict.pass(a, layer, "ok");
    }

    @Test
    void autoTakesTheNativeAcceleratorWhenEveryLayerPasses() {
        AcceleratorChoice c = new AcceleratorSelector(PASS, PASS, PASS).select(Accelerator.AUTO, LINUX);
        assertEquals(Accelerator.KVM, c.accelerator());
        assertFalse(c.fellBack());
        assertEquals(3, c.verdicts().size());
        assertTrue(c.warning().isEmpty());
    }

    @Test
    void autoFallsBackToTcgLoudlyWhenTheFunctionalProbeFails() {
        AcceleratorCheck functional = failing(Layer.FUNCTIONAL, Set.of(Accelerator.KVM),
                "guest did not reach its marker within 20 s", "use TCG");
        AcceleratorChoice c = new AcceleratorSelector(PASS, PASS, functional).select(Accelerator.AUTO, LINUX);
        assertEquals(Accelerator.TCG, c.accelerator());
        assertTrue(c.fellBack());
        String w = c.warning().orElseThrow();
        assertTrue(w.contains("falling back to TCG"), w);
        assertTrue(w.contains("kvm is not usable (layer 'functional': guest did not reach its marker"), w);
        assertEquals(6, c.verdicts().size(), "3 layers for kvm, 3 for tcg");
    }

    @Test
    void layersStopAtTheFirstFailure() {
        List<String> asked = new ArrayList<>();
        AcceleratorCheck host = failing(Layer.HOST_SUPPORT, Set.of(Accelerator.KVM), "/dev/kvm does not exist", "x");
        AcceleratorCheck functional = (a, h, g) -> {
            asked.add(a.qemuName());
            return LayerVerdict.pass(a, Layer.FUNCTIONAL, "ok");
        };
        AcceleratorChoice c = new AcceleratorSelector(PASS, host, functional).select(Accelerator.AUTO, LINUX);
        assertEquals(Accelerator.TCG, c.accelerator());
        assertEquals(List.of("tcg"), asked, "no functional probe for an accelerator the host does not offer");
    }

    @Test
    void explicitPreferenceThatFailsIsAnErrorNamingLayerAndFix() {
        AcceleratorCheck host = failing(Layer.HOST_SUPPORT, Set.of(Accelerator.KVM),
                "/dev/kvm exists but is not readable and writable", HostSupportCheck.FIX_KVM_GROUP);
        HostSetupException e = assertThrows(HostSetupException.class,
                () -> new AcceleratorSelector(PASS, host, PASS).select(Accelerator.KVM, LINUX));
        assertEquals(HostSetupException.Problem.ACCELERATOR_UNAVAILABLE, e.problem());
        assertTrue(e.getMessage().contains("layer 'host-support' failed"), e.getMessage());
        assertTrue(e.getMessage().contains("add your user to the kvm group"), e.getMessage());
    }

    @Test
    void explicitTcgIsTakenWithoutFallbackFlag() {
        AcceleratorChoice c = new AcceleratorSelector(PASS, PASS, PASS).select(Accelerator.TCG, LINUX);
        assertEquals(Accelerator.TCG, c.accelerator());
        assertFalse(c.fellBack());
    }

    @Test
    void foreignGuestGoesStraightToTcgWithoutCallingItAFallback() {
        List<Accelerator> asked = new ArrayList<>();
        AcceleratorCheck record = (a, h, g) -> {
            asked.add(a);
            return LayerVerdict.pass(a, Layer.COMPILED_IN, "ok");
        };
        AcceleratorChoice c = new AcceleratorSelector(record, PASS, PASS).select(Accelerator.AUTO, LINUX, Arch.AARCH64);
        assertEquals(Accelerator.TCG, c.accelerator());
        assertFalse(c.fellBack());
        assertEquals(List.of(Accelerator.TCG), asked);
    }

    @Test
    void whenEvenTcgFailsTheErrorSaysSo() {
        AcceleratorCheck compiled = failing(Layer.COMPILED_IN, Set.of(Accelerator.KVM, Accelerator.TCG),
                "no qemu-system-x86_64 found", "install qemu-system-x86 (apt-get install qemu-system-x86)");
        HostSetupException e = assertThrows(HostSetupException.class,
                () -> new AcceleratorSelector(compiled, PASS, PASS).select(Accelerator.AUTO, LINUX));
        assertEquals(HostSetupException.Problem.ACCELERATOR_UNAVAILABLE, e.problem());
        assertTrue(e.getMessage().contains("apt-get install qemu-system-x86"), e.getMessage());
    }

    @Test
    void compiledInCheckUsesWhatHostProbeFound() {
        QemuInstallation q = new QemuInstallation(Arch.AARCH64, java.nio.file.Path.of("/usr/bin/qemu-system-aarch64"),
                QemuVersion.of("7.2.22"), Set.of(Accelerator.TCG));
        HostInfo h = new HostInfo(HostOs.LINUX, Arch.X86_64, Map.of(Arch.AARCH64, q));
        assertTrue(new CompiledInCheck().check(Accelerator.TCG, h, Arch.AARCH64).passed());
        LayerVerdict kvm = new CompiledInCheck().check(Accelerator.KVM, h, Arch.AARCH64);
        assertFalse(kvm.passed());
        assertTrue(kvm.reason().contains("does not list kvm in -accel help (it lists tcg)"), kvm.reason());
        LayerVerdict none = new CompiledInCheck().check(Accelerator.TCG, h, Arch.X86_64);
        assertTrue(none.fix().contains("apt-get install qemu-system-x86"), none.fix());
    }
}
