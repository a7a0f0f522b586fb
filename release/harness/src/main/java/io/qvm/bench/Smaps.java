package io.qvm.bench;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.Map;
import java.util.Optional;

/**
 * A process's memory from {@code /proc/PID/smaps_rollup} (kB as the kernel reports them); on a
 * host without {@code /proc}, empty with the reason ({@link ProcFs.LinuxOnly}) and, where
 * {@code /bin/ps} answers, the RSS alone.
 */
record Smaps(long pid, Map<String, Long> kib, Optional<String> unavailable) {

    static Smaps of(long pid) throws IOException {
        return of(ProcFs.system(), pid);
    }

    static Smaps of(ProcFs proc, long pid) throws IOException {
        try {
            return new Smaps(pid, proc.smapsRollup(pid), Optional.empty());
        } catch (ProcFs.LinuxOnly e) {
            Map<String, Long> rss = ProcFs.rssFromPs(pid).map(r -> Map.of("Rss", r)).orElse(Map.of());
            return new Smaps(pid, rss, Optional.of(e.getMessage()));
        }
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
        if (unavailable.isPresent()) {
            o.put("unavailable", unavailable.get());
            return o;
        }
        o.put("privateKiB", privateKiB());
        o.put("ownKiB", ownKiB());
        return o;
    }
}
