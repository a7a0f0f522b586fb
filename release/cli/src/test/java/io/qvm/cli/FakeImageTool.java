package io.qvm.cli;

import io.qvm.protocol.image.ImageManifest;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.qvm.cli.ImageTool;
import io.qvm.protocol.image.Arch;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * An {@link ImageTool} that "builds" a tiny image directory with the real layout (vmlinuz,
 * initramfs.cpio.lz4, manifest.json, SHA256SUMS) and verifies it the way the real one does.
 */
class FakeImageTool implements ImageTool {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final List<String> FILES = List.of("vmlinuz", "initramfs.cpio.lz4", "manifest.json");

    @Override
    public String name() {
        return "fake";
    }

    /** A tool that verifies like this one but builds nothing: the CLI's missing-image error stands. */
    static final ImageTool NO_BUILDS = new FakeImageTool() {
        @Override
        public Report build(Arch arch, Path outDir, Consumer<String> progress) {
            throw new io.qvm.HostSetupException(io.qvm.HostSetupException.Problem.IMAGE_INVALID, "no guest image at " + outDir.resolve(arch.qemuName())
                    + " and this test builds none");
        }
    };

    @Override
    public Report build(Arch arch, Path outDir, Consumer<String> progress) {
        Path dir = outDir.resolve(arch.qemuName());
        try {
            progress.accept("building the fake " + arch.qemuName() + " image into " + dir);
            Files.createDirectories(dir);
            Files.writeString(dir.resolve("vmlinuz"), "kernel for " + arch.qemuName());
            Files.writeString(dir.resolve("initramfs.cpio.lz4"), "initramfs");
            ObjectNode m = JSON.createObjectNode();
            m.put("arch", arch.qemuName());
            m.putObject("kernel").put("version", "6.1.0-fake");
            var outs = m.putArray("outputs");
            for (String f : List.of("vmlinuz", "initramfs.cpio.lz4")) {
                outs.addObject().put("name", f).put("size", Files.size(dir.resolve(f))).put("sha256", sha(dir.resolve(f)));
            }
            Files.writeString(dir.resolve("manifest.json"), m.toPrettyString());
            StringBuilder sums = new StringBuilder();
            for (String f : FILES) {
                sums.append(sha(dir.resolve(f))).append("  ").append(f).append('\n');
            }
            Files.writeString(dir.resolve("SHA256SUMS"), sums);
            progress.accept("done");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Report r = verify(arch, outDir);
        return new Report(r.arch(), r.dir(), r.ok(), r.problems(), r.kernelVersion(), r.files(), 42, r.manifest());
    }

    @Override
    public Report verify(Arch arch, Path outDir) {
        Path dir = outDir.resolve(arch.qemuName()).toAbsolutePath();
        List<String> problems = new ArrayList<>();
        Map<String, String> sums = new LinkedHashMap<>();
        try {
            for (String line : Files.readAllLines(dir.resolve("SHA256SUMS"), StandardCharsets.UTF_8)) {
                String[] f = line.split("\\s+", 2);
                sums.put(f[1], f[0]);
            }
        } catch (IOException e) {
            return new Report(arch.qemuName(), dir.toString(), false, List.of("no image at " + dir), null, List.of(), 0, null);
        }
        List<ImageFile> files = new ArrayList<>();
        ImageManifest manifest = null;
        for (String f : FILES) {
            Path p = dir.resolve(f);
            if (!Files.isRegularFile(p)) {
                problems.add(f + " is missing");
                continue;
            }
            String actual = sha(p);
            if (!actual.equals(sums.get(f))) {
                problems.add(f + ": sha256 " + actual + " but SHA256SUMS says " + sums.get(f));
            }
            try {
                files.add(new ImageFile(f, Files.size(p), actual));
                if (f.equals("manifest.json")) {
                    manifest = ImageManifest.read(p);
                }
            } catch (IOException e) {
                problems.add(f + ": " + e.getMessage());
            }
        }
        return new Report(arch.qemuName(), dir.toString(), problems.isEmpty(), problems,
                manifest == null ? null : manifest.kernelVersion().orElse(null), files, 0, manifest);
    }


    private static String sha(Path p) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p)));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
