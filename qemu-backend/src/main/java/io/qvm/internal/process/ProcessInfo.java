package io.qvm.internal.process;

import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * What the OS tells about one live process, as far as it tells it: the reaper and {@code qvm down}
 * decide from this whether a pid is still the QEMU they recorded. Each part may be unknown — on
 * Windows the JDK gives no arguments at all; for another user's process it may give nothing — and
 * unknown is never taken as a match.
 *
 * @param handle the live process (what is signalled, if anything is)
 * @param startInstant when it started, if the OS says
 * @param executable the path of its executable image as the OS reports it ({@code /proc/<pid>/exe}
 *     on Linux, the image path on Windows), if known
 * @param argv its full command line, argv[0] first, if the OS gives it (never on Windows)
 */
public record ProcessInfo(ProcessHandle handle, Optional<Instant> startInstant, Optional<String> executable,
        Optional<List<String>> argv) {

    public ProcessInfo {
        Objects.requireNonNull(handle, "handle");
        Objects.requireNonNull(startInstant, "startInstant");
        Objects.requireNonNull(executable, "executable");
        argv = Objects.requireNonNull(argv, "argv").map(List::copyOf);
    }

    public long pid() {
        return handle.pid();
    }
}
