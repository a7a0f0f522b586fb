package io.qvm.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.qvm.image.PackageLock;
import io.qvm.release.ImageFactory;
import io.qvm.release.Reactors;
import io.qvm.release.Release;
import io.qvm.release.ReleaseGate;
import io.qvm.release.ScriptedGate;
import io.qvm.release.SyntheticImages;
import io.qvm.release.WorkerBoms;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code qvm release} through the CLI's one factory, with a synthetic image build and a scripted
 * gate: a release that passes publishes and exits 0 with the report; one whose gate fails exits 9,
 * prints the report naming the step, and publishes nothing; a bad version is a usage error.
 */
@Tag("unit")
class ReleaseCommandTest {

    @TempDir
    Path tmp;

    /** The release publishes the library artifacts of a checkout at its version: a fake one at 2.0.0. */
    @BeforeEach
    void checkoutAtTheReleasesVersion() throws Exception {
        System.setProperty(Release.REACTOR_PROPERTY,
                Reactors.write(tmp.resolve("checkout"), "2.0.0").toString());
    }

    @AfterEach
    void noCheckout() {
        System.clearProperty(Release.REACTOR_PROPERTY);
    }

    CliContext context(ReleaseGate gate) {
        return context(gate, null);
    }

    CliContext context(ReleaseGate gate, SyntheticImages images) {
        return CliRun.context(tmp.resolve("state"), tmp.resolve("images"), new FakeImageTool())
                .withReleaseTools(new ReleaseTools() {
                    @Override
                    public ImageFactory images(PackageLock lock, Path workerJar) {
                        return images != null ? images : new SyntheticImages(lock);
                    }

                    @Override
                    public ReleaseGate gate(CliContext ctx) {
                        return gate;
                    }
                });
    }

    String[] args(String... more) throws Exception {
        Path jar = Files.write(tmp.resolve("worker.jar"), WorkerBoms.jar(WorkerBoms.bom(false)));
        String[] base = {"release", "--version", "2.0.0", "--out", tmp.resolve("out").toString(), "--maven-repo",
            tmp.resolve("m2").toString(), "--worker-jar", jar.toString()};
        String[] all = new String[base.length + more.length];
        System.arraycopy(base, 0, all, 0, base.length);
        System.arraycopy(more, 0, all, base.length, more.length);
        return all;
    }

    @Test
    void aPassingReleasePublishesAndPrintsItsReport() throws Exception {
        CliRun.Result r = CliRun.run(context(ScriptedGate.passing()), args("--json"));
        assertEquals(0, r.exit(), r.toString());
        JsonNode j = r.json();
        assertEquals("qvm.release/1", j.path("schema").asText());
        assertTrue(j.path("ok").asBoolean());
        assertEquals("2.0.0", j.path("version").asText());
        assertEquals(tmp.resolve("out/2.0.0").toString(), j.path("published").asText());
        assertEquals(2, j.path("architectures").size());
        assertTrue(Files.isRegularFile(tmp.resolve("out/2.0.0/release.md")));
        assertTrue(Files.isRegularFile(tmp.resolve("m2/io/qvm/qvm-image/2.0.0/qvm-image-2.0.0-aarch64.zip")));
        assertTrue(r.err().contains("[qvm] ok gate:") || r.err().contains("[qvm] ok gate "), r.err());
        assertTrue(r.err().contains("[qvm] ok report"), r.err());
    }

    @Test
    void aFailedGateExitsNineWithTheStepAndPublishesNothing() throws Exception {
        CliRun.Result r = CliRun.run(context(new ScriptedGate("x86_64:render", null)), args("--arch", "x86_64"));
        assertEquals(9, r.exit(), r.toString());
        assertTrue(r.out().contains("**NOT published**") && r.out().contains("step `gate:x86_64:render` failed")
                && r.out().contains("hello.pdf: PARSE_ERROR"), r.out());
        assertTrue(r.err().contains("qvm: release failed at gate:x86_64:render: ")
                && r.err().contains("hello.pdf: PARSE_ERROR") && r.err().contains("nothing was published"), r.err());
        assertFalse(Files.exists(tmp.resolve("out/2.0.0")));
        assertFalse(Files.exists(tmp.resolve("m2")));
    }

    /**
     * A worker jar built offline has no BOM (cyclonedx-maven-plugin skips makeBom under -o): the
     * release stops at sbom:x86_64 and says so — on stderr, not only in the report — and what to do.
     * It used to print only "release failed at sbom:x86_64; nothing was published".
     */
    @Test
    void aWorkerJarWithoutItsBomSaysWhatFailedAtTheSbomStep() throws Exception {
        SyntheticImages images = new SyntheticImages(PackageLock.bundled())
                .workerJar(WorkerBoms.jarWithoutBom());
        CliRun.Result r = CliRun.run(context(ScriptedGate.passing(), images), args("--arch", "x86_64"));
        assertEquals(9, r.exit(), r.toString());
        String last = r.err().lines().filter(l -> l.startsWith("qvm: release failed at ")).findFirst().orElse("");
        assertTrue(last.startsWith("qvm: release failed at sbom:x86_64: ") && last.contains("worker.cdx.json")
                && last.contains("offline") && last.contains("without -o"), r.err());
        assertTrue(r.err().contains("[qvm] FAILED sbom:x86_64"), r.err());
        assertFalse(Files.exists(tmp.resolve("out/2.0.0")));
    }

