package io.qvm.image;

import io.qvm.protocol.image.Arch;
import io.qvm.image.PackageLock.Role;
import java.util.List;
import java.util.Set;

/**
 * What the lock pins, before versions are known: the root packages of each role and the Debian
 * release each comes from. {@link Locker} resolves these against the registry.
 *
 * <ul>
 *   <li>kernel: the package the kernel metapackage (bookworm, incl. -security) depends on:
 *       for x86_64 Debian's generic {@code linux-image-amd64} (6.1 with {@code CONFIG_VMGENID=y},
 *       so template clones reseed their randomness — adr/0006), for aarch64
 *       {@code linux-image-cloud-arm64};</li>
 *   <li>busybox-static (bookworm): the init's shell and tools;</li>
 *   <li>runsc (trixie): gVisor 2024 with the systrap platform (bookworm's 2022 runsc has
 *       ptrace and kvm only);</li>
 *   <li>openjdk-17-jdk-headless (bookworm): the target architecture's jmods for jlink;</li>
 *   <li>fonts-dejavu-core (bookworm);</li>
 *   <li>perl-base (bookworm): only {@code /usr/bin/perl}, outside the sandbox, for the init's
 *       control helper (the two {@code ioctl}s that reseed the guest kernel's CRNG from the host's
 *       seed when a clone is restored, and the clock; busybox has no {@code ioctl}; adr/0012) and
 *       the worker's two stdio relays (adr/0002). Its libraries (glibc, libcrypt) come from the
 *       library roots;</li>
 *   <li>libraries (bookworm) the linked JRE needs, with their Depends closure: glibc, libgcc,
 *       libstdc++, zlib, and for java.desktop freetype, harfbuzz (glib, graphite2, ...), lcms2
 *       and libjpeg; and libcrypt for perl.</li>
 * </ul>
 */
public final class LockSpec {
    public static final String BOOKWORM = "bookworm";
    public static final String TRIXIE = "trixie";

    /** One root of the spec. */
    public record Root(String name, Role role, String release) {
    }

    /** Library roots; their Depends are followed. */
    public static final List<String> LIBRARIES = List.of(
            "libc6", "libgcc-s1", "libstdc++6", "zlib1g", "libfreetype6", "libharfbuzz0b",
            "liblcms2-2", "libjpeg62-turbo", "libcrypt1");

    /** Depends never followed: packaging machinery, not libraries the JRE loads. */
    public static final Set<String> NOT_FOLLOWED = Set.of(
            "debconf", "debconf-2.0", "dpkg", "perl-base", "install-info", "libc-bin");

    private LockSpec() {
    }

    /**
     * The kernel metapackage for an architecture. x86_64 takes Debian's generic kernel: the cloud
     * kernel is built without {@code CONFIG_VIRT_DRIVERS}, so it has no vmgenid driver and every
     * clone of a template would read the same bytes from {@code /dev/urandom} (adr/0006). The
     * generic 6.1 kernel has {@code CONFIG_VMGENID=y}. aarch64 keeps the cloud kernel: QEMU's
     * {@code virt} has no vmgenid device at all (neither 7.2 nor 10.0 builds one for aarch64), so
     * its clones are reseeded by the host through the init instead (adr/0012), which needs no
     * driver.
     */
    public static String kernelMetapackage(Arch arch) {
        return arch == Arch.X86_64 ? "linux-image-" + arch.debian() : "linux-image-cloud-" + arch.debian();
    }

    public static List<Root> roots() {
        return List.of(
                new Root("busybox-static", Role.BUSYBOX, BOOKWORM),
                new Root("runsc", Role.RUNSC, TRIXIE),
                new Root("openjdk-17-jdk-headless", Role.JDK, BOOKWORM),
                new Root("fonts-dejavu-core", Role.FONTS, BOOKWORM),
                new Root("perl-base", Role.PERL, BOOKWORM));
    }
}
