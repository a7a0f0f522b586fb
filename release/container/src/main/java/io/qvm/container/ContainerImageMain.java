package io.qvm.container;

import java.nio.file.Path;
import java.time.Instant;

import io.qvm.image.PackageStore;

/**
 * {@code java -cp "release/container/target/qvm-container.jar:$(cat release/container/target/classpath)"
 * io.qvm.container.ContainerImageMain --out DIR [--cli release/cli/target] [--image out/image/x86_64]}:
 * builds the container image into {@code DIR/oci} and {@code DIR/qvm-container.oci.tar} and prints
 * its digest. The epoch is {@code SOURCE_DATE_EPOCH} if set, else 2026-01-01T00:00:00Z; packages
 * come from {@code $QVM_CACHE} (else {@code ~/.cache/qvm}) or the mirror the guest image build uses.
 */
public final class ContainerImageMain {
    private ContainerImageMain() {
    }

    public static void main(String[] args) throws Exception {
        Path out = null;
        Path cli = Path.of("release/cli/target");
        Path image = Path.of("out/image/x86_64");
        for (int i = 0; i < args.length; i++) {
            String v = i + 1 < args.length ? args[i + 1] : null;
            switch (args[i]) {
                case "--out" -> out = Path.of(need(args[i], v));
                case "--cli" -> cli = Path.of(need(args[i], v));
                case "--image" -> image = Path.of(need(args[i], v));
                default -> usage("unknown argument " + args[i]);
            }
            i++;
        }
        if (out == null) {
            usage("--out DIR is required");
        }
        String sde = System.getenv("SOURCE_DATE_EPOCH");
        Instant epoch = sde == null || sde.isBlank() ? ContainerImage.DEFAULT_EPOCH
                : Instant.ofEpochSecond(Long.parseLong(sde.trim()));
        PackageStore store = new PackageStore(PackageStore.defaultCache(), System.err::println);
        OciImage.Written w = ContainerImage.build(ContainerLock.bundled(), store, cli, image, epoch, out,
                System.err::println);
        System.err.println("layer " + w.layer().digest() + " (" + w.layer().size() + " bytes, diff id "
                + w.diffId() + ")");
        System.err.println("layout " + w.layout() + ", archive " + w.archive());
        System.out.println(w.manifest().digest());
    }

    private static String need(String opt, String v) {
        if (v == null) {
            usage(opt + " needs a value");
        }
        return v;
    }

    private static void usage(String why) {
        System.err.println("qvm-container: " + why + "\nusage: ContainerImageMain --out DIR [--cli DIR] [--image DIR]");
        System.exit(2);
    }
}
