package io.qvm.internal.template;

import io.qvm.internal.image.GuestImage;
import io.qvm.internal.host.QemuInstallation;
import io.qvm.internal.qemu.QemuCommand;
import io.qvm.internal.qemu.QemuCommandInput;
import io.qvm.internal.qemu.VmRole;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Collections;
import java.util.HexFormat;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * What identifies a template: everything that shapes the guest it holds. Two configurations
 * with the same key may share a template; any difference in an input gives another key, so a
 * changed image, QEMU or guest-visible setting builds a new template instead of restoring a
 * stale one.
 *
 * <p>The inputs, each a string:
 * <ul>
 *   <li>{@code format}: this class's layout version;</li>
 *   <li>{@code mode}: {@link TemplateMode};</li>
 *   <li>{@code image.<file>}: the SHA-256 of every file of the guest image, as verified;</li>
 *   <li>{@code argv}: the template's QEMU command line with its per-run paths replaced by fixed
 *       placeholders — machine, CPU model, accelerator, vCPUs, memory, kernel command line (heap,
 *       worker CPUs, tmpfs size, runsc platform), devices: every guest-visible part of
 *       {@code SandboxConfig} reaches the guest through it;</li>
 *   <li>{@code qemu.binary}, {@code qemu.version}, {@code qemu.size}, {@code qemu.mtime}: which
 *       QEMU, and a fingerprint of the binary (an upgrade in place changes size or mtime);</li>
 *   <li>{@code warm-up} ({@link #withWarmUp}): what the template VM rendered before it was saved,
 *       {@code off} or a hash of the documents, so a template warmed otherwise (or not at all,
 *       as every one saved before 2026-12-06) is another template.</li>
 * </ul>
 * Not in the key: the request limits ({@code maxPixels}, deadlines, frame sizes…). They are not
 * in the guest's memory before a session: every clone sends its own HELLO with them. Nor the
 * user QEMU drops to ({@code runAs}): it shapes the host process, not the guest or its machine.
 */
public record TemplateKey(SortedMap<String, String> inputs) {

    /** Bumped when the template layout or the restore protocol changes. */
    public static final String FORMAT = "1";

    private static final Path P_RAM = Path.of("/qvm-template/ram");
    private static final Path P_DIR = Path.of("/qvm-template/run");

    public TemplateKey {
        TreeMap<String, String> copy = new TreeMap<>(); // natural order, whatever the given map's comparator
        copy.putAll(inputs);
        inputs = Collections.unmodifiableSortedMap(copy);
    }

    /**
     * The key of a template built from {@code input} (any paths; they are replaced) in
     * {@code mode}, with {@code image} and {@code qemu}.
     */
    public static TemplateKey of(QemuCommandInput input, TemplateMode mode, GuestImage image, QemuInstallation qemu) {
        Objects.requireNonNull(mode, "mode");
        SortedMap<String, String> in = new TreeMap<>();
        in.put("format", FORMAT);
        in.put("mode", mode.id());
        image.sha256().forEach((file, sha) -> in.put("image." + file, sha));
        in.put("argv", String.join("\n", QemuCommand.build(canonical(input, mode, image))));
        in.put("qemu.binary", qemu.binary().toString());
        in.put("qemu.version", qemu.version().toString());
        in.putAll(fingerprint(qemu.binary()));
        return new TemplateKey(in);
    }

    /**
     * This key with {@code warmUp} as its {@code warm-up} input: {@code off}, or what identifies
     * the documents the template VM renders before it is saved ({@code TemplateWarmUp}).
     */
    public TemplateKey withWarmUp(String warmUp) {
        SortedMap<String, String> in = new TreeMap<>(inputs);
        in.put("warm-up", Objects.requireNonNull(warmUp, "warmUp"));
        return new TemplateKey(in);
    }

    /** The input with fixed placeholder paths, so only what shapes the guest remains. */
    static QemuCommandInput canonical(QemuCommandInput input, TemplateMode mode, GuestImage image) {
        QemuCommandInput.Builder b = QemuCommandInput.builder().host(input.hostOs(), input.hostArch())
                .guestArch(input.guestArch()).accelerator(input.accelerator())
                .qemu(input.qemuBinary(), input.qemuVersion()).capabilities(input.capabilities()).config(input.config());
        placeholders(b, mode, image);
        if (!(input.transport() instanceof io.qvm.internal.qemu.GuestTransport.Serial)) {
            b.transport(input.transport());
        }
        return b.build();
    }

    /**
     * Sets every per-run path of {@code b} (image files, sockets, console, pid file, RAM file) to
     * the fixed placeholder a template's key is computed over, the worker on virtio-serial.
     */
    public static QemuCommandInput.Builder placeholders(QemuCommandInput.Builder b, TemplateMode mode,
            GuestImage image) {
        return b.image(Path.of("/qvm-image/" + image.kernel().getFileName()),
                        Path.of("/qvm-image/" + image.initrd().getFileName()))
                .guestReseed(image.manifest().crngReseed())
                .qmpSocket(P_DIR.resolve("qmp.sock")).consoleLog(P_DIR.resolve("console.log")).eventsLog(P_DIR.resolve("events.log"))
                .pidFile(P_DIR.resolve("qemu.pid")).controlSocket(P_DIR.resolve("control.sock"))
                .transport(new io.qvm.internal.qemu.GuestTransport.Serial(P_DIR.resolve("worker.sock")))
                .role(new VmRole.Template(mode == TemplateMode.SHARED_RAM ? Optional.of(P_RAM) : Optional.empty()));
    }

    private static Map<String, String> fingerprint(Path binary) {
        try {
            return Map.of("qemu.size", Long.toString(Files.size(binary)),
                    "qemu.mtime", Files.getLastModifiedTime(binary).toString());
        } catch (IOException e) {
            return Map.of("qemu.size", "?", "qemu.mtime", "?");
        }
    }

    /** SHA-256 over the inputs (each {@code name=value} line, sorted), hex. */
    public String hash() {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            inputs.forEach((k, v) -> {
                md.update(k.getBytes(StandardCharsets.UTF_8));
                md.update((byte) '=');
                md.update(v.getBytes(StandardCharsets.UTF_8));
                md.update((byte) 0);
            });
            return HexFormat.of().formatHex(md.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The template's short id: the first 20 hex digits of {@link #hash()} (its directory name). */
    public String id() {
        return hash().substring(0, 20);
    }
}
