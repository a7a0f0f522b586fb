package io.qvm.release;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.image.PackageLock;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.image.ImageManifest;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The worker's BOM read out of an image's initramfs (a real LZ4-compressed cpio): only from the jar the
 * manifest names, and a jar without a BOM is refused with how to get one.
 */
@Tag("unit")
class WorkerBomTest {

    @TempDir
    Path tmp;

    @Test
    void theBomComesFromTheWorkerJarInsideTheImage() throws Exception {
        Path dir = new SyntheticImages(PackageLock.bundled()).build(Arch.X86_64, tmp, tmp.resolve("cache"), l -> { });
        ImageManifest m = Release.readManifest(dir);
        WorkerBom.Read r = WorkerBom.fromImage(dir, m);
        assertEquals(m.workerJar().sha256(), r.jarSha256());
        assertEquals("qvm-renderer-worker", r.bom().getMetadata().getComponent().getName());
        assertEquals(WorkerBoms.CLOSURE.size(), r.bom().getComponents().size());
    }

    @Test
    void aJarThatIsNotTheManifestsIsRefused() throws Exception {
        Path dir = new SyntheticImages(PackageLock.bundled()).build(Arch.AARCH64, tmp, tmp.resolve("cache"), l -> { });
        ImageManifest m = Release.readManifest(dir);
        ImageManifest other = new ImageManifest(m.format(), m.arch(), m.debianArch(), m.console(), m.kernel(), m.runsc(),
                m.jre(), m.reproducible(), new ImageManifest.WorkerJar(m.workerJar().path(), "f".repeat(64), 1),
                m.fixedLimits(), m.sourceDateEpoch(), m.inputs(), m.outputs(), m.transports(), m.recipeSha256(), m.crngReseed());
        ReleaseException e = assertThrows(ReleaseException.class, () -> WorkerBom.fromImage(dir, other));
        assertTrue(e.getMessage().contains("manifest.json says " + "f".repeat(64)), e.getMessage());
    }

    @Test
    void aJarWithoutItsBomIsRefusedWithTheBuildThatWritesIt() {
        ReleaseException e = assertThrows(ReleaseException.class,
                () -> WorkerBom.fromJar(new byte[] {'P', 'K', 5, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
                        "empty.jar"));
        assertTrue(e.getMessage().contains("has no META-INF/qvm/worker.cdx.json")
                && e.getMessage().contains("cyclonedx-maven-plugin"), e.getMessage());
    }
}
