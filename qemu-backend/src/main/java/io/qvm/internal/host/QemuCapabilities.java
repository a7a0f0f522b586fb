package io.qvm.internal.host;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.qvm.Accelerator;
import java.util.Locale;
import java.util.EnumSet;
import java.io.IOException;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What one QEMU binary reports it can do, parsed from its own answers (never assumed from the
 * host OS or the QEMU version): {@code -accel help}, {@code -machine help},
 * {@code -object help}, {@code -device help}, {@code -machine <type>,help} for the machine types
 * qvm uses, and QMP {@code query-command-line-options} (the only place that says whether
 * {@code -sandbox} (seccomp), {@code -run-with} (and which of its keys) or {@code -action} exist
 * in this build). Probed once per binary by {@code QemuCapabilityProbe} and kept in the
 * {@code ProbeCache} under the binary's identity.
 *
 * @param accelerators    accelerators compiled in ({@code -accel help})
 * @param machines        machine type names and aliases ({@code -machine help})
 * @param objects         user-creatable object types ({@code -object help})
 * @param devices         device names and aliases ({@code -device help})
 * @param machineOptions  machine type (as asked: {@code q35}, {@code microvm}, {@code virt}) →
 *                        its property names ({@code -machine <type>,help})
 * @param commandLineOptions option group → its parameter names (QMP
 *                        {@code query-command-line-options}; {@code -sandbox} is the group
 *                        {@code sandbox}, registered only in builds with libseccomp)
 */
