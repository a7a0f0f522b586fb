package io.qvm.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.LabelSelector;
import io.fabric8.kubernetes.api.model.LabelSelectorRequirement;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/** One kustomization as rendered and parsed, with what the tests ask of it. */
record Rendered(String dir, List<HasMetadata> objects) {

    static Rendered of(String dir) {
        return new Rendered(dir, StrictModel.parse(Kustomize.render(dir), "kubectl kustomize " + dir));
    }

    /** The one object of {@code type}; fails when there is none or more than one. */
    <T extends HasMetadata> T one(Class<T> type) {
        List<T> all = all(type);
        assertEquals(1, all.size(), dir + ": one " + type.getSimpleName() + ", found "
                + all.stream().map(o -> o.getMetadata().getName()).collect(Collectors.toList()));
        return all.get(0);
    }

    <T extends HasMetadata> List<T> all(Class<T> type) {
        return objects.stream().filter(type::isInstance).map(type::cast).collect(Collectors.toList());
    }

    Deployment deployment() {
        return one(Deployment.class);
    }

    /** The container that runs qvm serve: the Deployment's only one. */
    Container serve() {
        List<Container> cs = deployment().getSpec().getTemplate().getSpec().getContainers();
        assertEquals(1, cs.size(), dir + ": the pod has one container, qvm serve's");
        return cs.get(0);
    }

    /**
     * The container's options to qvm serve. The command is the image's entrypoint ({@code java -jar
     * /opt/qvm/qvm.jar serve}): a manifest that replaced it would run something else.
     */
    ServeArgs serveArgs() {
        Container c = serve();
        assertTrue(c.getCommand() == null || c.getCommand().isEmpty(), dir + ": the image's entrypoint (qvm serve) "
                + "runs, not " + c.getCommand());
        return ServeArgs.parse(c.getArgs());
    }

    Map<String, String> podLabels() {
        Map<String, String> labels = deployment().getSpec().getTemplate().getMetadata().getLabels();
        assertNotNull(labels, dir + ": the pod template has labels");
        return labels;
    }

    /** The container port {@code port} names: a number, or the name of one of the container's ports. */
    int containerPort(IntOrString port) {
        assertNotNull(port, dir + ": a port");
        if (port.getIntVal() != null) {
            return port.getIntVal();
        }
        return serve().getPorts().stream().filter(p -> port.getStrVal().equals(p.getName()))
                .map(ContainerPort::getContainerPort).findFirst()
                .orElseThrow(() -> new AssertionError(dir + ": no container port is named '" + port.getStrVal() + "'"));
    }

    /** Whether {@code selector} selects {@code labels} (matchLabels and matchExpressions, as the API server reads them). */
    static boolean selects(LabelSelector selector, Map<String, String> labels) {
        if (selector == null) {
            return false;
        }
        Map<String, String> match = selector.getMatchLabels() == null ? Map.of() : selector.getMatchLabels();
        List<LabelSelectorRequirement> exprs = selector.getMatchExpressions() == null ? List.of()
                : selector.getMatchExpressions();
        boolean all = match.entrySet().stream().allMatch(e -> e.getValue().equals(labels.get(e.getKey())));
        for (LabelSelectorRequirement r : exprs) {
            String v = labels.get(r.getKey());
            all &= switch (r.getOperator()) {
                case "In" -> v != null && r.getValues().contains(v);
                case "NotIn" -> v == null || !r.getValues().contains(v);
                case "Exists" -> v != null;
                case "DoesNotExist" -> v == null;
                default -> throw new AssertionError("unknown selector operator " + r.getOperator());
            };
        }
        return all;
    }
}
