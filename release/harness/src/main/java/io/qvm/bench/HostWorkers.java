package io.qvm.bench;

import io.qvm.protocol.Messages;
import io.qvm.QemuVmBackend;
import io.qvm.SandboxConfig;
import io.qvm.image.BundleBuilder;
import io.qvm.image.Lz4LegacyInputStream;
import io.qvm.image.OciConfig;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.FrameLimits;
import io.qvm.protocol.FrameReader;
import io.qvm.protocol.FrameWriter;
import io.qvm.protocol.Hello;
import io.qvm.protocol.Limits;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import io.qvm.protocol.util.FileTrees;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PipedInputStream;
import java.io.PipedOutputStream;
import java.io.PrintStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The renderer without qvm's VM, for comparison: the worker's own code driven over the same frame
 * protocol, (a) in this JVM, (b) in a fresh JVM per request, (c) under {@code runsc} on the host.
 */
final class HostWorkers {

    private static final Limits LIMITS = QemuVmBackend.limits(SandboxConfig.defaults());
    private static final FrameLimits READ = new FrameLimits(FrameLimits.DEFAULT_HEADER_BYTES, LIMITS.maxResponseBytes());
    private static final FrameLimits WRITE = new FrameLimits(FrameLimits.DEFAULT_HEADER_BYTES, LIMITS.maxRequestBytes());

    private HostWorkers() {
    }

    /** One frame session over a pair of streams. */
    private static final class Session {
        final FrameWriter writer;
        final FrameReader reader;
        long next = 1;

        Session(OutputStream toWorker, InputStream fromWorker) throws IOException {
            writer = new FrameWriter(toWorker, WRITE);
            reader = new FrameReader(fromWorker, READ);
            Hello hello = Hello.fresh(LIMITS);
            writer.write(Messages.toFrame(hello));
            while (true) {
                Frame f = reader.read();
                if (f == null) {
                    throw new IOException("the worker ended before READY");
                }
                if (f.kind() == FrameKind.READY) {
                    return;
                }
            }
        }

        RenderResult render(RenderRequest r) throws IOException {
            long id = next++;
            writer.write(Messages.toFrame(r, id));
            Frame f = reader.read();
            if (f == null || f.requestId() != id) {
                throw new IOException("no answer to render " + id);
            }
            if (f.kind() != FrameKind.RENDER_RESULT) {
                throw new IOException("the worker answered " + f.kind() + ": " + f.header());
            }
            return Messages.renderResult(f);
        }

        void goodbye() throws IOException {
            writer.write(Frame.of(FrameKind.GOODBYE, next++, (byte[]) null));
            reader.read();
        }
    }

    /** (a) The worker's classes loaded from its jar into this JVM, driven through pipes. */
    static List<Long> inProcess(Path jar, RenderRequest r, int n) throws Exception {
        System.setProperty("java.awt.headless", "true");
        try (URLClassLoader cl = new URLClassLoader(new URL[] {jar.toUri().toURL()},
                ClassLoader.getPlatformClassLoader())) {
            Class<?> logClass = cl.loadClass("io.qvm.worker.Log");
            Class<?> handlerIface = cl.loadClass("io.qvm.worker.RenderHandler");
            Object log = logClass.getConstructor(PrintStream.class).newInstance(
                    new PrintStream(OutputStream.nullOutputStream()));
            Object handler = cl.loadClass("io.qvm.worker.DocumentRenderHandler").getConstructor(logClass)
                    .newInstance(log);
            PipedOutputStream hostOut = new PipedOutputStream();
            PipedInputStream workerIn = new PipedInputStream(hostOut, 1 << 20);
            PipedOutputStream workerOut = new PipedOutputStream();
            PipedInputStream hostIn = new PipedInputStream(workerOut, 1 << 20);
            Object loop = cl.loadClass("io.qvm.worker.WorkerLoop").getConstructor(InputStream.class,
                    OutputStream.class, handlerIface, logClass, String.class)
                    .newInstance(workerIn, workerOut, handler, log, "bench");
            Thread t = new Thread(() -> {
                try {
                    loop.getClass().getMethod("run").invoke(loop);
                } catch (ReflectiveOperationException e) {
                    // the host side reports the failure (no READY / no answer)
                }
            }, "bench-in-process-worker");
            t.setDaemon(true);
            Thread.currentThread().setContextClassLoader(cl);
            t.setContextClassLoader(cl);
            t.start();
            Session s = new Session(hostOut, hostIn);
            for (int i = 0; i < 3; i++) {
                s.render(r);
            }
            List<Long> samples = Bench.time(n, () -> s.render(r));
            s.goodbye();
            t.join(10_000);
            return samples;
        } finally {
            Thread.currentThread().setContextClassLoader(HostWorkers.class.getClassLoader());
        }
    }

    /** (b) A fresh JVM per request: start, HELLO, one RENDER, GOODBYE, exit — all timed. */
    static List<Long> subprocessPerRequest(Path jar, RenderRequest r, int n) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        return Bench.time(n, () -> {
            Process p = new ProcessBuilder(java, "-Xmx576m", "-XX:ActiveProcessorCount=2", "-Djava.awt.headless=true",
                    "-cp", jar.toString(), "io.qvm.worker.Main").redirectError(ProcessBuilder.Redirect.DISCARD).start();
            try {
                Session s = new Session(new BufferedOutputStream(p.getOutputStream()),
                        new BufferedInputStream(p.getInputStream()));
                s.render(r);
                s.goodbye();
                if (!p.waitFor(60, TimeUnit.SECONDS)) {
                    throw new IOException("the worker JVM did not exit");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException(e);
            } finally {
                p.destroyForcibly();
            }
        });
    }

