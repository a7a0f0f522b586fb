package io.qvm.cli;

import io.qvm.image.ImageInfo;
import io.qvm.image.PackageLock;
import io.qvm.protocol.image.Arch;
import io.qvm.release.MavenDeployer;
import io.qvm.release.Release;
import io.qvm.release.ReleaseReport;
import io.qvm.release.ReleaseSigner;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code qvm release}: build both images from the lock, prove each reproducible, write their
 * SBOMs, stage them, run the host gate on the staged files, and only then publish and install
 * them (see {@link Release}). The report (text: release.md; {@code --json}: release.json, schema
 * {@code qvm.release/1}) is printed either way; a failed release exits 9 and publishes nothing.
 */
@Command(name = "release", description = "Build the x86_64 and aarch64 images from the lock, check each is "
        + "reproducible, write their SBOMs, stage them, prove them on this host (the gate boots them), and only then "
        + "publish them to OUT/VERSION (with pinned-images.properties, the hashes a backend of VERSION pins), install "
        + "them, with the library jars of this checkout (every jar qvm-bom manages, its sources and javadoc, the BOM "
        + "and the parent POM; another checkout with -Dqvm.release.reactor=DIR), into the local Maven repository and, "
        + "with --deploy-url, deploy them to a remote one; with a signing key each artifact gets its .asc.",
        footer = {"", "Exit status 9 when a step failed: the report names it with its evidence; nothing was published "
                + "or installed. JSON (--json): the contents of release.json, schema qvm.release/1 (docs/CONTRACTS.md, "
                + "\"Release\")."})
