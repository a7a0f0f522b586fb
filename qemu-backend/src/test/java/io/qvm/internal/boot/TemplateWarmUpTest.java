package io.qvm.internal.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.RenderRequest;
import java.time.Duration;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class TemplateWarmUpTest {

    @Test
    void theMarginIsAQuarterOfTheBootTimeoutAndAtLeastThirtySeconds() {
        assertEquals(Duration.ofSeconds(45), TemplateWarmUp.margin(Duration.ofSeconds(180)));
        assertEquals(Duration.ofSeconds(30), TemplateWarmUp.margin(Duration.ofSeconds(60)));
        assertEquals(Duration.ofSeconds(30), TemplateWarmUp.margin(Duration.ofSeconds(1)));
        assertEquals(Duration.ofMinutes(7).plusSeconds(30), TemplateWarmUp.margin(Duration.ofMinutes(30)));
    }

    @Test
    void everyDocumentIsThereAndOfItsType() {
        for (String name : TemplateWarmUp.DOCUMENTS) {
            RenderRequest r = TemplateWarmUp.request(name);
            assertEquals(name.endsWith(".pdf") ? RenderRequest.Type.PDF : RenderRequest.Type.SVG, r.type(), name);
            assertTrue(r.document().length > 500, name);
        }
    }
}
