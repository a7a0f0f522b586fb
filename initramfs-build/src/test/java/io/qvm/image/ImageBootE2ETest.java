package io.qvm.image;

import io.qvm.protocol.image.Arch;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Builds the x86_64 image twice from the bundled lock (fetching into $QVM_CACHE when needed),
 * checks the two are bit-identical, then boots it under QEMU TCG with a small echo worker and
 * checks the whole chain: phases on the console, the worker under runsc as nobody with the
 * limits from the kernel command line, stdio over the virtio-serial port, power-off.
 */
@Tag("e2e")
@Tag("qemu")
class ImageBootE2ETest {
    private static final String WORKER = String.join("\n",
            "import java.io.*;",
            "public class EchoWorker {",
            "  public static void main(String[] a) throws Exception {",
            "    System.err.println(\"echo-worker: user=\" + System.getProperty(\"user.name\")",
            "        + \" maxMemMiB=\" + (Runtime.getRuntime().maxMemory() >> 20)",
            "        + \" cpus=\" + Runtime.getRuntime().availableProcessors()",
            "        + \" tmp=\" + new File(\"/tmp\").getTotalSpace()",
            "        + \" jit=\" + java.util.Arrays.stream(new String(java.nio.file.Files.readAllBytes(",
            "            java.nio.file.Path.of(\"/proc/self/cmdline\"))).split(\"\\0\"))",
            "            .filter(x -> x.startsWith(\"-XX:TieredStopAtLevel=\")).findFirst().orElse(\"none\")",
            "        + \" font=\" + new java.awt.Font(java.awt.Font.SERIF, java.awt.Font.PLAIN, 12)",
            "            .getFamily());",
            "    OutputStream out = System.out;",
            "    out.write(\"READY\\n\".getBytes()); out.flush();",
            "    InputStream in = System.in; byte[] b = new byte[8192]; int n;",
            "    while ((n = in.read(b)) > 0) {",
            "      out.write(b, 0, n); out.flush();",
            "      if (new String(b, 0, n).contains(\"QUIT\")) break;",
            "    }",
            "  }",
            "}");

