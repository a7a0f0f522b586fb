package io.qvm.cli;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A stand-in for a detached supervisor, run as a process of its own by {@link SupervisorStopTest}:
 * a shutdown hook that leaves {@code hook-ran} in the launch directory (as the real one stops the
 * sandbox), and, with {@code watch}, the real {@link Launch.StopWatch} exiting the way
 * {@code qvm up --supervise} does; with {@code ignore}, a supervisor that never looks.
 */
public final class StopPeer {

    private StopPeer() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        Path hookRan = Path.of(args[2]);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                Files.writeString(hookRan, "ran");
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }));
        if (args[1].equals("watch")) {
            Launch.StopWatch.start(dir, () -> System.exit(ExitCode.BOOT_FAILED.code()));
        }
        Files.writeString(dir.resolve("started"), "");
        Thread.sleep(Long.MAX_VALUE);
    }
}
