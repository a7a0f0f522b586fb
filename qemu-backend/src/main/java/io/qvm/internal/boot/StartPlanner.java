package io.qvm.internal.boot;

import io.qvm.SandboxConfig;
import io.qvm.internal.image.GuestImage;
import io.qvm.internal.image.ImageResolver;
import io.qvm.internal.image.ImageSignature;
import io.qvm.internal.probe.AcceleratorChoice;
import io.qvm.internal.probe.AcceleratorSelector;
import io.qvm.internal.probe.HostInfo;
import io.qvm.internal.probe.HostProbe;
import io.qvm.internal.process.QemuUser;
import io.qvm.protocol.image.Arch;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Plans sandbox starts ({@link StartPlan}) and keeps what planning learns for the backend's life:
 * the host as probed (once), the verified guest image (again only when its files changed), and
 * the accelerator per preference and guest architecture (the probe's verdict).
 */
public final class StartPlanner {

    private final HostProbe hostProbe;
    private final ImageResolver imageResolver;
    private final Optional<ImageSignature> imageKey;
    private final Arch guestArch;
    private final boolean useProbeCache;
    private final Supplier<Optional<QemuUser.Account>> runAs;
    private final Consumer<String> progress;
    private final Map<String, AcceleratorChoice> choices = new ConcurrentHashMap<>();
    private final Map<Arch, ImageSeen> images = new ConcurrentHashMap<>();
    private volatile HostInfo host;

    /**
     * @param imageKey the key images must be signed with, if one was configured
     * @param guestArch the guest architecture (null: the host's)
     * @param runAs who QEMU drops to (the accelerator probe boots as that user)
     */
    public StartPlanner(HostProbe hostProbe, ImageResolver imageResolver, Optional<ImageSignature> imageKey,
            Arch guestArch, boolean useProbeCache, Supplier<Optional<QemuUser.Account>> runAs,
            Consumer<String> progress) {
        this.hostProbe = Objects.requireNonNull(hostProbe, "hostProbe");
        this.imageResolver = Objects.requireNonNull(imageResolver, "imageResolver");
        this.imageKey = Objects.requireNonNull(imageKey, "imageKey");
        this.guestArch = guestArch;
        this.useProbeCache = useProbeCache;
        this.runAs = Objects.requireNonNull(runAs, "runAs");
        this.progress = Objects.requireNonNull(progress, "progress");
    }

    /**
     * The plan of a sandbox of {@code config}: the host, its QEMU, the verified image and the
     * accelerator, then the machine profiles and limits.
     *
     * @throws io.qvm.HostSetupException no QEMU, no image, no accelerator, a JVM under Rosetta
     */
    public StartPlan plan(SandboxConfig config) {
        HostInfo h = host();
        h.requireUntranslated(config.accelerator()); // before the image: under Rosetta the x86_64 one is the wrong pick
        Arch guest = guestArch(h);
        var qemu = h.requireQemu(guest);
        GuestImage image = image(guest).image();
        return StartPlan.of(config, h, qemu, image, choose(config, h, image));
    }

    /** The host as probed (once per planner). */
    public HostInfo host() {
        HostInfo h = host;
        if (h == null) {
            synchronized (this) {
                if (host == null) {
                    host = hostProbe.probe();
                }
                h = host;
            }
        }
        return h;
    }

    /** The accelerator a sandbox with {@code config} would run on (the probe's verdict is cached). */
    public AcceleratorChoice acceleratorChoice(SandboxConfig config) {
        HostInfo h = host();
        h.requireUntranslated(config.accelerator()); // before the image: under Rosetta the x86_64 one is the wrong pick
        return choose(config, h, image(guestArch(h)).image());
    }

    /** The guest architecture: the configured one, else the host's. */
    public Arch guestArch() {
        return guestArch(host());
    }

    private Arch guestArch(HostInfo h) {
        return guestArch != null ? guestArch : h.arch();
    }

    private AcceleratorChoice choose(SandboxConfig config, HostInfo h, GuestImage image) {
        return choices.computeIfAbsent(config.accelerator() + "/" + image.arch(), k -> {
            AcceleratorChoice c = AcceleratorSelector.builder().kernel(image.kernel()).useCache(useProbeCache)
                    .runAs(runAs.get().map(QemuUser.Account::name)).build()
                    .select(config.accelerator(), h, image.arch());
            c.warning().ifPresent(progress);
            return c;
        });
    }

    public ImageResolver imageResolver() {
        return imageResolver;
    }

    /** The guest image of the guest architecture, as {@link #image(Arch)}. */
    public ImageResolver.Resolved image() {
        return image(guestArch(host()));
    }

    /** A resolved image and what its files looked like then. */
    private record ImageSeen(ImageResolver.Resolved resolved, Map<Path, String> stamps) {
    }

    /**
     * The guest image, found and verified (every SHA-256, some 0.2 s for its 60 MB) the first time
     * and again whenever a file it rests on (for an image from the Maven repository: the zip too)
     * changed size, mtime or inode since — not on every start, which for a clone would cost more
     * than the restore itself. Where it came from is said once, and again when that changes.
     */
    private ImageResolver.Resolved image(Arch guest) {
        ImageSeen seen = images.get(guest);
        if (seen != null && seen.stamps().equals(stamps(seen.resolved()))) {
            return seen.resolved();
        }
        ImageResolver.Resolved r = imageResolver.resolve(guest);
        imageKey.ifPresent(k -> k.check(r.image()));
        images.put(guest, new ImageSeen(r, stamps(r)));
        if (seen == null || !seen.resolved().describe().equals(r.describe())) {
            progress.accept("guest image: " + r.describe());
        }
        return r;
    }

    private static Map<Path, String> stamps(ImageResolver.Resolved r) {
        Map<Path, String> out = new TreeMap<>();
        for (Path p : r.files()) {
            try {
                Object ino = Files.getFileStore(p).supportsFileAttributeView("unix") ? Files.getAttribute(p, "unix:ino")
                        : "";
                out.put(p, Files.size(p) + "|" + Files.getLastModifiedTime(p) + "|" + ino);
            } catch (IOException e) {
                out.put(p, "missing");
            }
        }
        return out;
    }
}
