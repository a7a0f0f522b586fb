package io.qvm.bench;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/** A process's memory from {@code /proc/PID/smaps_rollup} (kB as the kernel reports them). */
record Smaps(long pid, Map<String, Long> kib) {

    static Smaps of(long pid) throws IOException {
        Map<String, Long> m = new LinkedHashMap<>();
        for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "smaps_rollup"))) {
            String[] f = line.trim().split("\\s+");
            if (f.length >= 3 && f[0].endsWith(":") && f[2].equals("kB")) {
                m.put(f[0].substring(0, f[0].length() - 1), Long.parseLong(f[1]));
            }
        }
        return new Smaps(pid, m);
    }

    long pssKiB() {
        return kib.getOrDefault("Pss", 0L);
    }

    /** Private_Clean + Private_Dirty: what this process alone holds. */
    long privateKiB() {
        return kib.getOrDefault("Private_Clean", 0L) + kib.getOrDefault("Private_Dirty", 0L);
    }

    /**
     * Private_Dirty: the pages this process alone wrote (a clone's copies of template pages, QEMU's
     * heap, the translation cache). Private_Clean of a clone is template pages it happens to be
     * the only mapper of — page cache that the next clone shares — so it is not the clone's own.
     */
    long ownKiB() {
        return kib.getOrDefault("Private_Dirty", 0L);
    }

    ObjectNode toJson() {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        o.put("pid", pid);
        for (String k : new String[] {"Rss", "Pss", "Shared_Clean", "Shared_Dirty", "Private_Clean", "Private_Dirty",
                "Anonymous"}) {
            o.put(k + "KiB", kib.getOrDefault(k, -1L));
        }
        o.put("privateKiB", privateKiB());
        o.put("ownKiB", ownKiB());
        return o;
    }
}