    @Test
    void buildsReproduciblyAndBootsToTheWorker(@TempDir Path tmp) throws Exception {
        assumeTrue(Arch.host() == Arch.X86_64, "boots the x86_64 image: needs an x86_64 host");
        assumeTrue(onPath("qemu-system-x86_64"), "qemu-system-x86_64 is not installed");
        Path jar = echoWorkerJar(tmp);

        ImageBuilder.Result a = ImageBuilder.builder().arch(Arch.X86_64).outDir(tmp.resolve("a"))
                .workerJar(jar).workerLock(NO_DEPENDENCIES).progress(l -> System.err.println("[image] " + l)).build().run();
        ImageBuilder.Result b = ImageBuilder.builder().arch(Arch.X86_64).outDir(tmp.resolve("b"))
                .workerJar(jar).workerLock(NO_DEPENDENCIES).build().run();
        assertArrayEquals(Files.readAllBytes(a.dir().resolve(ImageBuilder.INITRAMFS)),
                Files.readAllBytes(b.dir().resolve(ImageBuilder.INITRAMFS)),
                "two builds from the same lock must give the same initramfs");
        assertEquals(a.sha256(), b.sha256());
        assertTrue(ImageInfo.read(tmp.resolve("a"), Arch.X86_64).ok());
        assertTrue(ImageBuilder.builder().arch(Arch.X86_64).outDir(tmp.resolve("a")).workerJar(jar).workerLock(NO_DEPENDENCIES)
                .build().upToDate());
        // An image built by another recipe (an older init or OCI config) is rebuilt, not reused.
        Path c = tmp.resolve("c").resolve(Arch.X86_64.id());
        Files.createDirectories(c);
        for (String f : new String[] {ImageBuilder.VMLINUZ, ImageBuilder.INITRAMFS}) {
            Files.copy(a.dir().resolve(f), c.resolve(f));
        }
        io.qvm.protocol.image.ImageManifest built = io.qvm.protocol.image.ImageManifest.read(
                a.dir().resolve(ImageBuilder.MANIFEST));
        new io.qvm.protocol.image.ImageManifest(built.format(), built.arch(), built.debianArch(), built.console(),
                built.kernel(), built.runsc(), built.jre(), built.reproducible(), built.workerJar(), built.fixedLimits(),
                built.sourceDateEpoch(), built.inputs(), built.outputs(), built.transports(), "0".repeat(64), built.crngReseed())
                .write(c.resolve(ImageBuilder.MANIFEST));
        StringBuilder sums = new StringBuilder();
        for (String f : new String[] {ImageBuilder.INITRAMFS, ImageBuilder.MANIFEST, ImageBuilder.VMLINUZ}) {
            sums.append(io.qvm.protocol.util.Sha256.of(c.resolve(f))).append("  ").append(f).append('\n');
        }
        Files.writeString(c.resolve(ImageBuilder.SHA256SUMS), sums);
        assertTrue(ImageInfo.read(tmp.resolve("c"), Arch.X86_64).ok(), "the copy verifies");
        assertFalse(ImageBuilder.builder().arch(Arch.X86_64).outDir(tmp.resolve("c")).workerJar(jar).workerLock(NO_DEPENDENCIES)
                .build().upToDate(), "another recipe must rebuild");

        Path sock = tmp.resolve("w.sock");
        Path console = tmp.resolve("console.log");
        Path events = tmp.resolve("events.log");
        List<String> cmd = List.of("qemu-system-x86_64", "-accel", "tcg", "-M", "q35", "-cpu", "max",
                "-smp", "2", "-m", "1024", "-nodefaults", "-no-user-config", "-no-reboot",
                "-display", "none", "-serial", "file:" + console,
                "-kernel", a.dir().resolve(ImageBuilder.VMLINUZ).toString(),
                "-initrd", a.dir().resolve(ImageBuilder.INITRAMFS).toString(),
                "-append", "console=ttyS0 panic=-1 qvm.xmx_mib=200 qvm.cpus=2 qvm.tmp_mib=40 qvm.jit=c1",
                "-device", "virtio-serial-pci",
                "-chardev", "socket,id=qvmw,path=" + sock + ",server=on,wait=off",
                "-device", "virtserialport,chardev=qvmw,name=qvm.worker",
                "-chardev", "file,id=qvme,path=" + events,
                "-device", "virtserialport,chardev=qvme,name=qvm.events");
        Process qemu = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(tmp.resolve("qemu.out").toFile()).start();
        try {
            SocketChannel ch = connect(sock, qemu, console);
            String ready = readUntil(ch, "READY\n", 300, qemu, console);
            assertTrue(ready.endsWith("READY\n"), ready);
            ch.write(ByteBuffer.wrap("ping QUIT\n".getBytes(StandardCharsets.US_ASCII)));
            assertEquals("ping QUIT\n", readUntil(ch, "QUIT\n", 60, qemu, console));
            if (!qemu.waitFor(120, TimeUnit.SECONDS)) {
                fail("QEMU did not exit after the worker ended\n" + tail(console));
            }
            ch.close();
        } finally {
            qemu.destroyForcibly();
        }
        String log = Files.readString(console);
        // The events port holds exactly the init's events, in order; the console echoes them.
        List<String> lines = Files.readAllLines(events);
        List<String> phases = new java.util.ArrayList<>();
        for (String line : lines) {
            io.qvm.protocol.image.InitEvents.Event e = io.qvm.protocol.image.InitEvents.parse(line)
                    .orElseThrow(() -> new AssertionError("not an event: " + line + "\n" + tail(console)));
            phases.add(e.phase().orElseThrow().id());
            assertTrue(log.contains(line), "echoed on the console: " + line);
        }
        assertEquals(List.of("init", "modules", "rootfs", "port", "runsc", "worker-exit", "poweroff"), phases,
                lines + "\n" + tail(console));
        assertTrue(lines.get(5).startsWith("qvm: phase=worker-exit status=0 uptime="), lines.get(5));
        Matcher w = Pattern.compile("echo-worker: user=(\\S+) maxMemMiB=(\\d+) cpus=(\\d+) tmp=(\\d+) jit=(\\S+) font=(.+)")
                .matcher(log);
        assertTrue(w.find(), tail(console));
        assertEquals("nobody", w.group(1));
        assertTrue(Integer.parseInt(w.group(2)) <= 200, "heap above qvm.xmx_mib: " + w.group(2));
        assertEquals("2", w.group(3));
        assertEquals(40L << 20, Long.parseLong(w.group(4)), "/tmp size from qvm.tmp_mib");
        assertEquals("-XX:TieredStopAtLevel=1", w.group(5), "the JVM's compilers from qvm.jit");
        assertEquals("Serif", w.group(6).trim());
    }