public record QemuCapabilities(Set<Accelerator> accelerators, Set<String> machines, Set<String> objects,
        Set<String> devices, Map<String, Set<String>> machineOptions, Map<String, Set<String>> commandLineOptions) {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern DEVICE = Pattern.compile("^name \"([^\"]+)\"(?:.*?, alias \"([^\"]+)\")?");
    private static final Pattern MACHINE_OPTION = Pattern.compile("^\\s+([A-Za-z0-9_.-]+)=");

    public QemuCapabilities {
        accelerators = Set.copyOf(accelerators);
        machines = Set.copyOf(machines);
        objects = Set.copyOf(objects);
        devices = Set.copyOf(devices);
        machineOptions = copy(machineOptions);
        commandLineOptions = copy(commandLineOptions);
    }

    /**
     * Only the accelerators are known (e.g. a test of the accelerator choice): no machine, object,
     * device or option, so {@code QemuCommand} refuses to build an argv from it.
     */
    public static QemuCapabilities acceleratorsOnly(Set<Accelerator> accelerators) {
        return new QemuCapabilities(accelerators, Set.of(), Set.of(), Set.of(), Map.of(), Map.of());
    }

    /** True when {@code -machine help} lists {@code type} (a name or an alias). */
    public boolean hasMachine(String type) {
        return machines.contains(type);
    }

    /** True when {@code -object help} lists {@code type}. */
    public boolean hasObject(String type) {
        return objects.contains(type);
    }

    /** True when {@code -device help} lists {@code name} (a name or an alias). */
    public boolean hasDevice(String name) {
        return devices.contains(name);
    }

    /** True when {@code -machine <type>,help} lists {@code property} (false when {@code type} was not asked). */
    public boolean machineHas(String type, String property) {
        return machineOptions.getOrDefault(type, Set.of()).contains(property);
    }

    /** True when QMP {@code query-command-line-options} lists the option group {@code option}. */
    public boolean hasOption(String option) {
        return commandLineOptions.containsKey(option);
    }

    /** True when the option group {@code option} has the parameter {@code parameter}. */
    public boolean optionHas(String option, String parameter) {
        return commandLineOptions.getOrDefault(option, Set.of()).contains(parameter);
    }

    // ---- parsing QEMU's answers ------------------------------------------------------------

    /**
     * Parses the answers of one binary.
     *
     * @param machineHelp {@code -machine type,help} outputs by the type asked
     * @param qmp         the whole stdout of the QMP session (greeting, then one JSON object a line)
     * @throws IllegalArgumentException when an answer is not what QEMU prints (the message says which)
     */
    public static QemuCapabilities parse(String accelHelp, String machineList, String objectHelp, String deviceHelp,
            Map<String, String> machineHelp, String qmp) {
        Set<String> machines = new TreeSet<>();
        boolean header = false;
        for (String line : lines(machineList)) {
            if (line.startsWith("Supported machines are:")) {
                header = true;
                continue;
            }
            String[] w = line.strip().split("\\s+");
            if (header && !w[0].isEmpty()) {
                machines.add(w[0]);
            }
        }
        require(header, "-machine help", "'Supported machines are:'", machineList);
        Set<String> objects = new TreeSet<>();
        header = false;
        for (String line : lines(objectHelp)) {
            if (line.startsWith("List of user creatable objects:")) {
                header = true;
            } else if (header && line.startsWith("  ") && !line.isBlank()) {
                objects.add(line.strip());
            }
        }
        require(header, "-object help", "'List of user creatable objects:'", objectHelp);
        Set<String> devices = new TreeSet<>();
        for (String line : lines(deviceHelp)) {
            Matcher m = DEVICE.matcher(line);
            if (m.find()) {
                devices.add(m.group(1));
                if (m.group(2) != null) {
                    devices.add(m.group(2));
                }
            }
        }
        require(!devices.isEmpty(), "-device help", "'name \"…\"' lines", deviceHelp);
        Map<String, Set<String>> machineOptions = new TreeMap<>();
        machineHelp.forEach((type, text) -> {
            Set<String> props = new TreeSet<>();
            for (String line : lines(text)) {
                Matcher m = MACHINE_OPTION.matcher(line);
                if (m.find()) {
                    props.add(m.group(1));
                }
            }
            machineOptions.put(type, props);
        });
        return new QemuCapabilities(parseAccelHelp(accelHelp), machines, objects, devices,
                machineOptions, parseCommandLineOptions(qmp));
    }

    /** The option groups of a QMP session's {@code query-command-line-options} answer. */
    static Map<String, Set<String>> parseCommandLineOptions(String qmp) {
        for (String line : lines(qmp)) {
            if (!line.startsWith("{")) {
                continue;
            }
            JsonNode n;
            try {
                n = JSON.readTree(line);
            } catch (IOException e) {
                continue;
            }
            if (n.path("return").isArray()) {
                Map<String, Set<String>> out = new TreeMap<>();
                for (JsonNode group : n.get("return")) {
                    Set<String> params = new TreeSet<>();
                    group.path("parameters").forEach(p -> params.add(p.path("name").asText()));
                    out.merge(group.path("option").asText(), params, (a, b) -> {
                        Set<String> u = new TreeSet<>(a);
                        u.addAll(b);
                        return u;
                    });
                }
                return out;
            }
        }
        throw new IllegalArgumentException("the QMP session answered no query-command-line-options: "
                + abbreviate(qmp));
    }

    // ---- the cache's form ------------------------------------------------------------------

    /** This value as JSON (the {@code ProbeCache}'s form). */
    public ObjectNode toJson() {
        ObjectNode o = JSON.createObjectNode();
        ArrayNode accel = o.putArray("accelerators");
        new TreeSet<>(accelerators.stream().map(Accelerator::qemuName).toList()).forEach(accel::add);
        strings(o.putArray("machines"), machines);
        strings(o.putArray("objects"), objects);
        strings(o.putArray("devices"), devices);
        ObjectNode mo = o.putObject("machineOptions");
        new TreeMap<>(machineOptions).forEach((k, v) -> strings(mo.putArray(k), v));
        ObjectNode co = o.putObject("commandLineOptions");
        new TreeMap<>(commandLineOptions).forEach((k, v) -> strings(co.putArray(k), v));
        return o;
    }

    /** Reads {@link #toJson()}'s form; throws IllegalArgumentException on anything else. */
    public static QemuCapabilities fromJson(JsonNode o) {
        if (!o.path("accelerators").isArray() || !o.path("devices").isArray() || !o.path("machineOptions").isObject()
                || !o.path("commandLineOptions").isObject()) {
            throw new IllegalArgumentException("not a QemuCapabilities object");
        }
        Set<Accelerator> accel = new java.util.HashSet<>();
        o.get("accelerators").forEach(a -> accel.add(Accelerator.parse(a.asText())));
        return new QemuCapabilities(accel, strings(o.get("machines")), strings(o.get("objects")),
                strings(o.get("devices")), groups(o.get("machineOptions")), groups(o.get("commandLineOptions")));
    }

    private static Map<String, Set<String>> groups(JsonNode o) {
        Map<String, Set<String>> out = new TreeMap<>();
        o.fields().forEachRemaining(e -> out.put(e.getKey(), strings(e.getValue())));
        return out;
    }

    private static Set<String> strings(JsonNode a) {
        Set<String> out = new TreeSet<>();
        if (a != null) {
            a.forEach(s -> out.add(s.asText()));
        }
        return out;
    }

    private static void strings(ArrayNode a, Set<String> values) {
        new TreeSet<>(values).forEach(a::add);
    }

    private static Map<String, Set<String>> copy(Map<String, Set<String>> m) {
        Map<String, Set<String>> out = new TreeMap<>();
        Objects.requireNonNull(m).forEach((k, v) -> out.put(k, Set.copyOf(v)));
        return java.util.Collections.unmodifiableMap(out);
    }

    private static String[] lines(String s) {
        return s == null ? new String[0] : s.split("\\R");
    }

    private static void require(boolean ok, String what, String expected, String got) {
        if (!ok) {
            throw new IllegalArgumentException(what + " printed no " + expected + ": " + abbreviate(got));
        }
    }

    private static String abbreviate(String s) {
        if (s == null || s.isBlank()) {
            return "(nothing)";
        }
        String t = s.strip();
        return t.length() > 200 ? "'" + t.substring(0, 200) + "…'" : "'" + t + "'";
    }

    /** Parses the output of {@code -accel help}; unknown names (xen, nvmm, qtest…) are ignored. */
    public static Set<Accelerator> parseAccelHelp(String output) {
        Set<Accelerator> out = EnumSet.noneOf(Accelerator.class);
        if (output == null) {
            return out;
        }
        for (String line : output.split("\\R")) {
            String name = line.strip().toLowerCase(Locale.ROOT);
            for (Accelerator a : Accelerator.values()) {
                if (a != Accelerator.AUTO && a.qemuName().equals(name)) {
                    out.add(a);
                }
            }
        }
        return out;
    }
}
