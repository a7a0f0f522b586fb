package io.qvm.cli;

import io.qvm.QemuVmBackend;
import io.qvm.SandboxConfig;
import io.qvm.SandboxPool;
import io.qvm.admin.BackendAdmin;
import io.qvm.admin.GuestImages;
import io.qvm.server.QvmServer;
import io.qvm.server.Tenants;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code qvm serve}: the HTTP render service ({@link QvmServer}) in the foreground, over a pool
 * that gives every document a fresh sandbox, until SIGTERM or Ctrl-C — then it drains (not
 * ready, accepting nothing new, the requests it took finished within their deadline), closes the
 * pool and exits 0.
 */
@Command(name = "serve", sortOptions = false,
        description = {"Serve POST /v1/render over HTTP: every document in a fresh sandbox.",
            "Bearer tokens from --tokens FILE (one line per tenant, tenant:<sha256 hex of its token>); a tenant's "
                    + "documents never share a VM with another's. Without --tokens it listens on loopback only, "
                    + "unless --insecure-no-auth. GET /healthz, /readyz, /metrics (Prometheus), /v1/info. "
                    + "SIGTERM or Ctrl-C drains and exits 0."},
        footer = {"", "Errors are application/problem+json with code, requestId and retryable; the README's table",
            "maps every typed error to its status. Example:",
            "  curl -sS --data-binary @samples/hello.svg -H 'Content-Type: image/svg+xml' \\",
            "       -H \"Authorization: Bearer $TOKEN\" 'http://127.0.0.1:8080/v1/render?width=480' -o hello.png"})
