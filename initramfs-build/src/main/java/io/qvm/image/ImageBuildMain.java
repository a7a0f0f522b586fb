package io.qvm.image;

import io.qvm.protocol.image.Arch;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Command-line entry point of the image build (the {@code qvm image ...} CLI calls the same
 * API). Progress goes to stderr, one plain line per step; with {@code --json} the result goes
 * to stdout as JSON.
 * <pre>
 *   build  [--arch x86_64|aarch64|all] [--out DIR] [--worker-jar PATH] [--lock FILE] [--if-stale] [--json]
 *   info   [--arch A] [--out DIR] [--json]
 *   verify [--arch A] [--out DIR] [--json]          exit 1 if a file does not match
 *   lock   [--arch A|all] [--lock FILE] [--json]   refresh the lock from the registry
 *   lock-worker [--worker-jar PATH] [--lock FILE] [--json]   pin the worker jar's dependencies
 *   fetch  [--arch A|all] [--lock FILE] [--json]   download, verify and extract the pinned packages
 * </pre>
 * Exit codes: 0 ok, 1 failure, 2 usage.
 */
public final class ImageBuildMain {
    static final int OK = 0;
    static final int FAILED = 1;
    static final int USAGE = 2;

    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final String USAGE_TEXT = String.join("\n",
            "usage: qvm-image <command> [options]",
            "  build  [--arch x86_64|aarch64|all] [--out DIR] [--worker-jar PATH] [--lock FILE]",
            "         [--if-stale] [--cds] [--json]",
            "         --if-stale: skip when the image is up to date; --cds: ship the JDK's base CDS",
            "         archive (host arch only; the image is then not bit-reproducible)",
            "  info   [--arch A] [--out DIR] [--json]",
            "  verify [--arch A] [--out DIR] [--json]",
            "  lock   [--arch A|all] [--lock FILE] [--json]",
            "  lock-worker [--worker-jar PATH] [--lock FILE] [--json]",
            "         pin the Maven dependencies the worker jar was built from (its BOM) by SHA-256,",
            "         in " + WorkerLock.SOURCE_PATH + " (or --lock FILE); the build refuses others",
            "  fetch  [--arch A|all] [--lock FILE] [--json]",
            "         download (from " + DebianMirrors.ARCHIVE_ENV + " / " + DebianMirrors.SECURITY_ENV + ",",
            "         else the host's apt sources), verify and extract the pinned packages into the",
            "         cache, so a later build needs no network; needs no apt or dpkg",
            "defaults: --arch is the host's, --out is $QVM_IMAGE_DIR or out/image, the cache is",
            "$QVM_CACHE or ~/.cache/qvm, --worker-jar is renderer-worker/target/renderer-worker.jar,",
            "--lock is the bundled lock (for 'lock': " + PackageLock.SOURCE_PATH + ")");

