package io.qvm.image;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class InitScriptTest {
    private static final String INIT = InitScript.render("6.1.0-57-cloud-amd64",
            List.of(new KernelModules.Module("virtio_ring", "kernel/drivers/virtio/virtio_ring.ko"),
                    new KernelModules.Module("virtio", "kernel/drivers/virtio/virtio.ko")),
            "0.0~20240729.0-4+b7");

    @Test
    void printsEveryContractPhaseInOrder() {
        String[] phases = {"phase init", "phase modules", "phase rootfs", "phase port", "phase runsc",
            "phase=worker-exit status=$status"};
        int at = 0;
        for (String p : phases) {
            int i = INIT.indexOf(p, at);
            assertTrue(i >= 0, p + " missing or out of order");
            at = i;
        }
        assertTrue(INIT.contains("echo \"qvm: phase=$1 uptime=$(uptime_s)\""), "marker format");
        assertTrue(INIT.contains("echo \"qvm: phase=poweroff uptime="), "poweroff marker");
        assertTrue(INIT.substring(at).contains("\noff\n"), "powers off after the worker exits");
        assertTrue(INIT.contains("echo \"qvm: error=$*\""), "error format");
    }

    @Test
    void fillsKernelVersionAndModuleOrderAndNothingIsLeftUnfilled() {
        assertTrue(INIT.contains("KVER='6.1.0-57-cloud-amd64'"));
        assertTrue(INIT.contains("MODULES='kernel/drivers/virtio/virtio_ring.ko kernel/drivers/virtio/virtio.ko'"));
        assertFalse(INIT.matches("(?s).*@[A-Z_]+@.*"
                .replace("@[A-Z_]+@", "@(KVER|MODULES|RUNSC_VERSION)@")), "unfilled placeholder");
    }

    @Test
    void readsEveryContractKeyAndFillsTheOciTemplatePlaceholders() {
        for (String key : new String[] {"qvm.transport=", "qvm.port=", "qvm.vsock_port=", "qvm.xmx_mib=",
            "qvm.cpus=", "qvm.tmp_mib=", "qvm.platform="}) {
            assertTrue(INIT.contains(key), key);
        }
        assertTrue(INIT.contains("s/" + OciConfig.XMX_PLACEHOLDER + "/$XMX/g"));
        assertTrue(INIT.contains("s/" + OciConfig.CPUS_PLACEHOLDER + "/$CPUS/g"));
        assertTrue(INIT.contains("s/" + OciConfig.TMP_PLACEHOLDER + "/$TMP/g"));
        assertTrue(INIT.contains("/bundle/" + BundleBuilder.TEMPLATE));
        assertTrue(INIT.contains("--network=none"));
    }

    @Test
    void refusesShellMetacharactersInSubstitutedValues() {
        assertThrows(ImageException.class, () -> InitScript.render("6.1'; rm -rf /", List.of(), "1"));
    }
}
