package io.qvm.consumer;

import io.qvm.QemuVmBackend;
import io.qvm.Sandbox;
import io.qvm.SandboxConfig;
import io.qvm.admin.GuestImages;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import java.time.Duration;
import java.util.Arrays;

/**
 * The smallest server there is: a main that depends on the backend alone, reads an SVG document
 * from stdin, renders it in a fresh sandbox of {@link QemuVmBackend#create()} (every default:
 * the image is found the way a deployed server finds it) and prints what happened:
 * <pre>
 * IMAGE &lt;source&gt; &lt;image directory&gt;
 * RENDERED &lt;width&gt;x&lt;height&gt; &lt;bytes&gt; bytes of PNG
 * </pre>
 * Exit status 0 when the answer is a PNG, 1 otherwise. {@code MavenImageE2ETest} runs it in a
 * separate JVM from an empty directory, with only the backend's jars on its class path.
 */
public final class RenderOnce {

    private static final byte[] PNG_SIGNATURE = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

    private RenderOnce() {
    }

    public static void main(String[] args) throws Exception {
        byte[] svg = System.in.readAllBytes();
        SandboxConfig config = SandboxConfig.builder().bootTimeout(Duration.ofMinutes(6))
                .requestTimeout(Duration.ofMinutes(3)).build();
        boolean png = false;
        try (QemuVmBackend backend = QemuVmBackend.create()) {
            GuestImages.Image image = backend.admin().image();
            System.out.println("IMAGE " + image.source() + " " + image.dir());
            try (Sandbox sandbox = backend.start(config)) {
                RenderResult r = sandbox.render(RenderRequest.svg(svg));
                byte[] bytes = r.png();
                png = bytes.length >= PNG_SIGNATURE.length
                        && Arrays.equals(Arrays.copyOf(bytes, PNG_SIGNATURE.length), PNG_SIGNATURE);
                System.out.println(png ? "RENDERED " + r.width() + "x" + r.height() + " " + bytes.length + " bytes of PNG"
                        : "NOT A PNG: " + bytes.length + " bytes");
            }
        }
        if (!png) {
            System.exit(1); // after the sandbox and the backend are closed: no QEMU outlives this JVM
        }
    }
}
