package io.qvm.bench;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;

/** {@code bench.md}: the run's figures as Markdown tables. */
final class Summary {

    private Summary() {
    }

    static String markdown(JsonNode r) {
        StringBuilder md = new StringBuilder("# qvm bench\n\n");
        JsonNode h = r.path("host");
        md.append("Run ").append(r.path("started").asText()).append(" → ").append(r.path("finished").asText())
                .append(" (`qvm bench`). Host: ").append(h.path("os").asText()).append(", ")
                .append(h.path("arch").asText()).append(", ").append(h.path("cpus").asInt()).append(" CPUs, ")
                .append(h.path("memTotalKiB").asLong() / 1024 / 1024).append(" GiB; QEMU ")
                .append(h.path("qemuVersion").asText()).append(", accelerator **").append(h.path("accelerator").asText())
                .append("**; guest ").append(h.path("guestArch").asText(h.path("arch").asText())).append(", ")
                .append(r.path("config").path("vcpus").asInt()).append(" vCPU, ")
                .append(r.path("config").path("memoryMib").asInt()).append(" MiB; Java ")
                .append(h.path("java").asText()).append(".\n\nImage:");
        h.path("image").fields().forEachRemaining(e -> md.append(" `").append(e.getKey()).append("` ")
                .append(e.getValue().asText(), 0, 16).append("…"));
        if (r.path("failedSections").size() > 0) {
            md.append("\n\n**Steps that failed** (recorded as failed; the run went on):\n");
            for (JsonNode f : r.path("failedSections")) {
                md.append("\n- ").append(f.path("section").asText()).append(": ").append(f.path("error").asText());
            }
        }
        md.append("\n\n## Goals (issues #8, #22)\n\n| goal | value | target | met | detail |\n| --- | --- | --- | --- | --- |\n");
        for (JsonNode g : r.path("goals")) {
            md.append("| ").append(g.path("goal").asText()).append(" | ").append(g.path("value").isNull() ? "" : g.path("value").asText())
                    .append(" | ").append(g.path("target").asText()).append(" | ")
                    .append(g.path("met").isNull() ? "not measured" : g.path("met").asBoolean() ? "yes" : "**no**").append(" | ")
                    .append(g.path("detail").asText()).append(" |\n");
        }
        if (r.path("bootFailures").size() > 0) {
            md.append("\nBoots that failed and were tried again (the figures come from the attempt that worked):\n\n");
            for (JsonNode f : r.path("bootFailures")) {
                md.append("- ").append(f.path("step").asText()).append(", attempt ").append(f.path("attempt").asInt())
                        .append(": ").append(f.path("error").asText()).append("\n");
            }
        }
        md.append("\n## Boot, template, restore\n\n| what | figure |\n| --- | --- |\n");
        row(md, "cold boot to READY", failedOr(r.path("coldBoot"), r.path("coldBoot").path("readyMillis").asLong() + " ms"));
        r.path("coldBoot").path("phases").fields().forEachRemaining(e ->
                row(md, "&nbsp;&nbsp;cold boot phase `" + e.getKey() + "`", e.getValue().asLong() + " ms"));
        if (!r.path("coldBootWithoutArchive").isMissingNode()) {
            row(md, "cold boot to READY without the class archive (same run)", failedOr(r.path("coldBootWithoutArchive"),
                    r.path("coldBootWithoutArchive").path("readyMillis").asLong() + " ms"));
        }
        JsonNode t = r.path("templateBuild");
        row(md, "template build (boot + save)", t.has("failed") ? "failed: " + t.path("failed").asText() : t.path("wallMillis").asLong() + " ms (boot " + t.path("bootMillis")
                .asLong() + " ms, save " + t.path("saveMillis").asLong() + " ms, " + t.path("mode").asText() + ", state "
                + t.path("stateBytes").asLong() / 1024 + " KiB)");
        row(md, "restore to READY (clones in a row)", failedOr(r.path("restore"), r.path("restore").path("readyMillis") + " ms"));
        r.path("restore").path("phases").fields().forEachRemaining(e ->
                row(md, "&nbsp;&nbsp;restore phase `" + e.getKey() + "`", e.getValue().asLong() + " ms"));
        series(md, "pool acquire (idle clones ready)", r.path("poolAcquire"));
        series(md, "no-op round trip (empty ECHO)", r.path("noopRoundTrip"));
        row(md, "throughput host → guest (16 MiB)", r.path("throughput").path("upMBps").toString() + " MB/s");
        row(md, "throughput guest → host (16 MiB)", r.path("throughput").path("downMBps").toString() + " MB/s");
        md.append("\n## Render latency (fixed inputs: samples/hello.svg, samples/hello.pdf)\n\n")
                .append("| way | SVG p50 / p99 (n) | PDF p50 / p99 (n) |\n| --- | --- | --- |\n");
        for (Map.Entry<String, String> w : Map.of("hostJvm", "1 host JVM, no isolation", "jvmPerRequest",
                "2 fresh JVM subprocess per request", "runscOnHost", "3 runsc on the host (gVisor alone)",
                "warmSandbox", "4 warm reused sandbox (VM + gVisor)", "clonePerRequest",
                "5 fresh clone per request (pool)", "clonePrepared",
                "6 fresh clone per request, prepared ahead, nothing else running").entrySet().stream().sorted(Map.Entry.comparingByValue()).toList()) {
            md.append("| ").append(w.getValue().substring(2)).append(" | ").append(cell(r.path("render").path("svg")
                    .path(w.getKey()))).append(" | ").append(cell(r.path("render").path("pdf").path(w.getKey())))
                    .append(" |\n");
        }
        JsonNode ratios = r.path("ratios");
        if (ratios.isObject()) {
            md.append("\nRatios of p50s: fresh clone per request (pool) / warm sandbox — SVG ")
                    .append(ratios.path("svg").path("clonePerRequestOverWarmSandbox").asText("?")).append(", PDF ")
                    .append(ratios.path("pdf").path("clonePerRequestOverWarmSandbox").asText("?"))
                    .append("; / fresh JVM per request — SVG ")
                    .append(ratios.path("svg").path("clonePerRequestOverJvmPerRequest").asText("?")).append(", PDF ")
                    .append(ratios.path("pdf").path("clonePerRequestOverJvmPerRequest").asText("?")).append(".\n");
        }
        JsonNode idleCpu = r.path("idleCpu");
        if (idleCpu.has("failed") || idleCpu.has("skipped")) {
            md.append("\n## Idle CPU\n\n").append(idleCpu.has("failed") ? "failed: " + idleCpu.path("failed").asText()
                    : "skipped: " + idleCpu.path("skipped").asText()).append("\n");
        } else if (idleCpu.isObject()) {
            md.append("\n## Idle CPU (one warmed clone, ").append(idleCpu.path("windowMillis").asLong())
                    .append(" ms window)\n\n| what | figure |\n| --- | --- |\n");
            row(md, "running idle (idlePause off)", idleCpu.path("runningPercent").asText() + " % of a core");
            row(md, "paused (idlePause " + idleCpu.path("idlePauseMillis").asLong() + " ms)",
                    idleCpu.path("pausedPercent").asText() + " % of a core");
            series(md, "SVG render right after a resume", idleCpu.path("svgRenderAfterPause"));
            series(md, "SVG render in the same sandbox, running", idleCpu.path("svgRenderRunning"));
        }
        JsonNode docs = r.path("documentsPerMinute");
        if (docs.has("failed") || docs.has("skipped")) {
            md.append("\n## Documents per minute\n\n").append(docs.has("failed") ? "failed: "
                    + docs.path("failed").asText() : "skipped: " + docs.path("skipped").asText()).append("\n");
        } else if (docs.isObject()) {
            md.append("\n## Documents per minute (the default pool: a fresh clone each, one restored ahead)\n\n")
                    .append("| clients | documents | per minute | latency p50 / p99 (n) | restored / cold-booted |\n")
                    .append("| --- | --- | --- | --- | --- |\n");
            for (String k : new String[] {"oneClient", "twoClients"}) {
                JsonNode d = docs.path(k);
                if (d.isObject()) {
                    md.append("| ").append(k.equals("oneClient") ? 1 : 2).append(" | ").append(d.path("documents").asInt())
                            .append(" | ").append(d.path("perMinute").asText()).append(" | ")
                            .append(cell(d.path("latency"))).append(" | ").append(d.path("restored").asLong()).append(" / ")
                            .append(d.path("coldBooted").asLong()).append(" |\n");
                }
            }
        }
        JsonNode serve = r.path("serveHttp");
        if (serve.has("failed") || serve.has("skipped")) {
            md.append("\n## Over HTTP (qvm serve)\n\n").append(serve.has("failed") ? "failed: "
                    + serve.path("failed").asText() : "skipped: " + serve.path("skipped").asText()).append("\n");
        } else if (serve.isObject()) {
            md.append("\n## Over HTTP (qvm serve on loopback: 2 sandboxes, one started ahead, more clients queue)\n\n")
                    .append("| clients | documents | per minute | latency p50 / p99 (n) | statuses | restored / cold-booted |\n")
                    .append("| --- | --- | --- | --- | --- | --- |\n");
            for (String k : new String[] {"1Clients", "2Clients", "4Clients"}) {
                JsonNode d = serve.path(k);
                if (d.isObject()) {
                    md.append("| ").append(d.path("clients").asInt()).append(" | ").append(d.path("documents").asInt())
                            .append(" | ").append(d.path("perMinute").asText()).append(" | ")
                            .append(d.has("latency") ? cell(d.path("latency")) : "-").append(" | ")
                            .append(d.path("statuses").toString().replace("\"", "")).append(" | ")
                            .append(d.path("restored").asLong()).append(" / ").append(d.path("coldBooted").asLong())
                            .append(" |\n");
                }
            }
        }
        JsonNode m = r.path("memory");
        if (m.has("failed")) {
            md.append("\n## Host memory\n\nfailed: ").append(m.path("failed").asText()).append("\n");
            return md.toString();
        }
        if (m.has("skipped")) {
            md.append("\n## Host memory\n\nskipped: ").append(m.path("skipped").asText()).append("\n");
            return md.toString();
        }
        md.append("\n## Host memory (from /proc/PID/smaps_rollup)\n\n| what | RSS | PSS | Private_Dirty (its own) | Private_Clean |\n| --- | --- | --- | --- | --- |\n");
        JsonNode idle = m.path("idleClone");
        if (idle.has("unavailable")) {
            md.append("\n(not measured on this host: ").append(idle.path("unavailable").asText()).append(")\n");
        }
        memoryRow(md, "one idle clone", idle);
        JsonNode warmed = m.path("warmedClone");
        if (warmed.has("RssKiB")) {
            memoryRow(md, "one clone warmed as a pool's is (canned renders)", warmed);
        }
        JsonNode many = m.path("clonesAtOnce");
        int n = many.path("count").asInt(1);
        md.append("| ").append(n).append(" clones up at once, each (mean) | | ")
                .append(many.path("pssKiBTotal").asLong() / 1024 / Math.max(1, n)).append(" MiB | ")
                .append(many.path("ownKiBTotal").asLong() / 1024 / Math.max(1, n)).append(" MiB | |\n");
        md.append("\nOne idle clone used ").append(idle.path("cpuPercentIdle").asDouble())
                .append(" % of a host core over 5 s while idle.\n");
        int requested = many.path("requested").asInt(n);
        md.append("\n").append(requested).append(" clones started at once: ").append(n).append(" READY")
                .append(requested > n ? " (" + (requested - n) + " failed: " + many.path("errors") + ")" : "")
                .append(" after ").append(many.path("allReadyMillis").asLong()).append(" ms; MemAvailable with them up: ")
                .append(many.path("memAvailableKiBWhileUp").asLong() / 1024).append(" MiB; idle CPU of each (% of a core): ")
                .append(many.path("idleCpuPercentEach")).append(".\n");
        return md.toString();
    }

