package io.qvm.cli;

import io.qvm.Accelerator;
import io.qvm.InvalidConfigException;
import io.qvm.SandboxConfig;
import io.qvm.TransportPreference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/** The {@link SandboxConfig} fields a user may set on the command line; unset ones keep the defaults. */
public final class SandboxOptions {

    @Option(names = "--accelerator", paramLabel = "auto|kvm|hvf|whpx|tcg",
            description = "Accelerator (default auto: the host's hypervisor when it works, else tcg, loudly).")
    String accelerator;

    @Option(names = "--transport", paramLabel = "auto|serial|vsock", description = "Worker transport (default auto).")
    String transport;

    @Option(names = "--vcpus", paramLabel = "N", description = "Virtual CPUs (default 2).")
    Integer vcpus;

    @Option(names = "--memory", paramLabel = "MIB", description = "Guest memory in MiB (default 1024).")
    Integer memoryMib;

    @Option(names = "--boot-timeout", paramLabel = "SECONDS", description = "Deadline from QEMU start to the worker's READY (default 180).")
    Integer bootTimeoutSeconds;

    @Option(names = "--request-timeout", paramLabel = "SECONDS", description = "Deadline per request (default 60).")
    Integer requestTimeoutSeconds;

    @Option(names = "--idle-pause", paramLabel = "MILLIS", description = "Pause a sandbox's VM after this many ms "
            + "without a request, 100..3600000, or 0: never (default 1000). A paused VM takes no CPU; the next request "
            + "resumes it and sets its clock first.")
    Long idlePauseMillis;

    /**
     * The configuration.
     *
     * @throws InvalidConfigException naming the bad field (the CLI maps it to exit code 2)
     */
    public SandboxConfig toConfig() {
        SandboxConfig.Builder b = SandboxConfig.builder();
        if (accelerator != null) {
            b.accelerator(Accelerator.parse(accelerator));
        }
        if (transport != null) {
            b.transport(TransportPreference.parse(transport));
        }
        if (vcpus != null) {
            b.vcpus(vcpus);
        }
        if (memoryMib != null) {
            b.memoryMib(memoryMib);
        }
        if (bootTimeoutSeconds != null) {
            b.bootTimeout(Duration.ofSeconds(bootTimeoutSeconds));
        }
        if (requestTimeoutSeconds != null) {
            b.requestTimeout(Duration.ofSeconds(requestTimeoutSeconds));
        }
        if (idlePauseMillis != null) {
            b.idlePause(Duration.ofMillis(idlePauseMillis));
        }
        return b.build();
    }

    /** The options that were given, as arguments for a child process. */
    List<String> toArgs() {
        List<String> a = new ArrayList<>();
        add(a, "--accelerator", accelerator);
        add(a, "--transport", transport);
        add(a, "--vcpus", vcpus);
        add(a, "--memory", memoryMib);
        add(a, "--boot-timeout", bootTimeoutSeconds);
        add(a, "--request-timeout", requestTimeoutSeconds);
        add(a, "--idle-pause", idlePauseMillis);
        return a;
    }

    private static void add(List<String> a, String name, Object v) {
        if (v != null) {
            a.add(name);
            a.add(v.toString());
        }
    }
}
