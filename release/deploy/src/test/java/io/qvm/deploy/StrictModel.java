package io.qvm.deploy;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Rendered YAML into fabric8's typed Kubernetes model, strictly: every document must be a kind the
 * model knows at its apiVersion (not fabric8's catch-all {@link GenericKubernetesResource}), with a
 * name, and without a field the model does not know. fabric8 keeps such fields in each object's
 * {@code additionalProperties} instead of refusing them — a {@code readinesProbe} would otherwise
 * pass unnoticed, and the API server would drop or refuse it — so {@link #unknownFields} walks the
 * whole object graph and names every one.
 */
final class StrictModel {

    private static final KubernetesSerialization SERIALIZATION = new KubernetesSerialization();
    /** kustomize separates documents with a line "---" at the start of a line (block scalars are indented). */
    private static final Pattern SEPARATOR = Pattern.compile("(?m)^---[ \\t]*$");

    private StrictModel() {
    }

    /** Every document of {@code yaml}, each its typed class; fails naming the first one that is not. */
    static List<HasMetadata> parse(String yaml, String source) {
        List<HasMetadata> out = new ArrayList<>();
        List<String> problems = new ArrayList<>();
        int index = 0;
        for (String doc : SEPARATOR.split(yaml)) {
            if (doc.lines().allMatch(l -> l.isBlank() || l.stripLeading().startsWith("#"))) {
                continue;
            }
            String where = source + " document " + index++;
            Object o;
            try {
                o = SERIALIZATION.unmarshal(doc);
            } catch (RuntimeException e) {
                problems.add(where + ": does not parse: " + e.getMessage());
                continue;
            }
            if (!(o instanceof HasMetadata r)) {
                problems.add(where + ": not a Kubernetes object: " + (o == null ? "empty" : o.getClass().getName()));
                continue;
            }
            where = source + " " + r.getKind() + "/" + (r.getMetadata() == null ? null : r.getMetadata().getName());
            if (r.getApiVersion() == null || r.getApiVersion().isBlank()) {
                problems.add(where + ": no apiVersion");
            }
            if (r.getKind() == null || r.getKind().isBlank()) {
                problems.add(where + ": no kind");
            }
            if (r.getMetadata() == null || r.getMetadata().getName() == null || r.getMetadata().getName().isBlank()) {
                problems.add(where + ": no metadata.name");
            }
            if (r instanceof GenericKubernetesResource) {
                problems.add(where + ": " + r.getApiVersion() + " " + r.getKind()
                        + " is no kind the Kubernetes model knows (a typo in apiVersion or kind?)");
            }
            for (String f : unknownFields(r)) {
                problems.add(where + ": unknown field " + f);
            }
            out.add(r);
        }
        if (!problems.isEmpty()) {
            throw new AssertionError(String.join("\n", problems));
        }
        return out;
    }

    /**
     * The fields of {@code model} and of every model object under it that the model did not know,
     * as dotted paths ({@code spec.template.spec.containers[0].readinesProbe}).
     */
    static List<String> unknownFields(Object model) {
        List<String> out = new ArrayList<>();
        walk(model, "", out, Collections.newSetFromMap(new IdentityHashMap<>()));
        return out;
    }

    private static void walk(Object o, String path, List<String> out, Set<Object> seen) {
        if (o == null) {
            return;
        }
        if (o instanceof Map<?, ?> m) {
            for (Map.Entry<?, ?> e : m.entrySet()) {
                walk(e.getValue(), path + "[" + e.getKey() + "]", out, seen);
            }
            return;
        }
        if (o instanceof Collection<?> c) {
            int i = 0;
            for (Object e : c) {
                walk(e, path + "[" + i++ + "]", out, seen);
            }
            return;
        }
        if (!o.getClass().getName().startsWith("io.fabric8.") || !seen.add(o)) {
            return; // a String, a number, a Boolean: a value, not a model object
        }
        for (Class<?> k = o.getClass(); k != null && k != Object.class; k = k.getSuperclass()) {
            for (Field f : k.getDeclaredFields()) {
                if (Modifier.isStatic(f.getModifiers()) || f.isSynthetic()) {
                    continue;
                }
                f.setAccessible(true);
                Object v;
                try {
                    v = f.get(o);
                } catch (IllegalAccessException e) {
                    throw new IllegalStateException("cannot read " + f, e);
                }
                String at = path.isEmpty() ? f.getName() : path + "." + f.getName();
                if (f.getName().equals("additionalProperties")) {
                    if (v instanceof Map<?, ?> extra) {
                        extra.keySet().forEach(key -> out.add(path.isEmpty() ? String.valueOf(key) : path + "." + key));
                    }
                    continue;
                }
                walk(v, at, out, seen);
            }
        }
    }
}
