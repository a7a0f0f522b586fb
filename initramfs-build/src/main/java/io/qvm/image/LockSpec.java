package io.qvm.image;

import io.qvm.image.PackageLock.Role;
import java.util.List;
import java.util.Set;

/**
 * What the lock pins, before versions are known: the root packages of each role and the Debian
 * release each comes from. {@link Locker} resolves these against the registry.
 *
 * <ul>
 *   <li>kernel: the package {@code linux-image-cloud-<arch>} (bookworm, incl. -security) depends
 *       on, i.e. the newest {@code linux-image-6.1.0-N-cloud-<arch>};</li>
 *   <li>busybox-static (bookworm): the init's shell and tools;</li>
 *   <li>runsc (trixie): gVisor 2024 with the systrap platform (bookworm's 2022 runsc has
 *       ptrace and kvm only);</li>
 *   <li>openjdk-17-jdk-headless (bookworm): the target architecture's jmods for jlink;</li>
 *   <li>fonts-dejavu-core (bookworm);</li>
 *   <li>libraries (bookworm) the linked JRE needs, with their Depends closure: glibc, libgcc,
 *       libstdc++, zlib, and for java.desktop freetype, harfbuzz (glib, graphite2, ...), lcms2
 *       and libjpeg.</li>
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
            "liblcms2-2", "libjpeg62-turbo");

    /** Depends never followed: packaging machinery, not libraries the JRE loads. */
    public static final Set<String> NOT_FOLLOWED = Set.of(
            "debconf", "debconf-2.0", "dpkg", "perl-base", "install-info", "libc-bin");

    private LockSpec() {
    }

    /** The kernel metapackage for an architecture. */
    public static String kernelMetapackage(Arch arch) {
        return "linux-image-cloud-" + arch.debian();
    }

    public static List<Root> roots() {
        return List.of(
                new Root("busybox-static", Role.BUSYBOX, BOOKWORM),
                new Root("runsc", Role.RUNSC, TRIXIE),
                new Root("openjdk-17-jdk-headless", Role.JDK, BOOKWORM),
                new Root("fonts-dejavu-core", Role.FONTS, BOOKWORM));
    }
}
