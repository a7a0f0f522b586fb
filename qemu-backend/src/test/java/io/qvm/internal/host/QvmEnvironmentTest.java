package io.qvm.internal.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.qvm.internal.probe.ProbeCache;
import io.qvm.internal.template.TemplateStore;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class QvmEnvironmentTest {

    private static QvmEnvironment env(Map<String, String> vars) {
        return QvmEnvironment.of(vars, "/home/u", "Linux");
    }

    @Test
    void imagesLiveInQvmImageDirAndInTheUserCache() {
        Map<String, String> all = Map.of("QVM_IMAGE_DIR", "/srv/images", "QVM_CACHE", "/var/cache/qvm");
        assertEquals(Optional.of(Path.of("/srv/images")), env(all).imageDirVariable());
        assertEquals(Path.of("/var/cache/qvm/images"), env(all).userImageRoot());
        assertEquals(Path.of("/var/cache/qvm/images-maven"), env(all).mavenImageCache());
        assertEquals(Path.of("/home/u/.cache/qvm/images"), env(Map.of()).userImageRoot());
        assertEquals(Optional.empty(), env(Map.of("QVM_IMAGE_DIR", " ", "QVM_CACHE", "")).imageDirVariable(),
                "blank counts as unset");
        assertEquals(Path.of("/home/u/.cache/qvm/images"), env(Map.of("QVM_CACHE", "")).userImageRoot());
        assertEquals(Path.of("/home/u"), env(Map.of()).home());
    }

    @Test
    void qemuDropsToQvmUnlessQvmQemuUserNamesAnother() {
        assertEquals("qvm", env(Map.of()).qemuUser());
        assertEquals("qvm", env(Map.of("QVM_QEMU_USER", " ")).qemuUser(), "blank counts as unset");
        assertEquals("sandboxer", env(Map.of("QVM_QEMU_USER", "sandboxer")).qemuUser());
    }

    @Test
    void theCacheHoldsTemplatesAndProbeVerdicts() {
        QvmEnvironment e = env(Map.of("QVM_CACHE", "/c"));
        assertEquals(Path.of("/c/templates"), e.templateRoot());
        assertEquals(Path.of("/c/probe-cache.json"), e.probeCacheFile());
        assertEquals(Path.of("/c/templates").toAbsolutePath(), TemplateStore.defaultLocation(Map.of("QVM_CACHE", "/c"))
                .root());
        assertEquals(Path.of("/c/probe-cache.json"), ProbeCache.defaultLocation(Map.of("QVM_CACHE", "/c")).file());
        assertEquals(Path.of("/home/u/.cache/qvm/templates"), env(Map.of()).templateRoot());
    }

    @Test
    void stateRuntimeQemuAndTemplates() {
        assertEquals(Path.of("/s"), env(Map.of("QVM_STATE", "/s")).stateRoot());
        assertEquals(Path.of("/home/u/.local/state/qvm"), env(Map.of()).stateRoot());
        assertEquals(Path.of("/r"), env(Map.of("QVM_RUNTIME_DIR", "/r", "XDG_RUNTIME_DIR", "/run/user/1")).runtimeRoot());
        assertEquals(Path.of("/run/user/1/qvm"), env(Map.of("XDG_RUNTIME_DIR", "/run/user/1")).runtimeRoot());
        assertEquals(Path.of("C:\\t", "qvm"), QvmEnvironment.of(Map.of("TEMP", "C:\\t"), "/home/u", "Windows 11")
                .runtimeRoot());
        assertEquals(Optional.of("/opt/qemu"), env(Map.of("QVM_QEMU", "/opt/qemu")).qemuOverride());
        assertEquals(Optional.empty(), env(Map.of("QVM_QEMU", "")).qemuOverride());
        assertTrue(env(Map.of()).templatesEnabled());
        assertTrue(env(Map.of("QVM_TEMPLATES", "on")).templatesEnabled());
        assertFalse(env(Map.of("QVM_TEMPLATES", "off")).templatesEnabled());
        assertTrue(env(Map.of()).templateWarmUpEnabled());
        assertFalse(env(Map.of("QVM_TEMPLATE_WARMUP", "off")).templateWarmUpEnabled());
    }
}