    /**
     * (c) The image's own bundle and runsc, extracted from the initramfs, run directly on this
     * host (gVisor without the VM), reused for every request like the warm sandbox.
     */
    static List<Long> underRunsc(Path imageRoot, Path work, RenderRequest r, int n) throws Exception {
        Path root = Files.createTempDirectory(work, "runsc-");
        try {
            Path initrd = imageRoot.resolve(io.qvm.protocol.image.Arch.fromOsArch(System.getProperty("os.arch"))
                    .orElseThrow().qemuName()).resolve("initramfs.cpio.lz4");
            extractNewc(initrd, root);
            Path bundle = root.resolve("bundle");
            String config = Files.readString(bundle.resolve(BundleBuilder.TEMPLATE))
                    .replace(OciConfig.XMX_PLACEHOLDER, "576").replace(OciConfig.CPUS_PLACEHOLDER, "2")
                    .replace(OciConfig.TMP_PLACEHOLDER, "64")
                    // natively, the JVM's default compilers (the VM's TCG guests use C1 only: adr/0019)
                    .replace(OciConfig.JIT_LEVEL_PLACEHOLDER, Integer.toString(OciConfig.JIT_LEVEL_TIERED));
            Files.writeString(bundle.resolve("config.json"), config);
            Path state = Files.createDirectories(root.resolve("runsc-state"));
            Path err = root.resolve("runsc.err");
            Process p = new ProcessBuilder(root.resolve("usr/bin/runsc").toString(), "--root=" + state,
                    "--platform=systrap", "--network=none", "--ignore-cgroups", "--overlay2=none", "run",
                    "--bundle", bundle.toString(), "qvm-bench-" + ProcessHandle.current().pid())
                    .redirectError(err.toFile()).start();
            try {
                Session s;
                try {
                    s = new Session(new BufferedOutputStream(p.getOutputStream()),
                            new BufferedInputStream(p.getInputStream()));
                } catch (IOException e) {
                    p.waitFor(5, TimeUnit.SECONDS);
                    String tail = Files.exists(err) ? Files.readString(err) : "";
                    throw new IOException(e.getMessage() + (tail.isBlank() ? "" : ": "
                            + tail.substring(Math.max(0, tail.length() - 300)).strip()));
                }
                for (int i = 0; i < 3; i++) {
                    s.render(r);
                }
                List<Long> samples = Bench.time(n, () -> s.render(r));
                s.goodbye();
                p.waitFor(30, TimeUnit.SECONDS);
                return samples;
            } finally {
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
            }
        } finally {
            FileTrees.deleteQuietly(root);
        }
    }

    /** Extracts an LZ4-compressed (the kernel's legacy format) cpio "newc" archive (files, directories, symlinks) under {@code dir}. */
    static void extractNewc(Path archive, Path dir) throws IOException {
        try (InputStream file = new BufferedInputStream(Files.newInputStream(archive), 1 << 16);
                InputStream in = new Lz4LegacyInputStream(file)) { // it hands out whole 8 MiB chunks
            while (true) {
                byte[] h = in.readNBytes(110);
                if (h.length < 110) {
                    throw new IOException("truncated cpio archive " + archive);
                }
                String head = new String(h, StandardCharsets.US_ASCII);
                if (!head.startsWith("070701")) {
                    throw new IOException("not a newc cpio archive: " + archive);
                }
                int mode = Integer.parseUnsignedInt(head.substring(14, 22), 16);
                long size = Long.parseUnsignedLong(head.substring(54, 62), 16);
                int nameSize = Integer.parseUnsignedInt(head.substring(94, 102), 16);
                String name = new String(in.readNBytes(nameSize), StandardCharsets.UTF_8).replace("\0", "");
                in.skipNBytes((4 - (110 + nameSize) % 4) % 4);
                byte[] data = in.readNBytes((int) size);
                in.skipNBytes((4 - size % 4) % 4);
                if (name.equals("TRAILER!!!")) {
                    return;
                }
                Path target = dir.resolve(name).normalize();
                if (!target.startsWith(dir)) {
                    throw new IOException("cpio entry outside the target: " + name);
                }
                int type = mode & 0170000;
                if (type == 0040000) {
                    Files.createDirectories(target);
                } else if (type == 0100000) {
                    Files.createDirectories(target.getParent());
                    Files.write(target, data);
                    Files.setPosixFilePermissions(target, PosixFilePermissions.fromString(perms(mode)));
                } else if (type == 0120000) {
                    Files.createDirectories(target.getParent());
                    Files.deleteIfExists(target);
                    Files.createSymbolicLink(target, Path.of(new String(data, StandardCharsets.UTF_8)));
                }
            }
        }
    }

    private static String perms(int mode) {
        StringBuilder sb = new StringBuilder();
        String rwx = "rwxrwxrwx";
        for (int i = 0; i < 9; i++) {
            sb.append((mode & (1 << (8 - i))) != 0 ? rwx.charAt(i) : '-');
        }
        return sb.toString();
    }
}
