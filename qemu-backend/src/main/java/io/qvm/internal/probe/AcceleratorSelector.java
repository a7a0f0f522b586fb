package io.qvm.internal.probe;

import io.qvm.internal.host.HostOs;
import io.qvm.HostSetupException;
import io.qvm.internal.host.QvmEnvironment;
import io.qvm.protocol.image.Arch;
import io.qvm.Accelerator;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Chooses the accelerator for a guest by asking three layers, cheapest first, and stopping at the
 * first "no": {@link CompiledInCheck} (compiled into this QEMU), {@link HostSupportCheck} (offered
 * by this host to this user) and {@link FunctionalCheck} (a guest really boots — cached).
 *
 * <ul>
 * <li>{@link Accelerator#AUTO}: the host's native accelerator (KVM on Linux, HVF on macOS, WHPX on
 *     Windows) when the guest has the host's architecture and all layers pass; otherwise TCG. A
 *     fallback is loud: a WARNING log line and {@link AcceleratorChoice#warning()} say which
 *     layer failed, why, and the fix.</li>
 * <li>An explicit accelerator that fails a layer is a {@link io.qvm.HostSetupException} ({@code ACCELERATOR_UNAVAILABLE})
 *     naming the layer, the evidence and the fix — never a silent fallback.</li>
 * </ul>
 *
 * <pre>{@code
 * AcceleratorSelector selector = AcceleratorSelector.builder()
 *     .kernel(imageDir.resolve("vmlinuz"))   // the reliable functional probe
 *     .build();
 * AcceleratorChoice choice = selector.select(config.accelerator(), HostProbe.system().probe());
 * }</pre>
 */
public final class AcceleratorSelector {

    private static final System.Logger LOG = System.getLogger(AcceleratorSelector.class.getName());

    private final AcceleratorCheck compiledIn;
    private final AcceleratorCheck hostSupport;
    private final AcceleratorCheck functional;

    /** Three layers, in the order they are asked. */
    public AcceleratorSelector(AcceleratorCheck compiledIn, AcceleratorCheck hostSupport, AcceleratorCheck functional) {
        this.compiledIn = Objects.requireNonNull(compiledIn);
        this.hostSupport = Objects.requireNonNull(hostSupport);
        this.functional = Objects.requireNonNull(functional);
    }

    /** A builder with this machine's checks and the default cache. */
    public static Builder builder() {
        return new Builder();
    }

    /** Chooses for a guest of the host's own architecture. */
    public AcceleratorChoice select(Accelerator preference, HostInfo host) {
        return select(preference, host, host.arch());
    }

    /**
     * Chooses the accelerator.
     *
     * @throws HostSetupException for a JVM under Rosetta 2 unless {@code preference} is TCG
     *     ({@link HostInfo#requireUntranslated}), for an explicit preference that fails a layer, or
     *     when even TCG fails (no QEMU for the guest, or the probe kernel does not boot)
     */
    public AcceleratorChoice select(Accelerator preference, HostInfo host, Arch guest) {
        Objects.requireNonNull(preference, "preference");
        host.requireUntranslated(preference); // Rosetta 2: refuse before any layer runs
        List<LayerVerdict> all = new ArrayList<>();
        if (preference != Accelerator.AUTO) {
            Optional<LayerVerdict> failed = evaluate(preference, host, guest, all);
            if (failed.isPresent()) {
                LayerVerdict f = failed.get();
                throw new HostSetupException(HostSetupException.Problem.ACCELERATOR_UNAVAILABLE, "accelerator " + preference.qemuName() + " was requested but "
                        + "is not usable: layer '" + f.layer().label() + "' failed: " + f.reason()
                        + (f.fix().isEmpty() ? "" : ". Fix: " + f.fix())
                        + ". (Accelerator AUTO would fall back to TCG.)");
            }
            return new AcceleratorChoice(preference, guest, all, false, Optional.empty());
        }
        Optional<Accelerator> nativeAccel = guest == host.arch() ? nativeFor(host.os()) : Optional.empty();
        String fallbackReason = null;
        if (nativeAccel.isPresent()) {
            Optional<LayerVerdict> failed = evaluate(nativeAccel.get(), host, guest, all);
            if (failed.isEmpty()) {
                return new AcceleratorChoice(nativeAccel.get(), guest, all, false, Optional.empty());
            }
            LayerVerdict f = failed.get();
            fallbackReason = nativeAccel.get().qemuName() + " is not usable (layer '" + f.layer().label() + "': "
                    + f.reason() + ")" + (f.fix().isEmpty() ? "" : "; fix: " + f.fix());
        }
        Optional<LayerVerdict> tcgFailed = evaluate(Accelerator.TCG, host, guest, all);
        if (tcgFailed.isPresent()) {
            LayerVerdict f = tcgFailed.get();
            throw new HostSetupException(HostSetupException.Problem.ACCELERATOR_UNAVAILABLE, "no accelerator works for a " + guest.qemuName() + " guest: "
                    + (fallbackReason == null ? "" : fallbackReason + "; and ") + "tcg failed layer '"
                    + f.layer().label() + "': " + f.reason() + (f.fix().isEmpty() ? "" : ". Fix: " + f.fix()));
        }
        AcceleratorChoice choice = new AcceleratorChoice(Accelerator.TCG, guest, all, fallbackReason != null,
                Optional.ofNullable(fallbackReason));
        choice.warning().ifPresent(w -> LOG.log(System.Logger.Level.WARNING, w));
        return choice;
    }

    /** Runs the layers in order; returns the first failure, adding every verdict to {@code out}. */
    private Optional<LayerVerdict> evaluate(Accelerator a, HostInfo host, Arch guest, List<LayerVerdict> out) {
        for (AcceleratorCheck layer : List.of(compiledIn, hostSupport, functional)) {
            LayerVerdict v = layer.check(a, host, guest);
            out.add(v);
            LOG.log(v.passed() ? System.Logger.Level.DEBUG : System.Logger.Level.INFO, "qvm: " + v);
            if (!v.passed()) {
                return Optional.of(v);
            }
        }
        return Optional.empty();
    }

    /** KVM on Linux, HVF on macOS, WHPX on Windows; nothing elsewhere. */
    public static Optional<Accelerator> nativeFor(HostOs os) {
        switch (os) {
            case LINUX:
                return Optional.of(Accelerator.KVM);
            case MACOS:
                return Optional.of(Accelerator.HVF);
            case WINDOWS:
                return Optional.of(Accelerator.WHPX);
            default:
                return Optional.empty();
        }
    }

    /**
     * Assembles a selector from this machine's checks. Every default is here: hardware deadline
     * 20 s, TCG deadline 90 s, cache {@code $QVM_CACHE/probe-cache.json} kept 7 days, boot-sector
     * probe unless a kernel is given.
     */
    public static final class Builder {
        private Map<String, String> env = QvmEnvironment.system().variables();
        private Path kernel;
        private Path initrd;
        private Duration hardwareDeadline = Duration.ofSeconds(20);
        private Duration tcgDeadline = Duration.ofSeconds(90);
        private boolean useCache = true;
        private ProbeCache cache;
        private Optional<String> runAs = Optional.empty();

        private Builder() {
        }

        /** The unprivileged user the probe QEMU drops to (when this process is root); default: none. */
        public Builder runAs(Optional<String> user) {
            this.runAs = Objects.requireNonNull(user, "user");
            return this;
        }

        /** The environment ({@code QVM_CACHE}, {@code SystemRoot}); defaults to this process's. */
        public Builder env(Map<String, String> env) {
            this.env = Map.copyOf(Objects.requireNonNull(env, "env"));
            return this;
        }

        /** Boot this kernel in the functional probe (recommended: the image's {@code vmlinuz}). */
        public Builder kernel(Path kernel) {
            this.kernel = Objects.requireNonNull(kernel, "kernel");
            return this;
        }

        /** Optional initramfs for the kernel probe. */
        public Builder initrd(Path initrd) {
            this.initrd = initrd;
            return this;
        }

        /** Deadline for a KVM/HVF/WHPX probe, 1 s..10 min. */
        public Builder hardwareDeadline(Duration d) {
            this.hardwareDeadline = checkDeadline("hardwareDeadline", d);
            return this;
        }

        /** Deadline for a TCG probe, 1 s..10 min. */
        public Builder tcgDeadline(Duration d) {
            this.tcgDeadline = checkDeadline("tcgDeadline", d);
            return this;
        }

        /** {@code false} bypasses the probe cache: every selection boots the probe guest again. */
        public Builder useCache(boolean useCache) {
            this.useCache = useCache;
            return this;
        }

        /** Use this cache instead of {@code $QVM_CACHE/probe-cache.json}. */
        public Builder cache(ProbeCache cache) {
            this.cache = Objects.requireNonNull(cache, "cache");
            return this;
        }

        public AcceleratorSelector build() {
            ProbeGuest guest = kernel != null ? new ProbeGuest.KernelGuest(kernel, Optional.ofNullable(initrd))
                    : new ProbeGuest.BootSectorGuest();
            ProbeCache c = !useCache ? null : cache != null ? cache : ProbeCache.defaultLocation(env);
            return new AcceleratorSelector(new CompiledInCheck(), HostSupportCheck.system(env),
                    new FunctionalCheck(guest, hardwareDeadline, tcgDeadline, c, runAs));
        }

        private static Duration checkDeadline(String name, Duration d) {
            if (d == null || d.compareTo(Duration.ofSeconds(1)) < 0 || d.compareTo(Duration.ofMinutes(10)) > 0) {
                throw new IllegalArgumentException(name + " = " + d + " is invalid: allowed 1 s..10 min");
            }
            return d;
        }
    }
}
