package io.qvm.worker;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/** Documents under {@code src/test/resources/corpus/}; {@code {{BASE}}} becomes the trap server's URL. */
final class Corpus {

    private Corpus() {
    }

    static byte[] bytes(String name) {
        try (InputStream in = Corpus.class.getResourceAsStream("/corpus/" + name)) {
            if (in == null) {
                throw new IllegalArgumentException("no corpus file " + name);
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static byte[] withBase(String name, String base) {
        return new String(bytes(name), StandardCharsets.UTF_8).replace("{{BASE}}", base)
                .getBytes(StandardCharsets.UTF_8);
    }
}
