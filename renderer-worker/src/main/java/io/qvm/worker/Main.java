package io.qvm.worker;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayInputStream;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * Entry point of the worker inside the sandbox: frames on stdin, frames on stdout, log lines on
 * stderr (the guest console).
 *
 * <p>Before anything else runs, {@code System.out} is replaced by a stderr-backed stream and
 * {@code System.in} by an empty one, so no library can write stray bytes into the frame stream or
 * steal request bytes; the real stdout is kept, buffered, for frames only.
 *
 * <p>Exit status: 0 after GOODBYE or the end of stdin; 1 if stdout fails (the host is gone);
 * {@value RenderWatchdog#STUCK_STATUS} after a render that could not be stopped;
 * {@value FatalErrors#OUT_OF_MEMORY_STATUS} on {@link OutOfMemoryError} (halt, no answer).
 */
public final class Main {

    private static final int STDIN_BUFFER = 1 << 20;
    private static final int STDOUT_BUFFER = 1 << 16;

    private Main() {
    }

    public static void main(String[] args) {
        System.setProperty("java.awt.headless", "true");
        PrintStream err = new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8);
        OutputStream frames = new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), STDOUT_BUFFER);
        InputStream requests = new BufferedInputStream(new FileInputStream(FileDescriptor.in), STDIN_BUFFER);
        System.setOut(err);
        System.setErr(err);
        System.setIn(new ByteArrayInputStream(new byte[0]));
        // PDFBox logs through commons-logging: keep the console quiet (and free of document text).
        System.setProperty("org.apache.commons.logging.Log", "org.apache.commons.logging.impl.NoOpLog");
        // PDFBox caches its system-font index on disk: in the guest's tmpfs, not in a (read-only) home.
        if (System.getProperty("pdfbox.fontcache") == null) {
            System.setProperty("pdfbox.fontcache", System.getProperty("java.io.tmpdir"));
        }
        Thread.setDefaultUncaughtExceptionHandler((t, e) -> {
            FatalErrors.haltIfOutOfMemory(e);
            err.println("worker: thread " + t.getName() + " died: " + e.getClass().getName());
        });

        Log log = new Log(err);
        String version = WorkerVersion.current();
        // java.vm.info ends in "sharing" when the class archive (/opt/qvm/worker.jsa) is in use.
        log.info("starting version=" + version + " java=" + Runtime.version() + " vm=\"" + System.getProperty("java.vm.info")
                + "\"");
        int status;
        try {
            status = new WorkerLoop(requests, frames, new DocumentRenderHandler(log), log, version).run();
        } catch (OutOfMemoryError e) {
            FatalErrors.outOfMemory();
            return;
        } catch (IOException e) {
            log.info("stdout failed (" + e.getClass().getSimpleName() + "); exiting");
            status = 1;
        }
        System.exit(status);
    }
}
