package io.qvm.internal.process;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Starts real helper processes for tests and kills every one of them in {@link #close()}. */
final class TestProcesses implements AutoCloseable {

    private final List<Process> processes = new ArrayList<>();
    private final List<AutoCloseable> closeables = new ArrayList<>();

    Process start(String... argv) throws IOException {
        Process p = new ProcessBuilder(argv).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        processes.add(p);
        return p;
    }

    <T extends AutoCloseable> T track(T closeable) {
        closeables.add(closeable);
        return closeable;
    }

    /** The pid of a process that has exited (so nothing has it now, barring immediate reuse). */
    long deadPid() throws Exception {
        Process p = new ProcessBuilder("true").start();
        p.waitFor(60, TimeUnit.SECONDS);
        return p.pid();
    }

    static String qemuBinary() {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            Path p = Path.of(dir, "qemu-system-x86_64");
            if (Files.isExecutable(p)) {
                return p.toString();
            }
        }
        return null;
    }

    @Override
    public void close() throws Exception {
        for (AutoCloseable c : closeables) {
            c.close();
        }
        for (Process p : processes) {
            p.destroyForcibly();
            p.waitFor(60, TimeUnit.SECONDS);
        }
    }
}
