package io.qvm.cli;

import io.qvm.protocol.image.ImageManifest;
import io.qvm.protocol.image.Arch;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * What the {@code qvm image …} commands and {@code qvm up} need of the image builder: build,
 * verify and describe an image directory ({@code <outDir>/<arch>/} holding {@code vmlinuz},
 * {@code initramfs.cpio.lz4}, {@code manifest.json}, {@code SHA256SUMS}; see docs/CONTRACTS.md).
 * {@link BuilderImageTool} is the real one (module {@code initramfs-build}); the CLI's tests give
 * the commands a small one that writes the same layout.
 *
 * <p>{@link #verify} never throws for a missing, incomplete or damaged image —
 * they return a {@link Report} with {@code ok = false} and one {@link Report#problems() problem}
 * per finding, each naming the file and what is wrong. {@link #build} throws a
 * {@link RuntimeException} whose message says which step failed and why; on success it returns
 * the same report {@link #verify} would.
 */
public interface ImageTool {

    /** A short name for messages, e.g. {@code "initramfs-build"}. */
    String name();

    /**
     * Builds (or reuses, when its inputs did not change) the image for {@code arch} into
     * {@code outDir/<arch>/}.
     *
     * @param progress receives one human-readable line per build step
     * @throws RuntimeException the build failed; the message says where
     */
    Report build(Arch arch, Path outDir, Consumer<String> progress);

    /** Checks every file of {@code outDir/<arch>/} against {@code SHA256SUMS} and the manifest. */
    Report verify(Arch arch, Path outDir);



    /**
     * One output file of the image.
     *
     * @param name file name inside the image directory
     * @param size bytes
     * @param sha256 lowercase hex
     */
    record ImageFile(String name, long size, String sha256) {
        public ImageFile {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(sha256, "sha256");
        }
    }

    /**
     * What a build, verify or info found: a JSON-able value (Jackson serialises the record
     * components in this order).
     *
     * @param arch the architecture, {@code x86_64} or {@code aarch64}
     * @param dir the image directory ({@code <outDir>/<arch>}), absolute
     * @param ok true when the directory is complete and every file matches {@code SHA256SUMS}
     *     and {@code manifest.json}
     * @param problems one line per finding (empty when ok)
     * @param kernelVersion the guest kernel's version from the manifest, or null if unknown
     * @param files the output files with size and SHA-256 (empty when the manifest is unreadable)
     * @param buildMillis wall time of the build, or 0 for verify/info
     * @param manifest the parsed {@code manifest.json}, or null when it is missing or unreadable
     */
    record Report(String arch, String dir, boolean ok, List<String> problems, String kernelVersion,
            List<ImageFile> files, long buildMillis, ImageManifest manifest) {
        public Report {
            Objects.requireNonNull(arch, "arch");
            Objects.requireNonNull(dir, "dir");
            problems = List.copyOf(problems);
            files = List.copyOf(files);
            if (ok && !problems.isEmpty()) {
                throw new IllegalArgumentException("a report with problems is not ok: " + problems);
            }
            if (buildMillis < 0) {
                throw new IllegalArgumentException("buildMillis must not be negative, was " + buildMillis);
            }
        }
    }
}
