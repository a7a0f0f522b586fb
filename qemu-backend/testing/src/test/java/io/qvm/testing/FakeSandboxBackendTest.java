package io.qvm.testing;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.BootFailedException;
import io.qvm.RenderFailedException;
import io.qvm.Sandbox;
import io.qvm.SandboxConfig;
import io.qvm.SandboxLostException;
import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import io.qvm.protocol.WorkerStatus;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.apache.pdfbox.pdmodel.PDDocument;
import org.apache.pdfbox.pdmodel.PDPage;
import org.apache.pdfbox.pdmodel.common.PDRectangle;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class FakeSandboxBackendTest {

    private final FakeSandboxBackend backend = new FakeSandboxBackend();

    @AfterEach
    void close() {
        backend.close();
    }

    @Test
    void rendersSvgAndPdfWithTheWorkersRenderer() throws IOException {
        try (Sandbox s = backend.start(SandboxConfig.defaults())) {
            RenderResult svg = s.render(RenderRequest.svg(ReadmeExampleTest.SVG).withSize(120, 90));
            assertEquals(120, svg.width());
            assertEquals(90, svg.height());
            assertArrayEquals(ReadmeExampleTest.PNG_SIGNATURE, Arrays.copyOf(svg.png(), 8));

            RenderResult pdf = s.render(RenderRequest.pdf(onePagePdf()).withDpi(72));
            assertEquals(200, pdf.width(), "a 200x100 pt page at 72 dpi");
            assertEquals(100, pdf.height());
            assertEquals(2, s.status().requestsServed());
            assertTrue(s.bootReport().restored());
            assertTrue(s.bootReport().accelerator().contains("not a sandbox"));
        }
    }

    @Test
    void aDocumentAboveTheConfiguredRequestSizeIsRefusedBeforeItRenders() {
        SandboxConfig small = SandboxConfig.builder().maxRequestBytes(64 * 1024).build();
        try (Sandbox s = backend.start(small)) {
            RenderFailedException e = assertThrows(RenderFailedException.class,
                    () -> s.render(RenderRequest.svg(new byte[64 * 1024 + 1])));
            assertEquals(ErrorCode.TOO_LARGE, e.code());
            assertTrue(s.isAlive(), "a refused document leaves the sandbox usable");
        }
    }

    @Test
    void aScriptedLossEndsItsSandboxAndFailuresAreUsedInOrder() {
        SandboxLostException lost = FakeSandboxBackend.sandboxLost(SandboxLostException.Reason.CRASHED);
        backend.failNextRender(lost).failNextRender(FakeSandboxBackend.renderFailed(ErrorCode.UNSUPPORTED));
        Sandbox first = backend.start(SandboxConfig.defaults());
        assertSame(lost, assertThrows(SandboxLostException.class,
                () -> first.render(RenderRequest.svg(ReadmeExampleTest.SVG))));
        assertFalse(first.isAlive());
        assertTrue(first.onExit().isDone());
        assertThrows(SandboxLostException.class, () -> first.echo(new byte[1]), "a lost sandbox stays lost");

        Sandbox second = backend.start(SandboxConfig.defaults());
        assertEquals(ErrorCode.UNSUPPORTED, assertThrows(RenderFailedException.class,
                () -> second.render(RenderRequest.svg(ReadmeExampleTest.SVG))).code());
        assertTrue(second.isAlive());
        assertEquals(200, second.render(RenderRequest.svg(ReadmeExampleTest.SVG).withSize(200, 150)).width());
        assertEquals(3, backend.renders().size());
    }

    @Test
    void aScriptedStartFailureIsThrownOnceThenStartsWork() {
        backend.failNextStart(FakeSandboxBackend.bootFailed());
        assertThrows(BootFailedException.class, () -> backend.start(SandboxConfig.defaults()));
        Sandbox s = backend.start(SandboxConfig.defaults());
        assertTrue(s.isAlive());
        assertEquals(2, backend.starts());
        assertEquals(1, backend.liveSandboxes());
    }

    @Test
    void closeEndsEverySandboxAndRemovesItsFiles() {
        Sandbox s = backend.start(SandboxConfig.defaults());
        Path state = s.stateDir();
        assertTrue(Files.isRegularFile(s.consoleLog()));
        WorkerStatus st = s.status();
        assertEquals(0, st.requestsServed());
        backend.close();
        assertFalse(s.isAlive());
        assertFalse(Files.exists(state));
        assertThrows(IllegalStateException.class, () -> backend.start(SandboxConfig.defaults()));
        backend.close(); // idempotent
    }

    private static byte[] onePagePdf() throws IOException {
        try (PDDocument doc = new PDDocument(); ByteArrayOutputStream out = new ByteArrayOutputStream()) {
            doc.addPage(new PDPage(new PDRectangle(200, 100)));
            doc.save(out);
            return out.toByteArray();
        }
    }
}
