package io.qvm.bench;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** {@code bench.md} of a cross-architecture run ({@code qvm bench --arch}): what was skipped says so. */
@Tag("unit")
class SummaryTest {

    @Test
    void aCrossArchitectureRunNamesItsGuestAndSaysWhatItSkipped() {
        String why = "a aarch64 guest on a x86_64 host (emulated): qvm bench --arch measures boot, template, "
                + "restore and the in-sandbox ways only";
        ObjectNode r = JsonNodeFactory.instance.objectNode();
        r.putObject("host").put("arch", "x86_64").put("guestArch", "aarch64").put("qemuVersion", "7.2.22")
                .put("accelerator", "tcg").putObject("image").put("vmlinuz", "0123456789abcdef0123");
        r.putObject("coldBoot").put("readyMillis", 128_428);
        r.putObject("templateBuild").put("wallMillis", 120_000).put("mode", "full");
        r.putObject("restore").putArray("readyMillis").add(5_011).add(5_331);
        r.set("poolAcquire", Bench.skipped(why));
        r.set("memory", Bench.skipped(why));
        ObjectNode svg = r.putObject("render").putObject("svg");
        svg.set("hostJvm", Bench.skipped(why));
        svg.set("warmSandbox", Bench.series(List.of(300_000_000L, 400_000_000L, 500_000_000L)));

        r.set("goals", Goals.evaluate(r));
        String md = Summary.markdown(r);
        assertTrue(md.contains("guest aarch64"), md);
        assertTrue(md.contains("| pool acquire p50 (idle clones available), ms |  | <= 5 | not measured | not measured in "
                + "this run |"), "a skipped way is neither met nor missed: " + md);
        assertTrue(md.contains("| restore to READY / cold boot to READY | 0.04 | <= 0.05 (aim 0.02) | yes |"), md);
        assertTrue(md.contains("| cold boot to READY | 128428 ms |"), md);
        assertFalse(md.contains("without the class archive"), "a run without that section has no row: " + md);
        assertTrue(md.contains("[5011,5331] ms"), md);
        assertTrue(md.contains("| host JVM, no isolation | skipped: " + why + " |"), md);
        assertTrue(md.contains("## Host memory\n\nskipped: " + why), md);
        assertFalse(md.contains("smaps_rollup"), "no memory table for a run that measured none: " + md);
        assertFalse(md.contains("tried again"), "no boot failed: " + md);
    }

    @Test
    void theHttpFiguresSitBesideTheLibrarysPerClientCount() {
        ObjectNode r = JsonNodeFactory.instance.objectNode();
        ObjectNode serve = r.putObject("serveHttp");
        ObjectNode one = serve.putObject("1Clients").put("clients", 1).put("documents", 10).put("perMinute", 11.5)
                .put("restored", 11).put("coldBooted", 0);
        one.set("latency", Bench.series(List.of(4_000_000_000L, 5_000_000_000L, 6_000_000_000L)));
        one.putObject("statuses").put("200", 10);
        ObjectNode four = serve.putObject("4Clients").put("clients", 4).put("documents", 10).put("perMinute", 0.0)
                .put("restored", 3).put("coldBooted", 0);
        four.putObject("statuses").put("503", 10);
        String md = Summary.markdown(r);
        assertTrue(md.contains("## Over HTTP (qvm serve on loopback: 2 sandboxes, one started ahead, more clients queue)"), md);
        assertTrue(md.contains("| 1 | 10 | 11.5 | "), md);
        assertTrue(md.contains("{200:10} | 11 / 0 |"), md);
        assertTrue(md.contains("| 4 | 10 | 0.0 | - | {503:10} | 3 / 0 |"), "no latency without a 200: " + md);
        ObjectNode failed = JsonNodeFactory.instance.objectNode();
        failed.set("serveHttp", Bench.failed("BootFailedException: no"));
        assertTrue(Summary.markdown(failed).contains("## Over HTTP (qvm serve)\n\nfailed: BootFailedException: no"));
    }

    @Test
    void theColdBootWithoutTheClassArchiveSitsBesideTheOneWithIt() {
        ObjectNode r = JsonNodeFactory.instance.objectNode();
        r.putObject("coldBoot").put("readyMillis", 38_083);
        r.putObject("coldBootWithoutArchive").put("readyMillis", 54_618);
        String md = Summary.markdown(r);
        assertTrue(md.contains("| cold boot to READY | 38083 ms |\n"), md);
        assertTrue(md.contains("| cold boot to READY without the class archive (same run) | 54618 ms |\n"), md);
        r.set("coldBootWithoutArchive", Bench.failed("BootFailedException: no"));
        assertTrue(Summary.markdown(r).contains("| cold boot to READY without the class archive (same run) | failed: "
                + "BootFailedException: no |"));
    }

