package io.qvm.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The strict reading itself: what it refuses, on documents made here (no kubectl needed). */
@Tag("unit")
class StrictModelTest {

    private static final String DEPLOYMENT = """
            apiVersion: apps/v1
            kind: Deployment
            metadata:
              name: d
            spec:
              selector:
                matchLabels: {app: d}
              template:
                metadata:
                  labels: {app: d}
                spec:
                  containers:
                  - name: c
                    image: i
                    %s:
                      httpGet: {path: /readyz, port: 8080}
            """;

    @Test
    void aKnownDocumentParsesIntoItsTypedClass() {
        List<HasMetadata> objs = StrictModel.parse(String.format(DEPLOYMENT, "readinessProbe")
                + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: |\n    ---\n    b\n",
                "test");
        assertEquals(2, objs.size());
        Deployment d = assertInstanceOf(Deployment.class, objs.get(0));
        assertEquals("/readyz", d.getSpec().getTemplate().getSpec().getContainers().get(0).getReadinessProbe()
                .getHttpGet().getPath());
        assertEquals("---\nb\n", assertInstanceOf(ConfigMap.class, objs.get(1)).getData().get("a"),
                "an indented --- in a block scalar is content, not a document separator");
    }

    @Test
    void aMisspelledFieldDeepDownIsNamedWithItsPath() {
        AssertionError e = assertThrows(AssertionError.class,
                () -> StrictModel.parse(String.format(DEPLOYMENT, "readinesProbe"), "test"));
        assertTrue(e.getMessage().contains("Deployment/d: unknown field spec.template.spec.containers[0].readinesProbe"),
                e.getMessage());
    }

    @Test
    void aMisspelledTopLevelFieldIsNamed() {
        AssertionError e = assertThrows(AssertionError.class, () -> StrictModel.parse(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndatta:\n  a: b\n", "test"));
        assertTrue(e.getMessage().contains("ConfigMap/c: unknown field datta"), e.getMessage());
    }

    @Test
    void anApiVersionOrKindTheModelDoesNotKnowIsRefused() {
        AssertionError e = assertThrows(AssertionError.class, () -> StrictModel.parse("""
                apiVersion: autoscaling/v3
                kind: HorizontalPodAutoscaler
                metadata:
                  name: h
                spec: {}
                """, "test"));
        assertTrue(e.getMessage().contains("autoscaling/v3 HorizontalPodAutoscaler is no kind the Kubernetes model knows"),
                e.getMessage());
    }

    @Test
    void aDocumentWithoutANameIsRefused() {
        AssertionError e = assertThrows(AssertionError.class,
                () -> StrictModel.parse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {a: b}\n", "test"));
        assertTrue(e.getMessage().contains("no metadata.name"), e.getMessage());
    }

    @Test
    void aDocumentWithoutApiVersionOrKindIsRefused() {
        for (String doc : List.of("kind: ConfigMap\nmetadata:\n  name: c\n", "apiVersion: v1\nmetadata:\n  name: c\n")) {
            AssertionError e = assertThrows(AssertionError.class, () -> StrictModel.parse(doc, "test"));
            assertTrue(e.getMessage().startsWith("test document 0: not a Kubernetes object"), e.getMessage());
        }
    }
}
