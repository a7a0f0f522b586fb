package io.qvm.internal.qmp;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;

/**
 * The first message QEMU sends on a QMP connection:
 *
 * <pre>
 * {"QMP": {"version": {"qemu": {"micro": 22, "minor": 2, "major": 7},
 *                      "package": "Debian 1:7.2+dfsg-7+deb12u18"},
 *          "capabilities": ["oob"]}}
 * </pre>
 *
 * Missing or oddly typed fields read as {@code -1} / empty; unknown fields are ignored.
 *
 * @param major QEMU major version, or -1 if absent
 * @param minor QEMU minor version, or -1 if absent
 * @param micro QEMU micro version, or -1 if absent
 * @param packageName the {@code package} string (distribution build), possibly empty
 * @param capabilities the advertised capabilities (e.g. {@code oob}); the client enables none
 */
public record QmpGreeting(int major, int minor, int micro, String packageName, List<String> capabilities) {

    public QmpGreeting {
        packageName = packageName == null ? "" : packageName;
        capabilities = List.copyOf(capabilities);
    }

    /** Reads the greeting from the whole message; {@code null} if it is not a greeting. */
    static QmpGreeting parse(JsonNode message) {
        JsonNode qmp = message.get("QMP");
        if (qmp == null || !qmp.isObject()) {
            return null;
        }
        JsonNode version = qmp.path("version");
        JsonNode qemu = version.path("qemu");
        List<String> caps = new ArrayList<>();
        for (JsonNode c : qmp.path("capabilities")) {
            if (c.isTextual()) {
                caps.add(c.asText());
            }
        }
        return new QmpGreeting(intOr(qemu.get("major")), intOr(qemu.get("minor")),
                intOr(qemu.get("micro")), version.path("package").asText(""), caps);
    }

    private static int intOr(JsonNode n) {
        return n != null && n.canConvertToInt() && n.isIntegralNumber() ? n.asInt() : -1;
    }

    /** {@code major.minor.micro}, e.g. {@code 7.2.22}. */
    public String version() {
        return major + "." + minor + "." + micro;
    }

    /** True if this QEMU is at least {@code major.minor}. */
    public boolean isAtLeast(int wantMajor, int wantMinor) {
        return major > wantMajor || (major == wantMajor && minor >= wantMinor);
    }
}