    private ImageBuildMain() {
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    static int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length == 0 || args[0].equals("-h") || args[0].equals("--help")) {
            (args.length == 0 ? err : out).println(USAGE_TEXT);
            return args.length == 0 ? USAGE : OK;
        }
        Options o;
        try {
            o = Options.parse(Arrays.copyOfRange(args, 1, args.length));
        } catch (IllegalArgumentException e) {
            err.println("qvm-image: " + e.getMessage());
            err.println(USAGE_TEXT);
            return USAGE;
        }
        try {
            return switch (args[0]) {
                case "build" -> build(o, out, err);
                case "info" -> info(o, out, false);
                case "verify" -> info(o, out, true);
                case "lock" -> lock(o, out, err);
                case "lock-worker" -> lockWorker(o, out, err);
                case "fetch" -> fetch(o, out, err);
                default -> {
                    err.println("qvm-image: unknown command '" + args[0] + "'");
                    err.println(USAGE_TEXT);
                    yield USAGE;
                }
            };
        } catch (ImageException | IllegalArgumentException e) {
            err.println("qvm-image: error: " + e.getMessage());
            if (o.json) {
                ObjectNode j = MAPPER.createObjectNode();
                j.put("ok", false);
                j.put("error", e.getMessage());
                out.println(j.toPrettyString());
            }
            return FAILED;
        }
    }

    private static int build(Options o, PrintStream out, PrintStream err) {
        ImageBuilder.Builder b = ImageBuilder.builder()
                .progress(line -> err.println("[image] " + line));
        List<Arch> arches = o.arches();
        if (o.out != null) {
            b.outDir(o.out);
        }
        if (o.workerJar != null) {
            b.workerJar(o.workerJar);
        }
        if (o.lock != null) {
            b.lock(PackageLock.read(o.lock));
        }
        b.cds(o.cds);
        ArrayNode results = MAPPER.createArrayNode();
        for (Arch a : arches) {
            ImageBuilder builder = b.arch(a).build();
            if (o.ifStale && builder.upToDate()) {
                err.println("[image] " + a + " image is up to date, not rebuilding");
                ImageInfo info = ImageInfo.read(o.out != null ? o.out : ImageInfo.defaultOutDir(), a);
                ObjectNode j = results.addObject();
                j.put("ok", true);
                j.put("arch", a.id());
                j.put("dir", info.dir().toString());
                j.put("kernel_version", info.manifest().kernelVersion().orElse(""));
                j.put("rebuilt", false);
                continue;
            }
            ImageBuilder.Result r = builder.run();
            ObjectNode j = results.addObject();
            j.put("ok", true);
            j.put("arch", r.arch().id());
            j.put("dir", r.dir().toString());
            j.put("kernel_version", r.kernelVersion());
            j.put("rebuilt", true);
            j.put("build_millis", r.millis());
            ObjectNode files = j.putObject("files");
            r.sizes().forEach((f, size) -> {
                ObjectNode fo = files.putObject(f);
                fo.put("size", size);
                fo.put("sha256", r.sha256().get(f));
            });
        }
        if (o.json) {
            out.println((results.size() == 1 ? results.get(0) : results).toPrettyString());
        }
        return OK;
    }

    private static int info(Options o, PrintStream out, boolean verify) {
        Path outDir = o.out != null ? o.out : ImageInfo.defaultOutDir();
        int rc = OK;
        ArrayNode results = MAPPER.createArrayNode();
        for (Arch a : o.arches()) {
            ImageInfo info = ImageInfo.read(outDir, a);
            ObjectNode j = results.addObject();
            j.put("ok", info.ok());
            j.put("dir", info.dir().toString());
            ArrayNode p = j.putArray("problems");
            info.problems().forEach(p::add);
            j.set("manifest", MAPPER.valueToTree(info.manifest()));
            if (!o.json) {
                out.println(a + ": " + info.dir() + (info.ok() ? " (verified)" : " (DOES NOT VERIFY)"));
                out.println("  kernel " + info.manifest().kernelVersion().orElse("")
                        + ", runsc " + (info.manifest().runsc() == null ? "" : info.manifest().runsc().version()));
                for (var f : info.manifest().outputFiles()) {
                    out.println("  " + f.name() + " " + f.size() + " bytes " + f.sha256());
                }
                info.problems().forEach(x -> out.println("  problem: " + x));
            }
            if (verify && !info.ok()) {
                rc = FAILED;
            }
        }
        if (o.json) {
            out.println((results.size() == 1 ? results.get(0) : results).toPrettyString());
        }
        return rc;
    }

    private static int lock(Options o, PrintStream out, PrintStream err) {
        Path file = o.lock != null ? o.lock : ImageInfo.repoRoot().resolve(PackageLock.SOURCE_PATH);
        PackageLock previous = Files.isRegularFile(file) ? PackageLock.read(file) : null;
        List<Arch> arches = o.arch == null || o.arch.equals("all") ? List.of(Arch.values()) : o.arches();
        Locker locker = new Locker(PackageStore.defaultCache(), HostAptSources.mirrors(),
                line -> err.println("[image] " + line));
        PackageLock lock = locker.refresh(arches, previous);
        try {
            Files.createDirectories(file.toAbsolutePath().getParent());
            Files.writeString(file, lock.toJson());
        } catch (java.io.IOException e) {
            throw new ImageException("cannot write the lock " + file + ": " + e, e);
        }
        err.println("[image] wrote " + file);
        if (o.json) {
            ObjectNode j = MAPPER.createObjectNode();
            j.put("ok", true);
            j.put("lock", file.toString());
            j.put("packages", lock.all().values().stream().mapToInt(List::size).sum());
            out.println(j.toPrettyString());
        }
        return OK;
    }

    private static int fetch(Options o, PrintStream out, PrintStream err) {
        PackageLock lock = o.lock != null ? PackageLock.read(o.lock) : PackageLock.bundled();
        PackageStore store = new PackageStore(PackageStore.defaultCache(),
                line -> err.println("[image] " + line));
        ObjectNode j = MAPPER.createObjectNode();
        ArrayNode pkgs = j.putArray("packages");
        for (Arch a : o.arches()) {
            for (PackageLock.Entry e : lock.entries(a)) {
                Path dir = store.extracted(a, e);
                ObjectNode p = pkgs.addObject();
                p.put("arch", a.id());
                p.put("name", e.name());
                p.put("sha256", e.sha256());
                p.put("extracted", dir.toString());
            }
        }
        j.put("ok", true);
        if (o.json) {
            out.println(j.toPrettyString());
        } else {
            out.println(pkgs.size() + " pinned packages verified and extracted under " + store.cache());
        }
        return OK;
    }

    private static int lockWorker(Options o, PrintStream out, PrintStream err) {
        Path file = o.lock != null ? o.lock : ImageInfo.repoRoot().resolve(WorkerLock.SOURCE_PATH);
        Path jar = o.workerJar != null ? o.workerJar
                : ImageInfo.repoRoot().resolve("renderer-worker/target/renderer-worker.jar");
        WorkerLock now = WorkerLock.ofJar(jar);
        List<String> changes = Files.isRegularFile(file) ? WorkerLock.read(file).differences(now) : List.of("new lock");
        try {
            Files.createDirectories(file.toAbsolutePath().getParent());
            Files.writeString(file, now.render());
        } catch (java.io.IOException e) {
            throw new ImageException("cannot write the worker dependency lock " + file + ": " + e, e);
        }
        changes.forEach(c -> err.println("[image] " + c));
        err.println("[image] wrote " + file + ": " + now.artifacts().size() + " artifacts of " + jar.getFileName()
                + " (" + changes.size() + " change" + (changes.size() == 1 ? "" : "s") + ")");
        if (o.json) {
            ObjectNode j = MAPPER.createObjectNode();
            j.put("ok", true);
            j.put("lock", file.toString());
            j.put("artifacts", now.artifacts().size());
            ArrayNode c = j.putArray("changes");
            changes.forEach(c::add);
            out.println(j.toPrettyString());
        }
        return OK;
    }

    static final class Options {
        String arch;
        Path out;
        Path workerJar;
        Path lock;
        boolean json;
        boolean ifStale;
        boolean cds;

        List<Arch> arches() {
            if (arch == null) {
                return List.of(Arch.host());
            }
            if (arch.equals("all")) {
                return List.of(Arch.values());
            }
            return List.of(Arch.parse(arch));
        }

        static Options parse(String[] a) {
            Options o = new Options();
            List<String> rest = new ArrayList<>(Arrays.asList(a));
            while (!rest.isEmpty()) {
                String k = rest.remove(0);
                String v = null;
                int eq = k.indexOf('=');
                if (k.startsWith("--") && eq > 0) {
                    v = k.substring(eq + 1);
                    k = k.substring(0, eq);
                }
                switch (k) {
                    case "--json" -> o.json = true;
                    case "--if-stale" -> o.ifStale = true;
                    case "--cds" -> o.cds = true;
                    case "--arch", "--out", "--worker-jar", "--lock" -> {
                        if (v == null) {
                            if (rest.isEmpty()) {
                                throw new IllegalArgumentException(k + " needs a value");
                            }
                            v = rest.remove(0);
                        }
                        switch (k) {
                            case "--arch" -> {
                                if (!v.equals("all")) {
                                    Arch.parse(v);
                                }
                                o.arch = v;
                            }
                            case "--out" -> o.out = Path.of(v);
                            case "--worker-jar" -> o.workerJar = Path.of(v);
                            default -> o.lock = Path.of(v);
                        }
                    }
                    default -> throw new IllegalArgumentException("unknown option '" + k + "'");
                }
            }
            return o;
        }
    }
}