final class ReleaseCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    JsonOption json;

    /**
     * {@code --version} names the release here, so picocli does not give this command the
     * inherited {@code --help}/{@code --version} pair: {@code --help} is declared again.
     */
    @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help message and exit.")
    boolean help;

    @Option(names = "--version", paramLabel = "V", description = "The release version (default: the project's, "
            + "the one the backend looks for in a Maven repository).")
    String version;

    @Option(names = "--out", paramLabel = "DIR", description = "Where VERSION/ is published (default out/release).")
    Path out;

    @Option(names = "--maven-repo", paramLabel = "DIR", description = "The local Maven repository to install into "
            + "(default: where the backend looks: -Dmaven.repo.local, $QVM_MAVEN_REPO, settings.xml's, ~/.m2/repository).")
    Path mavenRepo;

    @Option(names = "--arch", paramLabel = "x86_64|aarch64", converter = ImageCommand.ArchConverter.class,
            description = "Release only these architectures (repeatable; default: both).")
    List<Arch> archs;

    @Option(names = "--skip-reproduce", description = "Build each image once (no second build to compare): for a "
            + "quick try only, with --no-install (a release that is not proven reproducible is never installed); the "
            + "report says reproducibility was NOT checked.")
    boolean skipReproduce;

    @Option(names = "--no-install", description = "Publish to OUT/VERSION only; install nothing into the Maven "
            + "repository (required with --skip-reproduce).")
    boolean noInstall;

    @Option(names = "--signing-key", paramLabel = "FILE", description = "Sign the release with this armoured OpenPGP "
            + "secret key (gpg --armor --export-secret-keys KEYID): each image's SHA256SUMS and the release's get a "
            + "detached signature, SHA256SUMS.asc, which a backend given the public key (QVM_IMAGE_KEY) requires. The "
            + "passphrase comes from $" + ReleaseSigner.PASSPHRASE_ENV + " or --signing-passphrase-file, never from "
            + "the command line.")
    Path signingKey;

    @Option(names = "--signing-passphrase-file", paramLabel = "FILE", description = "A file whose first line is the "
            + "signing key's passphrase (default: $" + ReleaseSigner.PASSPHRASE_ENV + ", else none).")
    Path passphraseFile;

    @Option(names = "--deploy-url", paramLabel = "URL", description = "After everything else passed, deploy the "
            + "image artifacts (POM, zips, manifests, their checksums and .asc signatures, then maven-metadata.xml) to "
            + "the Maven repository at URL, as mvn deploy does (https; plain http only to loopback unless "
            + "--allow-insecure-http). Requires --deploy-repository-id.")
    String deployUrl;

    @Option(names = "--deploy-repository-id", paramLabel = "ID", description = "The id of the <server> in settings.xml "
            + "whose <username> and <password> (HTTP Basic) deploy to --deploy-url; ${env.NAME} is expanded, encrypted "
            + "passwords are not supported.")
    String deployRepositoryId;

    @Option(names = {"-s", "--settings"}, paramLabel = "FILE", description = "The settings.xml holding the deploy "
            + "credentials (default ~/.m2/settings.xml).")
    Path settings;

    @Option(names = "--allow-insecure-http", description = "Allow a plain-http --deploy-url to a host that is not "
            + "loopback (the credentials cross the network in clear).")
    boolean allowInsecureHttp;

    @Option(names = "--worker-jar", paramLabel = "JAR", description = "The worker jar the images take (default: the "
            + "checkout's renderer-worker/target/renderer-worker.jar).")
    Path workerJar;

    private final CliContext ctx;

    ReleaseCommand(CliContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public Integer call() throws Exception {
        Progress progress = new Progress(spec.commandLine().getErr(), ctx.interactive() && !json.enabled());
        Path outDir = out != null ? out.toAbsolutePath().normalize()
                : ctx.imageRoot(null).getParent().resolve("release");
        Path jar = workerJar != null ? workerJar.toAbsolutePath().normalize()
                : ImageInfo.repoRoot().resolve("renderer-worker/target/renderer-worker.jar");
        PackageLock lock = PackageLock.bundled();
        String host = System.getProperty("os.name") + " " + System.getProperty("os.arch") + ", "
                + Runtime.getRuntime().availableProcessors() + " cores";
        Release.Builder b;
        try {
            b = Release.builder().version(version != null ? version : Release.projectVersion());
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCode.USAGE, "USAGE", e.getMessage(), "qvm release --help", e);
        }
        b.outDir(outDir).mavenRepository(mavenRepo).reproduce(!skipReproduce).install(!noInstall).lock(lock)
                .workerJar(jar)
                .images(ctx.releaseTools().images(lock, jar)).gate(ctx.releaseTools().gate(ctx))
                .progress(progress::line).host(host);
        if (archs != null && !archs.isEmpty()) {
            b.archs(archs);
        }
        if (signingKey != null) {
            char[] passphrase = passphraseFile != null ? ReleaseSigner.passphraseFile(passphraseFile)
                    : ctx.env().getOrDefault(ReleaseSigner.PASSPHRASE_ENV, "").toCharArray();
            try {
                b.signer(ReleaseSigner.load(signingKey, passphrase));
            } catch (IllegalArgumentException e) {
                throw new CliException(ExitCode.USAGE, "USAGE", e.getMessage(), "qvm release --help", e);
            } finally {
                java.util.Arrays.fill(passphrase, '\0');
            }
        } else if (passphraseFile != null) {
            throw new CliException(ExitCode.USAGE, "USAGE", "--signing-passphrase-file without --signing-key",
                    "qvm release --help", null);
        }
        MavenDeployer.Target deployTarget = null;
        if (deployUrl != null || deployRepositoryId != null) {
            if (deployUrl == null || deployRepositoryId == null) {
                throw new CliException(ExitCode.USAGE, "USAGE", "--deploy-url and --deploy-repository-id go together "
                        + "(the id names the <server> of settings.xml with the credentials)", "qvm release --help", null);
            }
            try {
                deployTarget = MavenDeployer.target(deployUrl, deployRepositoryId, settings, allowInsecureHttp,
                        ctx.env());
            } catch (IllegalArgumentException e) {
                throw new CliException(ExitCode.USAGE, "USAGE", e.getMessage(), "qvm release --help", e);
            }
            b.deploy(deployTarget);
        } else if (settings != null || allowInsecureHttp) {
            throw new CliException(ExitCode.USAGE, "USAGE", (settings != null ? "--settings" : "--allow-insecure-http")
                    + " without --deploy-url", "qvm release --help", null);
        }
        Release release;
        try {
            release = b.build();
        } catch (IllegalStateException e) {
            throw new CliException(ExitCode.USAGE, "USAGE", e.getMessage(), "qvm release --help", e);
        }
        Release.Result r;
        try {
            r = release.run();
        } finally {
            progress.done();
            MavenDeployer.forget(deployTarget);
        }
        PrintWriter o = spec.commandLine().getOut();
        if (json.enabled()) {
            o.println(Output.JSON.writeValueAsString(ReleaseReport.json(r, host)));
        } else {
            o.print(ReleaseReport.markdown(r, host));
        }
        o.flush();
        r.failure().ifPresent(f -> spec.commandLine().getErr().println("qvm: release failed at " + f.name() + ": "
                + f.evidence() + "\nqvm: nothing was published or installed"));
        return r.ok() ? ExitCode.OK.code() : ExitCode.RELEASE_FAILED.code();
    }
}
