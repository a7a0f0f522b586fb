package io.qvm.cli;

import io.qvm.protocol.util.PrivateDirectory;
import java.io.IOException;
import java.nio.file.Path;

/**
 * Where a detached {@code qvm up} and its supervisor meet before the sandbox has an id (the
 * backend chooses the id when the sandbox starts):
 *
 * <pre>
 * $QVM_STATE/                       mode 0700 (a private directory, as for the backend)
 *   launch/                          mode 0700
 *     &lt;handle&gt;/                     mode 0700, made by the parent
 *       supervisor.log   the supervisor's stdout+stderr, capped at 1 MiB with one older
 *                        supervisor.log.1 ({@link RotatingLog}); moved into the session's state
 *                        directory once it is up (the open file keeps being written)
 *       ready.json       a copy of the sandbox's ready.json: the parent's signal
 *       failed.json      {"exitCode", "code", "message"} when the supervisor failed before ready
 *       stop             made by the parent that gave up waiting (its --wait passed, or it was
 *                        interrupted): the supervisor, still booting, stops ({@link StopWatch})
 * </pre>
 *
 * The parent removes the directory once it has read ready.json or failed.json; a supervisor that
 * got ready removes it too when it exits (the parent may have died meanwhile).
 *
 * <p>The {@code stop} file is how a parent stops a supervisor that has no control socket yet, the
 * same way on every host: never by {@link Process#destroy()} first, which on Windows is
 * TerminateProcess and skips the supervisor's shutdown hook (its QEMU would keep running). A
 * supervisor whose launch directory is gone before it is ready stops too: nobody waits for it.
 */
final class Launch {

    static final String LOG = "supervisor.log";
    static final String FAILED = "failed.json";
    static final String STOP = "stop";
    /** How often a booting supervisor looks for {@link #STOP}. */
    static final java.time.Duration STOP_POLL = java.time.Duration.ofMillis(200);
    /** How long a supervisor asked to stop lets its interrupted boot release what it started before it exits. */
    static final java.time.Duration STOP_GRACE = java.time.Duration.ofSeconds(45);

    private Launch() {
    }

    static Path dir(Path stateRoot, String handle) {
        return stateRoot.resolve("launch").resolve(handle);
    }

    /**
     * Creates {@code launch/<handle>/}: the state root and {@code launch/} private directories
     * ({@link PrivateDirectory}: created 0700, an existing one refused unless it is ours and 0700),
     * the handle's directory new and 0700 from its creation.
     *
     * @throws io.qvm.protocol.util.UnsafeDirectoryException the state root or {@code launch/} is
     *     shared, another user's or a symlink (the message names it and the fix)
     */
    static Path create(Path stateRoot, String handle) throws IOException {
        PrivateDirectory.ensure(stateRoot);
        PrivateDirectory.ensure(stateRoot.resolve("launch"));
        return PrivateDirectory.createNew(dir(stateRoot, handle));
    }

    /** Asks the supervisor of {@code launchDir} to stop (idempotent). */
    static void requestStop(Path launchDir) throws IOException {
        try {
            java.nio.file.Files.createFile(launchDir.resolve(STOP));
        } catch (java.nio.file.FileAlreadyExistsException already) {
            // asked before
        }
    }

    /**
     * The supervisor's side: a daemon thread that runs {@code onStop} once, when {@link #STOP}
     * appears in the launch directory or the directory is gone, until {@link #end()}. The
     * supervisor's {@code onStop} exits the JVM, whose shutdown hook stops what is booting.
     */
    static final class StopWatch {
        private final Path launchDir;
        private final Thread thread;
        private volatile boolean closed;
        private volatile boolean fired;

        private StopWatch(Path launchDir, Runnable onStop) {
            this.launchDir = launchDir;
            this.thread = new Thread(() -> {
                try {
                    while (!closed) {
                        if (requested()) {
                            synchronized (this) {
                                if (closed) {
                                    return;
                                }
                                fired = true;
                            }
                            onStop.run();
                            return;
                        }
                        Thread.sleep(STOP_POLL.toMillis());
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "qvm-supervisor-stop-watch");
            thread.setDaemon(true);
        }

        static StopWatch start(Path launchDir, Runnable onStop) {
            StopWatch w = new StopWatch(launchDir, onStop);
            w.thread.start();
            return w;
        }

        /** Whether the parent asked for a stop (or is gone with the directory). */
        boolean requested() {
            // notExists: only a directory known to be gone counts, not one that cannot be read now
            return java.nio.file.Files.exists(launchDir.resolve(STOP)) || java.nio.file.Files.notExists(launchDir);
        }

        /**
         * Stops watching. Returns true when a stop was asked for all the same (before or right
         * now): the caller must not go on to be ready.
         */
        boolean end() {
            synchronized (this) {
                closed = true;
                thread.interrupt();
                return fired || requested();
            }
        }
    }
}