    private static String failedOr(JsonNode section, String figure) {
        return section.has("failed") ? "failed: " + section.path("failed").asText() : figure;
    }

    private static void row(StringBuilder md, String what, String figure) {
        md.append("| ").append(what).append(" | ").append(figure).append(" |\n");
    }

    private static void series(StringBuilder md, String what, JsonNode s) {
        row(md, what, cell(s));
    }

    private static String cell(JsonNode s) {
        if (s.has("failed")) {
            return "failed: " + s.path("failed").asText();
        }
        if (s.has("skipped")) {
            return "skipped: " + s.path("skipped").asText();
        }
        return String.format("%.2f / %.2f ms (%d)", s.path("p50Millis").asDouble(), s.path("p99Millis").asDouble(),
                s.path("n").asInt());
    }

    /** A row of the memory table: {@code smaps}' RSS, PSS, own Private_Dirty and Private_Clean, in MiB. */
    private static void memoryRow(StringBuilder md, String what, JsonNode smaps) {
        md.append("| ").append(what).append(" | ").append(smaps.path("RssKiB").asLong() / 1024).append(" MiB | ")
                .append(smaps.path("PssKiB").asLong() / 1024).append(" MiB | ").append(smaps.path("ownKiB").asLong() / 1024)
                .append(" MiB | ").append(smaps.path("Private_CleanKiB").asLong() / 1024).append(" MiB |\n");
    }
}