    /** A release that is not proven reproducible never installs: --skip-reproduce needs --no-install. */
    @Test
    void skipReproduceWithoutNoInstallIsRefusedAndSaysWhatToDo() throws Exception {
        SyntheticImages images = new SyntheticImages(PackageLock.bundled());
        CliRun.Result r = CliRun.run(context(ScriptedGate.passing(), images), args("--arch", "x86_64",
                "--skip-reproduce"));
        assertEquals(2, r.exit(), r.toString());
        assertTrue(r.err().contains("skips the reproduce step") && r.err().contains("--no-install"), r.err());
        assertEquals(0, images.builds());
        assertFalse(Files.exists(tmp.resolve("out/2.0.0")));
        assertFalse(Files.exists(tmp.resolve("m2")));

        CliRun.Result trial = CliRun.run(context(ScriptedGate.passing(), images), args("--arch", "x86_64",
                "--skip-reproduce", "--no-install"));
        assertEquals(0, trial.exit(), trial.toString());
        assertEquals(1, images.builds());
        assertTrue(trial.out().contains("NOT installed") && trial.out().contains("NOT checked"), trial.out());
        assertTrue(Files.isDirectory(tmp.resolve("out/2.0.0")));
        assertFalse(Files.exists(tmp.resolve("m2/io/qvm/qvm-image")), "nothing installed");
    }

    static CliContext withPassphrase(CliContext ctx, String passphrase) {
        java.util.Map<String, String> env = new java.util.HashMap<>(ctx.env());
        env.put("QVM_SIGNING_PASSPHRASE", passphrase);
        return ctx.withEnv(env);
    }

    /** --signing-key signs with the passphrase from the environment; a wrong one is a usage error before any build. */
    @Test
    void aSigningKeyWithItsPassphraseFromTheEnvironmentSignsTheRelease() throws Exception {
        io.qvm.internal.image.TestKeys.Key key = io.qvm.internal.image.TestKeys.generate("r <r@qvm.test>", "pw");
        Path secret = key.writeSecret(tmp.resolve("release.key.asc"));
        SyntheticImages images = new SyntheticImages(PackageLock.bundled());
        CliContext wrong = withPassphrase(context(ScriptedGate.passing(), images), "not it");
        CliRun.Result refused = CliRun.run(wrong, args("--arch", "x86_64", "--signing-key", secret.toString()));
        assertEquals(2, refused.exit(), refused.toString());
        assertTrue(refused.err().contains("passphrase does not unlock"), refused.err());
        assertEquals(0, images.builds());

        CliContext right = withPassphrase(context(ScriptedGate.passing(), images), "pw");
        CliRun.Result r = CliRun.run(right, args("--arch", "x86_64", "--signing-key", secret.toString()));
        assertEquals(0, r.exit(), r.toString());
        assertTrue(Files.isRegularFile(tmp.resolve("out/2.0.0/x86_64/SHA256SUMS.asc")));
        assertTrue(Files.isRegularFile(tmp.resolve("out/2.0.0/SHA256SUMS.asc")));
    }

    @Test
    void aVersionThatIsNoPathSegmentIsAUsageError() throws Exception {
        CliRun.Result r = CliRun.run(context(ScriptedGate.passing()), "release", "--version", "../up", "--out",
                tmp.resolve("out").toString());
        assertEquals(2, r.exit(), r.toString());
        assertTrue(r.err().contains("a release version names a directory of a Maven repository"), r.err());
        CliRun.Result help = CliRun.run(context(ScriptedGate.passing()), "release", "--help");
        assertEquals(0, help.exit(), help.toString());
        assertTrue(help.out().contains("--skip-reproduce"), help.out());
    }

    @Test
    void deployOptionsAreCheckedBeforeAnythingIsBuilt() throws Exception {
        CliRun.Result r = CliRun.run(context(ScriptedGate.passing()), args("--deploy-url", "https://repo.example/r"));
        assertEquals(2, r.exit(), r.toString());
        assertTrue(r.err().contains("--deploy-url and --deploy-repository-id go together"), r.err());

        r = CliRun.run(context(ScriptedGate.passing()), args("--deploy-url", "http://repo.example/r",
                "--deploy-repository-id", "rel"));
        assertEquals(2, r.exit(), r.toString());
        assertTrue(r.err().contains("is plain http to repo.example, not loopback"), r.err());

        r = CliRun.run(context(ScriptedGate.passing()), args("--settings", tmp.resolve("s.xml").toString()));
        assertEquals(2, r.exit(), r.toString());
        assertTrue(r.err().contains("--settings without --deploy-url"), r.err());
        assertFalse(Files.exists(tmp.resolve("out")), "nothing was built or published");
    }
}
