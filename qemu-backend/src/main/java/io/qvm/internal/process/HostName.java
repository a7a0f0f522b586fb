package io.qvm.internal.process;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** This host's name, without a DNS lookup where the OS can tell us directly. */
final class HostName {

    private static volatile String cached;

    private HostName() {}

    static String get() {
        String h = cached;
        if (h == null) {
            h = lookup();
            cached = h;
        }
        return h;
    }

    private static String lookup() {
        Path kernel = Path.of("/proc/sys/kernel/hostname");
        try {
            if (Files.isReadable(kernel)) {
                String s = Files.readString(kernel, StandardCharsets.UTF_8).strip();
                if (!s.isEmpty()) {
                    return s;
                }
            }
        } catch (IOException ignored) {
            // fall through
        }
        String env = System.getenv("COMPUTERNAME"); // Windows
        if (env == null) {
            env = System.getenv("HOSTNAME");
        }
        if (env != null && !env.isBlank()) {
            return env.strip();
        }
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "unknown-host";
        }
    }
}