final class ServeCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    DirOptions dirs;

    @Mixin
    SandboxOptions sandboxOptions;

    @Option(names = "--listen", paramLabel = "ADDR:PORT", defaultValue = "127.0.0.1:8080",
            description = "Address and port (default ${DEFAULT-VALUE}; port 0: any free port, printed).")
    String listen;

    @Option(names = "--tokens", paramLabel = "FILE", description = "Tenants: tenant:<sha256 hex of the token> per line.")
    Path tokens;

    @Option(names = "--insecure-no-auth", description = "Listen beyond loopback without tokens: anyone who reaches "
            + "the port may render.")
    boolean insecure;

    @Option(names = "--max-sandboxes", paramLabel = "N", defaultValue = "2",
            description = "Sandboxes at once, rendering or started ahead (default ${DEFAULT-VALUE}).")
    int maxSandboxes;

    @Option(names = "--min-idle", paramLabel = "N", defaultValue = "1",
            description = "Fresh sandboxes kept started ahead (default ${DEFAULT-VALUE}).")
    int minIdle;

    @Option(names = "--max-queue", paramLabel = "N", description = "Requests waiting beyond those rendering "
            + "(default twice --max-sandboxes); beyond it 429.")
    Integer maxQueue;

    @Option(names = "--tenant-max-requests", paramLabel = "N", description = "Requests of one tenant rendering or "
            + "queued at once (default half of sandboxes and queue with two tenants or more); beyond it 429.")
    Integer tenantMax;

    @Option(names = "--max-buffered-mib", paramLabel = "MIB", description = "Request bodies held at once across "
            + "connections (default: render threads plus queue plus two, times the largest body); beyond it 429. "
            + "The JVM's heap must hold about three times this.")
    Integer maxBufferedMib;

    @Option(names = "--drain-timeout", paramLabel = "SECONDS", description = "On SIGTERM, how long the requests "
            + "taken may take to finish (default: the request timeout plus the boot timeout).")
    Integer drainSeconds;

    @Option(names = "--quiet", description = "No access log line per request on stdout.")
    boolean quiet;

    private final CliContext ctx;

    ServeCommand(CliContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        InetSocketAddress address = address(listen);
        Tenants tenants = tenants();
        if (!tenants.required() && !insecure && !address.getAddress().isLoopbackAddress()) {
            throw new ParameterException(spec.commandLine(), "refusing to listen on "
                    + address.getAddress().getHostAddress() + " without --tokens: anyone who reaches it could render."
                    + " Give --tokens FILE, listen on 127.0.0.1, or say --insecure-no-auth");
        }
        SandboxConfig config = sandboxOptions.toConfig();
        if (minIdle > maxSandboxes || maxSandboxes < 1) {
            throw new ParameterException(spec.commandLine(), "need 1 <= --max-sandboxes and --min-idle <= "
                    + "--max-sandboxes");
        }
        Progress progress = new Progress(err, false);
        MissingImage.buildIfMissing(ctx, ctx.imageRoot(dirs.imageDir), progress);
        CountDownLatch stop = new CountDownLatch(1);
        String[] why = {"stopped"};
        Signals.onTermination(name -> {
            why[0] = "SIG" + name;
            stop.countDown();
        });
        try (QemuVmBackend backend = ctx.backend(dirs, progress::line).build();
             SandboxPool pool = SandboxPool.builder(backend, config).maxSandboxes(maxSandboxes).minIdle(minIdle)
                     .build()) {
            QvmServer.Builder b = QvmServer.builder(pool).listen(address).tenants(tenants).insecure(insecure);
            if (maxQueue != null) {
                b.maxQueue(maxQueue);
            }
            if (tenantMax != null) {
                b.tenantMaxRequests(tenantMax);
            }
            if (maxBufferedMib != null) {
                b.maxBufferedBytes((long) maxBufferedMib << 20);
            }
            about(backend.admin(), config).forEach(b::about);
            if (!quiet) {
                b.accessLog(line -> {
                    synchronized (out) {
                        out.println(line);
                        out.flush();
                    }
                });
            }
            QvmServer server;
            try {
                server = b.build().start();
            } catch (IllegalStateException | java.io.UncheckedIOException e) {
                throw new CliException(ExitCode.USAGE, "CANNOT_LISTEN", e.getMessage(),
                        "give --listen 127.0.0.1:PORT, a --tokens file, or a free port", e);
            }
            try (server) {
                InetSocketAddress bound = server.address();
                err.println("qvm serve: listening on http://" + hostForUrl(bound) + ":" + bound.getPort()
                        + (tenants.required() ? " (" + tenants.names().size() + (tenants.names().size() == 1 ? " tenant)"
                        : " tenants)") : " (no tokens)")
                        + "; ready once a sandbox is warm (GET /readyz)");
                err.flush();
                stop.await();
                Duration grace = drainSeconds != null ? Duration.ofSeconds(drainSeconds)
                        : config.requestTimeout().plus(config.bootTimeout());
                err.println("qvm serve: " + why[0] + ": draining (up to " + grace.toSeconds() + " s for "
                        + server.pending() + " requests taken)");
                err.flush();
                boolean all = server.drain(grace);
                err.println("qvm serve: " + (all ? "every request taken was answered" : server.pending()
                        + " requests were still running; closing the pool ends them") + "; closing the pool");
                err.flush();
                pool.close();
            }
        }
        err.println("qvm serve: stopped");
        err.flush();
        return ExitCode.OK.code();
    }

    private Tenants tenants() {
        if (tokens == null) {
            return Tenants.none();
        }
        try {
            return Tenants.load(tokens);
        } catch (NoSuchFileException e) {
            throw new ParameterException(spec.commandLine(), "no such tokens file: " + tokens);
        } catch (IOException e) {
            throw new ParameterException(spec.commandLine(), "cannot read " + tokens + ": " + e.getMessage());
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
    }

    /** {@code HOST:PORT} or {@code [V6]:PORT}; a numeric or resolvable host. */
    InetSocketAddress address(String value) {
        int colon = value.lastIndexOf(':');
        if (colon <= 0 || colon == value.length() - 1) {
            throw new ParameterException(spec.commandLine(), "--listen takes ADDR:PORT, got '" + value + "'");
        }
        String host = value.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        int port;
        try {
            port = Integer.parseInt(value.substring(colon + 1));
        } catch (NumberFormatException e) {
            port = -1;
        }
        if (port < 0 || port > 65535) {
            throw new ParameterException(spec.commandLine(), "--listen: the port must be 0..65535, got '"
                    + value.substring(colon + 1) + "'");
        }
        try {
            return new InetSocketAddress(InetAddress.getByName(host), port);
        } catch (UnknownHostException e) {
            throw new ParameterException(spec.commandLine(), "--listen: cannot resolve '" + host + "'");
        }
    }

    private static String hostForUrl(InetSocketAddress a) {
        String h = a.getAddress().getHostAddress();
        return h.contains(":") ? "[" + h + "]" : h;
    }

    /** What GET /v1/info says of this host: the accelerator, the guest image and its hashes. */
    static Map<String, Object> about(BackendAdmin admin, SandboxConfig config) {
        Map<String, Object> about = new LinkedHashMap<>();
        about.put("hostArch", admin.hostArch().toString());
        about.put("guestArch", admin.guestArch().toString());
        admin.qemu().ifPresent(q -> about.put("qemu", q.version()));
        try {
            about.put("accelerator", admin.accelerator(config).qemuName());
        } catch (RuntimeException e) {
            about.put("accelerator", "unknown: " + e.getMessage().lines().findFirst().orElse(""));
        }
        try {
            GuestImages.Image image = admin.image();
            Map<String, Object> img = new LinkedHashMap<>();
            img.put("source", image.source());
            image.kernelVersion().ifPresent(k -> img.put("kernel", k));
            img.put("sha256", new java.util.TreeMap<>(image.sha256()));
            about.put("image", img);
            about.put("templateId", admin.templateId(config));
        } catch (RuntimeException e) {
            about.put("image", "unusable: " + e.getMessage().lines().findFirst().orElse(""));
        }
        return about;
    }
}
