package io.qvm.internal.process;

import java.util.Map;
import java.util.TreeMap;

/**
 * The whole environment a QEMU the backend starts gets — nothing of the host's but what QEMU
 * cannot run without. The host's environment holds what QEMU must not see or be steered by:
 * credentials and tokens of the calling process, {@code LD_PRELOAD}/{@code LD_LIBRARY_PATH},
 * GLib and QEMU debugging knobs ({@code G_*}, {@code QEMU_*}), {@code TMPDIR}, a {@code HOME}
 * with its configuration.
 *
 * <ul>
 * <li>{@code LC_ALL=C}: messages on stderr (which land in the boot failure's evidence) in one
 *     language and encoding, whatever the host's locale;</li>
 * <li>on Windows, {@code SystemRoot}: without it Winsock cannot load its providers, and QEMU's
 *     sockets (QMP, the chardevs) fail.</li>
 * </ul>
 * No {@code PATH}: QEMU runs under {@code -sandbox …,spawn=deny} and starts no program; the
 * JVM resolves a bare argv[0] with its own {@code PATH}, not the child's.
 */
public final class ChildEnvironment {

    private ChildEnvironment() {
    }

    /** QEMU's environment, given the host's ({@code host}) and the host OS name ({@code os.name}). */
    public static Map<String, String> forQemu(Map<String, String> host, String osName) {
        Map<String, String> env = new TreeMap<>();
        env.put("LC_ALL", "C");
        if (osName.startsWith("Windows")) {
            host.forEach((k, v) -> {
                if (k.equalsIgnoreCase("SystemRoot")) {
                    env.put("SystemRoot", v);
                }
            });
        }
        return env;
    }

    /** QEMU's environment on this host. */
    public static Map<String, String> forQemu() {
        return forQemu(System.getenv(), System.getProperty("os.name", ""));
    }
}
