package io.qvm.deploy;

import io.qvm.Accelerator;
import io.qvm.SandboxConfig;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A container's arguments to {@code qvm serve} (the image's entrypoint is {@code java -jar
 * /opt/qvm/qvm.jar serve}), read as ServeCommand reads them: the options that
 * size the pod ({@code --max-sandboxes}, {@code --memory}, {@code --vcpus}, the timeouts, the
 * accelerator) and the sandbox configuration they make, from {@link SandboxConfig}'s own defaults.
 */
record ServeArgs(Map<String, String> options, Set<String> flags) {

    /** ServeCommand's options without a value; every other option takes one. */
    private static final Set<String> FLAGS = Set.of("--insecure-no-auth", "--quiet");
    /** ServeCommand's defaults for what SandboxConfig does not hold. */
    static final int DEFAULT_MAX_SANDBOXES = 2;
    static final int DEFAULT_MIN_IDLE = 1;

    /** {@code args} as {@code --opt value … --opt=value … --flag}, what follows {@code qvm serve}; fails on anything else. */
    static ServeArgs parse(List<String> args) {
        if (args == null || args.isEmpty()) {
            throw new AssertionError("the container gives qvm serve no options");
        }
        Map<String, String> options = new LinkedHashMap<>();
        Set<String> flags = new LinkedHashSet<>();
        for (int i = 0; i < args.size(); i++) {
            String a = args.get(i);
            if (!a.startsWith("--")) {
                throw new AssertionError("`qvm serve` takes no positional argument, got '" + a + "' in " + args);
            }
            int eq = a.indexOf('=');
            if (eq > 0) {
                put(options, a.substring(0, eq), a.substring(eq + 1), args);
            } else if (FLAGS.contains(a)) {
                flags.add(a);
            } else if (i + 1 < args.size()) {
                put(options, a, args.get(++i), args);
            } else {
                throw new AssertionError(a + " has no value in " + args);
            }
        }
        return new ServeArgs(Map.copyOf(options), Set.copyOf(flags));
    }

    private static void put(Map<String, String> options, String name, String value, List<String> args) {
        if (options.put(name, value) != null) {
            throw new AssertionError(name + " is given twice in " + args);
        }
    }

    String get(String option) {
        return options.get(option);
    }

    int maxSandboxes() {
        return intOr("--max-sandboxes", DEFAULT_MAX_SANDBOXES);
    }

    int minIdle() {
        return intOr("--min-idle", DEFAULT_MIN_IDLE);
    }

    /** The port of {@code --listen ADDR:PORT}. */
    int listenPort() {
        String listen = options.get("--listen");
        if (listen == null) {
            throw new AssertionError("no --listen: qvm serve would listen on 127.0.0.1:8080, unreachable from the pod's IP");
        }
        return Integer.parseInt(listen.substring(listen.lastIndexOf(':') + 1));
    }

    /** The accelerator asked for (AUTO when none is). */
    Accelerator accelerator() {
        String a = options.get("--accelerator");
        return a == null ? Accelerator.AUTO : Accelerator.parse(a);
    }

    /** The sandbox configuration these arguments make, as SandboxOptions.toConfig makes it. */
    SandboxConfig config() {
        SandboxConfig.Builder b = SandboxConfig.builder().accelerator(accelerator());
        if (options.containsKey("--memory")) {
            b.memoryMib(intOr("--memory", 0));
        }
        if (options.containsKey("--vcpus")) {
            b.vcpus(intOr("--vcpus", 0));
        }
        if (options.containsKey("--boot-timeout")) {
            b.bootTimeout(Duration.ofSeconds(intOr("--boot-timeout", 0)));
        }
        if (options.containsKey("--request-timeout")) {
            b.requestTimeout(Duration.ofSeconds(intOr("--request-timeout", 0)));
        }
        return b.build();
    }

    /** How long SIGTERM's drain may take: --drain-timeout, else requestTimeout + bootTimeout. */
    Duration drain() {
        SandboxConfig c = config();
        return options.containsKey("--drain-timeout") ? Duration.ofSeconds(intOr("--drain-timeout", 0))
                : c.requestTimeout().plus(c.bootTimeout());
    }

    private int intOr(String option, int fallback) {
        String v = options.get(option);
        return v == null ? fallback : Integer.parseInt(v);
    }
}
