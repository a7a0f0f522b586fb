package io.qvm.internal.process;

import java.util.Optional;

/**
 * Looks up a live process by pid: the seam between the reaper (and {@code qvm down}) and the OS.
 * {@link #system()} asks this host; {@link #windowsShaped()} is what the JDK tells on Windows
 * (start instant and executable, but no arguments), so a Linux test reaches the Windows decisions
 * with real processes.
 */
@FunctionalInterface
public interface ProcessTable {

    /** The live process {@code pid}, or empty if none runs with that pid. */
    Optional<ProcessInfo> find(long pid);

    /** This host: {@code /proc/<pid>/cmdline} where there is a {@code /proc}, else {@link ProcessHandle.Info}. */
    static ProcessTable system() {
        return pid -> ProcessHandle.of(pid).filter(ProcessHandle::isAlive).map(h -> {
            ProcessHandle.Info info = h.info();
            return new ProcessInfo(h, info.startInstant(), info.command(), ProcessIdentity.commandLine(h));
        });
    }

    /**
     * This host's processes as the JDK shows them on Windows, where {@link ProcessHandle.Info#arguments()}
     * and usually {@link ProcessHandle.Info#commandLine()} are empty: start instant and executable
     * as this host reports them, no arguments.
     */
    static ProcessTable windowsShaped() {
        return pid -> ProcessHandle.of(pid).filter(ProcessHandle::isAlive).map(h -> {
            ProcessHandle.Info info = h.info();
            return new ProcessInfo(h, info.startInstant(), info.command(),
                    ProcessIdentity.fromInfo(info.command(), Optional.empty()));
        });
    }
}
