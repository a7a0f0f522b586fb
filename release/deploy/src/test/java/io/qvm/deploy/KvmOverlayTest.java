package io.qvm.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.qvm.Accelerator;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * overlays/kvm: /dev/kvm through the device plugin's resource, and {@code --accelerator kvm}; the
 * rest as the base has it (ManifestsTest checks both against qvm serve).
 */
@Tag("unit")
class KvmOverlayTest {

    /** squat/generic-device-plugin's resource for /dev/kvm (deployment-kvm.yaml says how to run the plugin). */
    static final String KVM_RESOURCE = "squat.ai/kvm";

    @Test
    void theContainerAsksForKvmByTheDevicePluginsResource() {
        Rendered kvm = Rendered.of("overlays/kvm");
        Map<String, Quantity> requests = kvm.serve().getResources().getRequests();
        Map<String, Quantity> limits = kvm.serve().getResources().getLimits();
        assertNotNull(limits.get(KVM_RESOURCE), "limits name " + KVM_RESOURCE + ": " + limits);
        assertEquals(Quantity.parse("1"), limits.get(KVM_RESOURCE), "one /dev/kvm");
        // An extended resource's request, when given, must equal its limit (the API server refuses else).
        assertEquals(limits.get(KVM_RESOURCE), requests.get(KVM_RESOURCE), "request = limit for " + KVM_RESOURCE);
        Rendered base = Rendered.of("base");
        assertEquals(base.serve().getResources().getRequests().get("memory"), requests.get("memory"),
                "the base's memory request stays");
        assertEquals(base.serve().getResources().getLimits().get("cpu"), limits.get("cpu"), "the base's CPU limit stays");
    }

    @Test
    void theArgumentsAreTheBasesWithKvmForTcg() {
        Rendered kvm = Rendered.of("overlays/kvm");
        Rendered base = Rendered.of("base");
        assertEquals(Accelerator.KVM, kvm.serveArgs().accelerator(), "--accelerator kvm: no silent fall-back to TCG");
        assertEquals(Accelerator.TCG, base.serveArgs().accelerator(), "the base runs TCG");
        List<String> expected = new ArrayList<>(base.serve().getArgs());
        int at = expected.indexOf("--accelerator");
        expected.set(at + 1, "kvm");
        assertEquals(expected, kvm.serve().getArgs(), "the overlay restates the base's arguments (a list is replaced "
                + "whole by a strategic merge patch): only the accelerator may differ");
    }

    @Test
    void onlyTheDeploymentChanges() {
        Rendered kvm = Rendered.of("overlays/kvm");
        Rendered base = Rendered.of("base");
        assertEquals(base.objects().stream().filter(o -> !(o instanceof Deployment)).toList(),
                kvm.objects().stream().filter(o -> !(o instanceof Deployment)).toList(),
                "the Service, PDB, NetworkPolicy, ConfigMap and HPA are the base's");
        Deployment b = base.deployment();
        Deployment k = kvm.deployment();
        assertEquals(b.getSpec().getTemplate().getSpec().getSecurityContext(),
                k.getSpec().getTemplate().getSpec().getSecurityContext(), "the pod's securityContext is the base's");
        assertEquals(b.getSpec().getTemplate().getSpec().getContainers().get(0).getSecurityContext(),
                kvm.serve().getSecurityContext(), "the container's securityContext is the base's");
        assertEquals(b.getSpec().getTemplate().getSpec().getContainers().get(0).getVolumeMounts(),
                kvm.serve().getVolumeMounts(), "the mounts are the base's");
    }
}
