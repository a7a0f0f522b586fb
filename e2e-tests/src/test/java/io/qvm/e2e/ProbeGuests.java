package io.qvm.e2e;

import io.qvm.Accelerator;
import io.qvm.SandboxConfig;
import io.qvm.internal.probe.HostInfo;
import io.qvm.internal.host.QemuInstallation;
import io.qvm.internal.qemu.GuestTransport;
import io.qvm.internal.qemu.QemuCommand;
import io.qvm.internal.qemu.QemuCommandInput;
import io.qvm.image.ImageBuilder;
import io.qvm.protocol.image.Arch;
import io.qvm.probe.ProbeWorker;
import java.io.IOException;
import java.io.OutputStream;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Guests that run one of the test workers of {@code io.qvm.probe} in place of the renderer: the
 * image build takes any worker jar, and the guest boots with the real QEMU command line
 * ({@link QemuCommand}), init and runsc. The workers speak plain lines on their port.
 */
final class ProbeGuests {

    private ProbeGuests() {
    }

    /** An x86_64 image in {@code dir} whose worker is {@code mainClass} of {@code io.qvm.probe}. */
    static ImageBuilder.Result image(Path dir, Class<?> mainClass) throws IOException {
        return image(dir, mainClass, Arch.X86_64);
    }

    /** An image of {@code arch} in {@code dir} whose worker is {@code mainClass} of {@code io.qvm.probe}. */
    static ImageBuilder.Result image(Path dir, Class<?> mainClass, Arch arch) throws IOException {
        Path jar = E2e.packageWorkerJar(dir.resolve("worker.jar"), mainClass);
        return ImageBuilder.builder().arch(arch).outDir(dir.resolve("image")).workerJar(jar)
                .workerLock(E2e.NO_DEPENDENCIES).progress(l -> E2e.log("[" + mainClass.getSimpleName() + " image] " + l)).build().run();
    }

    /**
     * An x86_64 image in {@code dir} whose worker is {@link io.qvm.probe.HostileWorker}: the real
     * worker's jar (its loop, renderer and libraries) with the probe classes added and the hostile
     * worker as Main-Class.
     */
    static ImageBuilder.Result hostileImage(Path dir) throws IOException {
        Path real = io.qvm.image.ImageInfo.repoRoot().resolve("renderer-worker/target/renderer-worker.jar");
        Path jar = dir.resolve("hostile-worker.jar");
        Files.createDirectories(dir);
        try (java.util.jar.JarFile in = new java.util.jar.JarFile(real.toFile())) {
            Manifest mf = new Manifest(in.getManifest());
            mf.getMainAttributes().put(Attributes.Name.MAIN_CLASS, io.qvm.probe.HostileWorker.class.getName());
            try (OutputStream o = Files.newOutputStream(jar); JarOutputStream j = E2e.jar(o, mf)) {
                for (JarEntry e : java.util.Collections.list(in.entries())) {
                    if (e.getName().equalsIgnoreCase("META-INF/MANIFEST.MF") || e.getName().startsWith("io/qvm/probe/")) {
                        continue;
                    }
                    j.putNextEntry(E2e.entry(e.getName()));
                    try (var is = in.getInputStream(e)) {
                        is.transferTo(j);
                    }
                    j.closeEntry();
                }
                E2e.addPackage(j, ProbeWorker.class);
            }
        }
        return ImageBuilder.builder().arch(Arch.X86_64).outDir(dir.resolve("image")).workerJar(jar)
                .progress(l -> E2e.log("[HostileWorker image] " + l)).build().run();
    }

    /** The sandbox argv for {@code image} with its files and sockets in {@code run}. */
    static List<String> argv(HostInfo host, QemuInstallation qemu, ImageBuilder.Result image, Path run) {
        return argv(host, qemu, image, run, Arch.X86_64);
    }

    /** {@link #argv(HostInfo, QemuInstallation, ImageBuilder.Result, Path)} for a guest of {@code guest}. */
    static List<String> argv(HostInfo host, QemuInstallation qemu, ImageBuilder.Result image, Path run, Arch guest) {
        return QemuCommand.build(QemuCommandInput.builder().host(host.os(), host.arch())
                .guestArch(guest).accelerator(Accelerator.TCG).qemu(qemu)
                .config(SandboxConfig.defaults())
                .image(image.dir().resolve(ImageBuilder.VMLINUZ), image.dir().resolve(ImageBuilder.INITRAMFS))
                .qmpSocket(run.resolve("qmp.sock")).consoleLog(run.resolve("console.log"))
                .eventsLog(run.resolve("events.log")).pidFile(run.resolve("qemu.pid"))
                .controlSocket(run.resolve("control.sock"))
                .transport(new GuestTransport.Serial(run.resolve("worker.sock"))).build());
    }

    /** One line from the worker, waited for on another thread so a silent guest cannot hang the test. */
    static String readLine(SocketChannel ch, Duration within, Path run) throws InterruptedException {
        CompletableFuture<String> line = CompletableFuture.supplyAsync(() -> {
            StringBuilder sb = new StringBuilder();
            ByteBuffer buf = ByteBuffer.allocate(1);
            try {
                while (true) {
                    buf.clear();
                    if (ch.read(buf) < 0) {
                        throw new UncheckedIOException(new IOException("the worker's port closed after '" + sb + "'"));
                    }
                    char c = (char) (buf.get(0) & 0xFF);
                    if (c == '\n') {
                        return sb.toString();
                    }
                    sb.append(c);
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
        try {
            return line.get(within.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException | ExecutionException e) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // closing ends the reader
            }
            throw new AssertionError("no line from the worker within " + within + ": " + e + "\n" + console(run), e);
        }
    }

    static String console(Path run) {
        try {
            String c = Files.readString(run.resolve("console.log"), StandardCharsets.ISO_8859_1);
            return "--- console (tail) ---\n" + c.substring(Math.max(0, c.length() - 6000));
        } catch (IOException e) {
            return "(no console: " + e + ")";
        }
    }
}