    /** Connects to the worker's port once QEMU has made its socket; fails at once if QEMU exits. */
    private static SocketChannel connect(Path sock, Process qemu, Path console) {
        return waitFor("a connection to " + sock, Duration.ofSeconds(60), console, () -> {
            SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
            try {
                ch.connect(UnixDomainSocketAddress.of(sock));
                return ch;
            } catch (IOException e) {
                ch.close();
                failIfExited(qemu, "a connection to " + sock, console);
                return null;
            }
        });
    }

    /**
     * Reads until what was read ends with {@code end}; fails at once if the stream ends or QEMU
     * exits first (what it wrote before it exited is read first).
     */
    private static String readUntil(SocketChannel ch, String end, int seconds, Process qemu, Path console)
            throws IOException {
        ByteArrayOutputStream got = new ByteArrayOutputStream();
        ch.configureBlocking(false);
        ByteBuffer buf = ByteBuffer.allocate(8192);
        String what = "'" + end.strip() + "' from the worker";
        return waitFor(what, Duration.ofSeconds(seconds), console, () -> {
            int n = 0;
            while (!got.toString(StandardCharsets.UTF_8).endsWith(end) && (n = ch.read(buf.clear())) > 0) {
                got.write(buf.array(), 0, n);
            }
            String text = got.toString(StandardCharsets.UTF_8);
            if (text.endsWith(end)) {
                return text;
            }
            if (n < 0) {
                fail("the worker's stream ended before " + what + ": got '" + text + "'\n" + tail(console));
            }
            failIfExited(qemu, what, console);
            return null;
        });
    }

    private static void failIfExited(Process qemu, String what, Path console) {
        if (!qemu.isAlive()) {
            fail("QEMU exited (" + qemu.exitValue() + ") before " + what + "\n" + tail(console));
        }
    }

    /** Polls {@code probe} until it gives a value; at the deadline fails with the console tail. */
    private static <T> T waitFor(String what, Duration deadline, Path console, Callable<T> probe) {
        try {
            return await(what).atMost(deadline).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(50))
                    .until(probe, Objects::nonNull);
        } catch (ConditionTimeoutException e) {
            throw new AssertionError("no " + what + " within " + deadline.toSeconds() + " s\n" + tail(console), e);
        }
    }

    private static String tail(Path console) {
        try {
            List<String> lines = Files.readAllLines(console);
            return "console tail:\n" + String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
        } catch (IOException e) {
            return "(no console: " + e + ")";
        }
    }

    private static boolean onPath(String tool) {
        for (String d : System.getenv().getOrDefault("PATH", "").split(":")) {
            if (Files.isExecutable(Path.of(d, tool))) {
                return true;
            }
        }
        return false;
    }

    static Path echoWorkerJar(Path tmp) throws IOException {
        Path src = tmp.resolve("src/EchoWorker.java");
        Path cls = tmp.resolve("classes");
        Files.createDirectories(src.getParent());
        Files.createDirectories(cls);
        Files.writeString(src, WORKER);
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        int rc = javac.run(null, null, null, "--release", "17", "-d", cls.toString(), src.toString());
        assertEquals(0, rc, "javac failed");
        Manifest mf = new Manifest();
        mf.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        mf.getMainAttributes().put(Attributes.Name.MAIN_CLASS, "EchoWorker");
        Path jar = tmp.resolve("echo-worker.jar");
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar), mf)) {
            JarEntry e = new JarEntry("EchoWorker.class");
            e.setTime(0);
            out.putNextEntry(e);
            try (InputStream in = Files.newInputStream(cls.resolve("EchoWorker.class"))) {
                in.transferTo(out);
            }
            out.closeEntry();
            JarEntry bom = new JarEntry(WorkerLock.BOM_ENTRY); // every worker jar carries its BOM: this one lists nothing
            bom.setTime(0);
            out.putNextEntry(bom);
            out.write("{\"bomFormat\": \"CycloneDX\", \"specVersion\": \"1.6\", \"components\": []}"
                    .getBytes(java.nio.charset.StandardCharsets.UTF_8));
            out.closeEntry();
        }
        return jar;
    }

    /** The echo worker has no Maven dependencies, and is pinned as such. */
    static final WorkerLock NO_DEPENDENCIES = WorkerLock.of(java.util.Map.of());
}
