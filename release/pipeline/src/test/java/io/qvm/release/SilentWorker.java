package io.qvm.release;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;

/**
 * A worker that starts and never answers: the broken image of the release gate's end-to-end test.
 * {@link #jar} is the real worker's jar (so the image and its SBOM build as usual, with the
 * worker's dependency list) with this class added as its Main-Class.
 */
public final class SilentWorker {

    private SilentWorker() {
    }

    public static void main(String[] args) throws InterruptedException {
        System.err.println("silent worker: reading nothing, answering nothing");
        Thread.sleep(Long.MAX_VALUE);
    }

    /** {@code real} with this class added and made its Main-Class, written to {@code out}. */
    static Path jar(Path real, Path out) throws IOException {
        String self = SilentWorker.class.getName().replace('.', '/') + ".class";
        try (JarFile in = new JarFile(real.toFile())) {
            Manifest mf = new Manifest(in.getManifest());
            mf.getMainAttributes().put(Attributes.Name.MAIN_CLASS, SilentWorker.class.getName());
            try (OutputStream o = Files.newOutputStream(out); JarOutputStream j = new JarOutputStream(o, mf)) {
                for (JarEntry e : Collections.list(in.entries())) {
                    if (e.getName().equalsIgnoreCase(JarFile.MANIFEST_NAME)) {
                        continue;
                    }
                    j.putNextEntry(new JarEntry(e.getName()));
                    try (InputStream is = in.getInputStream(e)) {
                        is.transferTo(j);
                    }
                    j.closeEntry();
                }
                j.putNextEntry(new JarEntry(self));
                try (InputStream is = SilentWorker.class.getClassLoader().getResourceAsStream(self)) {
                    is.transferTo(j);
                }
                j.closeEntry();
            }
        }
        return out;
    }
}
