package io.qvm.release;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.image.InitramfsArchive;
import io.qvm.protocol.util.Sha256;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two build directories compared byte for byte: the same bytes pass, a changed or missing file is
 * named with both hashes, and an initramfs that differs says which archive entry does and how.
 */
@Tag("unit")
class ReproducibilityTest {

    @TempDir
    Path tmp;

    @Test
    void identicalTreesPassAndEveryDifferenceIsNamedWithBothHashes() throws Exception {
        Path a = tmp.resolve("a");
        Path b = tmp.resolve("b");
        for (Path d : List.of(a, b)) {
            Files.createDirectories(d.resolve("x86_64"));
            Files.writeString(d.resolve("x86_64/vmlinuz"), "kernel");
            Files.writeString(d.resolve("x86_64/manifest.json"), "{}");
        }
        assertEquals(List.of(), Reproducibility.compare(a, b));
        assertEquals("two builds are byte-identical (2 files)", Reproducibility.describe(List.of(), a));

        Files.writeString(b.resolve("x86_64/manifest.json"), "{ }");
        Files.writeString(a.resolve("x86_64/extra"), "only in the first");
        List<Reproducibility.Difference> d = Reproducibility.compare(a, b);
        assertEquals(2, d.size());
        assertEquals("x86_64/extra", d.get(0).file());
        assertNull(d.get(0).second());
        assertEquals("x86_64/manifest.json", d.get(1).file());
        assertEquals(Sha256.of("{}".getBytes()), d.get(1).first());
        assertEquals(Sha256.of("{ }".getBytes()), d.get(1).second());
        String text = Reproducibility.describe(d, a);
        assertTrue(text.startsWith("two builds differ in 2 files:"), text);
        assertTrue(text.contains("x86_64/extra differs: first build sha256 ") && text.contains("second build has no such file"),
                text);
    }

    @Test
    void anInitramfsThatDiffersNamesTheFirstEntryThatDoes() throws Exception {
        Path sa = tmp.resolve("stage-a");
        Path sb = tmp.resolve("stage-b");
        for (Path s : List.of(sa, sb)) {
            Files.createDirectories(s.resolve("bundle/rootfs/opt/qvm/jre/lib"));
            Files.writeString(s.resolve("init"), "#!/bin/sh\n");
        }
        Files.writeString(sa.resolve("bundle/rootfs/opt/qvm/jre/lib/modules"), "modules A");
        Files.writeString(sb.resolve("bundle/rootfs/opt/qvm/jre/lib/modules"), "modules B");
        Path a = Files.createDirectories(tmp.resolve("a/x86_64"));
        Path b = Files.createDirectories(tmp.resolve("b/x86_64"));
        InitramfsArchive.write(sa, a.resolve("initramfs.cpio.lz4"), 0);
        InitramfsArchive.write(sb, b.resolve("initramfs.cpio.lz4"), 0);

        List<Reproducibility.Difference> d = Reproducibility.compare(tmp.resolve("a"), tmp.resolve("b"));
        assertEquals(1, d.size());
        assertTrue(d.get(0).detail().startsWith("bundle/rootfs/opt/qvm/jre/lib/modules differs: sha256 "
                + Sha256.of("modules A".getBytes()) + " in the first archive, " + Sha256.of("modules B".getBytes())),
                d.get(0).detail());

        Files.writeString(sb.resolve("bundle/rootfs/opt/qvm/jre/lib/modules"), "modules A");
        InitramfsArchive.write(sb, b.resolve("initramfs.cpio.lz4"), 1);
        assertTrue(Reproducibility.compare(tmp.resolve("a"), tmp.resolve("b")).get(0).detail().contains("mtime 0"),
                "a timestamp difference is named too");
    }
}
