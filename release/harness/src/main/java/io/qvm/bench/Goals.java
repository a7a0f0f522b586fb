package io.qvm.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/** The goals of issues #8 and #22, judged from one run's figures (ratios from the same run). */
final class Goals {

    private Goals() {
    }

    static ArrayNode evaluate(JsonNode r) {
        ArrayNode g = JsonNodeFactory.instance.arrayNode();
        double cold = r.path("coldBoot").path("readyMillis").asDouble(Double.NaN);
        add(g, "cold boot to READY, s", cold / 1000, "<= 14", cold / 1000 <= 14, "");
        double restore = median(r.path("restore").path("readyMillis"));
        add(g, "restore to READY / cold boot to READY", restore / cold, "<= 0.05 (aim 0.02)", restore / cold <= 0.05,
                String.format("%.0f ms / %.0f ms", restore, cold));
        JsonNode idleCpu = r.path("idleCpu");
        double paused = idleCpu.path("pausedPercent").asDouble(Double.NaN);
        add(g, "CPU of an idle clone (paused after SandboxConfig.idlePause), % of a core", paused, "<= 2", paused <= 2,
                String.format("running idle: %.1f %%", idleCpu.path("runningPercent").asDouble(Double.NaN)));
        for (String type : new String[] {"svg", "pdf"}) {
            JsonNode w = r.path("render").path(type);
            double clone = w.path("clonePerRequest").path("p50Millis").asDouble(Double.NaN);
            double warm = w.path("warmSandbox").path("p50Millis").asDouble(Double.NaN);
            add(g, type.toUpperCase() + " render p50: fresh clone per request (pool) / warm reused sandbox", clone / warm,
                    "<= 1.5", clone / warm <= 1.5, String.format("%.0f ms / %.0f ms", clone, warm));
            double jvm = w.path("jvmPerRequest").path("p50Millis").asDouble(Double.NaN);
            add(g, type.toUpperCase() + " render p50: fresh clone per request (pool) / fresh JVM per request",
                    clone / jvm, "< 1", clone / jvm < 1, String.format("%.0f ms / %.0f ms", clone, jvm));
            double prepared = w.path("clonePrepared").path("p50Millis").asDouble(Double.NaN);
            add(g, type.toUpperCase() + " render p50: fresh clone prepared ahead, nothing else running / warm",
                    prepared / warm, "<= 1.5", prepared / warm <= 1.5, String.format("%.0f ms / %.0f ms", prepared, warm));
        }
        double acquire = r.path("poolAcquire").path("p50Millis").asDouble(Double.NaN);
        add(g, "pool acquire p50 (idle clones available), ms", acquire, "<= 5", acquire <= 5, "");
        JsonNode docs = r.path("documentsPerMinute").path("oneClient");
        double perMinute = docs.path("perMinute").asDouble(Double.NaN);
        add(g, "documents per minute through the default pool (fresh clone each), one client", perMinute, ">= 60",
                perMinute >= 60, String.format("p50 %.0f ms; two clients: %.1f a minute",
                        docs.path("latency").path("p50Millis").asDouble(Double.NaN),
                        r.path("documentsPerMinute").path("twoClients").path("perMinute").asDouble(Double.NaN)));
        JsonNode idle = r.path("memory").path("idleClone");
        double own = idle.path("ownKiB").asDouble(Double.NaN) / 1024;
        add(g, "private memory of one idle clone (Private_Dirty), MiB", own, "<= 64", own <= 64,
                String.format("Private_Clean %.0f MiB more: template pages only it maps now; PSS %.0f MiB",
                        idle.path("Private_CleanKiB").asDouble() / 1024, idle.path("PssKiB").asDouble() / 1024));
        JsonNode many = r.path("memory").path("clonesAtOnce");
        double n = many.has("count") ? many.path("count").asDouble() : Double.NaN;
        double perClone = many.path("ownKiBTotal").asDouble(Double.NaN) / 1024 / n;
        double worstCpu = max(many.path("idleCpuPercentEach"));
        add(g, "clones ready at once (idle CPU of each <= 2 %)", n, ">= 16", n >= 16 && worstCpu <= 2,
                String.format("of %d started, all in %.1f s; %.0f MiB Private_Dirty, %.0f MiB PSS each; idle CPU "
                        + "at most %.1f %% each", many.path("requested").asInt(many.path("count").asInt()),
                        many.path("allReadyMillis").asDouble(Double.NaN) / 1000, perClone,
                        many.path("pssKiBTotal").asDouble() / 1024 / n, worstCpu));
        double rtt = r.path("noopRoundTrip").path("p50Millis").asDouble(Double.NaN);
        add(g, "no-op round trip p50, ms", rtt, "<= 1.5", rtt <= 1.5, "p99 "
                + r.path("noopRoundTrip").path("p99Millis").asDouble());
        double up = median(r.path("throughput").path("upMBps"));
        double down = median(r.path("throughput").path("downMBps"));
        add(g, "throughput host → guest, MB/s", up, ">= 60", up >= 60, "16 MiB");
        add(g, "throughput guest → host, MB/s", down, ">= 60", down >= 60, "16 MiB");
        return g;
    }

    private static double max(JsonNode array) {
        double m = Double.NaN;
        for (JsonNode v : array) {
            m = Double.isNaN(m) ? v.asDouble() : Math.max(m, v.asDouble());
        }
        return m;
    }

    private static void add(ArrayNode g, String what, double value, String goal, boolean met, String detail) {
        ObjectNode o = g.addObject();
        o.put("goal", what);
        o.put("value", Double.isNaN(value) ? null : Math.round(value * 1000) / 1000.0);
        o.put("target", goal);
        if (Double.isNaN(value) || Double.isInfinite(value)) {
            // a way this run skipped (qvm bench --arch) or could not measure: neither met nor missed
            o.putNull("met");
            o.put("detail", "not measured in this run");
            return;
        }
        o.put("met", met);
        o.put("detail", detail);
    }

    static double median(JsonNode array) {
        double[] v = new double[array.size()];
        for (int i = 0; i < v.length; i++) {
            v[i] = array.get(i).asDouble();
        }
        if (v.length == 0) {
            return Double.NaN;
        }
        java.util.Arrays.sort(v);
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }
}