    @Test
    void bootsThatFailedAndWereTriedAgainAreListed() {
        ObjectNode r = JsonNodeFactory.instance.objectNode();
        r.withArray("bootFailures").addObject().put("step", "cold boot").put("attempt", 1)
                .put("error", "sandbox x did not become ready: the worker exited with status 0 before READY");
        String md = Summary.markdown(r);
        assertTrue(md.contains("Boots that failed and were tried again (the figures come from the attempt that "
                + "worked):\n\n- cold boot, attempt 1: sandbox x did not become ready: the worker exited with status 0 "
                + "before READY\n"), md);
    }

    @Test
    void aRunWhoseStepsFailedSaysWhichAndKeepsEverythingElse() {
        ObjectNode r = JsonNodeFactory.instance.objectNode();
        r.putObject("host").put("arch", "x86_64").put("qemuVersion", "7.2.22").put("accelerator", "tcg");
        r.putObject("coldBoot").put("readyMillis", 66_000);
        r.set("restore", Bench.failed("BootFailedException: sandbox x did not become ready"));
        ObjectNode svg = r.putObject("render").putObject("svg");
        svg.set("warmSandbox", Bench.series(List.of(500_000_000L, 510_000_000L, 520_000_000L)));
        svg.set("clonePerRequest", Bench.series(List.of(600_000_000L, 700_000_000L, 800_000_000L)));
        svg.set("jvmPerRequest", Bench.series(List.of(700_000_000L, 720_000_000L, 740_000_000L)));
        r.set("ratios", Bench.ratios(r.path("render")));
        r.putObject("idleCpu").put("idlePauseMillis", 1000).put("windowMillis", 5000).put("runningPercent", 34.1)
                .put("pausedPercent", 0.2);
        r.putObject("documentsPerMinute").putObject("oneClient").put("documents", 20).put("perMinute", 41.5)
                .put("restored", 21).put("coldBooted", 0).set("latency", Bench.series(List.of(1_400_000_000L,
                        1_500_000_000L, 1_600_000_000L)));
        ObjectNode mem = r.putObject("memory");
        mem.putObject("warmedClone").put("RssKiB", 300 << 10).put("PssKiB", 290 << 10).put("ownKiB", 165 << 10)
                .put("Private_CleanKiB", 120 << 10);
        ObjectNode many = mem.putObject("clonesAtOnce");
        many.put("requested", 8).put("count", 7).put("failed", 1).put("allReadyMillis", 13_100);
        many.putArray("errors").add("BootFailedException: sandbox not started: every restore failed");
        many.putArray("idleCpuPercentEach").add(0.0).add(0.4).add(3.0);
        r.withArray("failedSections").addObject().put("section", "restore to READY, one clone after another")
                .put("error", "BootFailedException: sandbox x did not become ready");

        r.set("goals", Goals.evaluate(r));
        String md = Summary.markdown(r);
        assertTrue(md.contains("**Steps that failed** (recorded as failed; the run went on):\n\n- restore to READY, "
                + "one clone after another: BootFailedException: sandbox x did not become ready"), md);
        assertTrue(md.contains("| restore to READY (clones in a row) | failed: BootFailedException"), md);
        assertTrue(md.contains("| restore to READY / cold boot to READY |  | <= 0.05 (aim 0.02) | not measured |"),
                "a failed step is neither met nor missed: " + md);
        assertTrue(md.contains("fresh clone per request (pool) / warm sandbox — SVG 1.373"), md);
        assertTrue(md.contains("/ fresh JVM per request — SVG 0.972"), md);
        assertTrue(md.contains("| CPU of an idle clone (paused after SandboxConfig.idlePause), % of a core | 0.2 | <= 2 "
                + "| yes | running idle: 34.1 % |"), md);
        assertTrue(md.contains("| documents per minute through the default pool (fresh clone each), one client | 41.5 |"
                + " >= 60 | **no** |"), md);
        assertTrue(md.contains("| clones ready at once (idle CPU of each <= 2 %) | 7.0 | >= 16 | **no** | of 8 started"),
                md);
        assertTrue(md.contains("8 clones started at once: 7 READY (1 failed: [\"BootFailedException: sandbox not "
                + "started: every restore failed\"])"), md);
        assertTrue(md.contains("| 1 | 20 | 41.5 | 1500.00 / 1600.00 ms (3) | 21 / 0 |"), md);
        assertTrue(md.contains("| one clone warmed as a pool's is (canned renders) | 300 MiB | 290 MiB | 165 MiB | 120 MiB |"),
                md);
    }

    @Test
    void aBootFailureIsRecognisedThroughWhatWrapsIt() {
        io.qvm.BootFailedException boot = new io.qvm.BootFailedException("no READY");
        assertTrue(Bench.bootFailure(boot));
        assertTrue(Bench.bootFailure(new io.qvm.SandboxException("template build failed", boot)));
        assertFalse(Bench.bootFailure(new io.qvm.SandboxException("the template directory is full")));
    }
}
