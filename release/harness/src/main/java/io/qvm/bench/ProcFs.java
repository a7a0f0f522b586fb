package io.qvm.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Every {@code /proc} read of {@code qvm bench} and {@code qvm reliability}, in one place, so that
 * a host without {@code /proc} (macOS, Windows) loses one measurement with a clear reason instead
 * of the whole run: each read either answers or throws {@link LinuxOnly}, whose message says what
 * needed {@code /proc} and what to run on that host instead. The reports put that message where the
 * number would be (e.g. {@code "smaps": {"unavailable": "Linux only: …"}}). Tests point it at a
 * directory without {@code /proc} ({@link #at}). The macOS and Windows paths are untested on a real
 * host.
 */
public final class ProcFs {

    /** A measurement this host cannot make: it needs Linux's {@code /proc}. */
    public static final class LinuxOnly extends IOException {
        private static final long serialVersionUID = 1L;

        LinuxOnly(String what, String instead) {
            super("Linux only: " + what + " needs /proc; on macOS/Windows " + instead);
        }
    }

    private final Path root;

    private ProcFs(Path root) {
        this.root = root;
    }

    /** This host's {@code /proc}. */
    public static ProcFs system() {
        return new ProcFs(Path.of("/proc"));
    }

    /** A {@code /proc} at {@code root} (a test's directory; one that does not exist: a host without). */
    public static ProcFs at(Path root) {
        return new ProcFs(root);
    }

    /** Whether this host has a {@code /proc} at all. */
    public boolean available() {
        return Files.isDirectory(root.resolve("self"));
    }

    /** The kB lines of {@code /proc/<pid>/smaps_rollup}: Rss, Pss, Private_Dirty… */
    Map<String, Long> smapsRollup(long pid) throws IOException {
        Path f = root.resolve(Long.toString(pid)).resolve("smaps_rollup");
        require(f, "QEMU's memory split (RSS, PSS, private dirty) from /proc/PID/smaps_rollup",
                "compare `footprint " + pid + "` or `vmmap --summary " + pid + "` (macOS) or Task Manager's "
                        + "private working set (Windows) by hand; the RSS below comes from ps where there is one");
        Map<String, Long> m = new LinkedHashMap<>();
        for (String line : Files.readAllLines(f)) {
            String[] p = line.trim().split("\\s+");
            if (p.length >= 3 && p[0].endsWith(":") && p[2].equals("kB")) {
                m.put(p[0].substring(0, p[0].length() - 1), Long.parseLong(p[1]));
            }
        }
        return m;
    }

    /** One key of {@code /proc/meminfo} ({@code MemAvailable:}), in KiB. */
    long meminfoKiB(String key) throws IOException {
        Path f = root.resolve("meminfo");
        require(f, "the host's " + key.replace(":", "") + " from /proc/meminfo",
                "read it from Activity Monitor / `vm_stat` (macOS) or Task Manager (Windows)");
        for (String l : Files.readAllLines(f)) {
            if (l.startsWith(key)) {
                return Long.parseLong(l.replaceAll("[^0-9]", ""));
            }
        }
        throw new IOException(f + " has no " + key);
    }

    /** A file of {@code /proc/<pid>/} ({@code status}, {@code environ}, {@code cgroup}), as text. */
    public String pidFile(long pid, String name, String instead) throws IOException {
        Path f = root.resolve(Long.toString(pid)).resolve(name);
        require(f, "/proc/PID/" + name, instead);
        return new String(Files.readAllBytes(f), StandardCharsets.UTF_8);
    }

    private void require(Path file, String what, String instead) throws LinuxOnly {
        if (!available()) {
            throw new LinuxOnly(what, instead);
        }
        if (!Files.exists(file)) {
            // a Linux without the file (e.g. smaps_rollup before 4.14): not "Linux only", just absent
            throw new LinuxOnly(what + " (" + file + " is absent on this kernel)", instead);
        }
    }

    /** The resident set of {@code pid} in KiB from {@code /bin/ps -o rss=} (macOS, BSDs), if ps answers. */
    static Optional<Long> rssFromPs(long pid) {
        Path ps = Path.of("/bin/ps");
        if (!Files.isExecutable(ps)) {
            return Optional.empty();
        }
        try {
            Process p = new ProcessBuilder(ps.toString(), "-o", "rss=", "-p", Long.toString(pid))
                    .redirectErrorStream(true).start();
            p.getOutputStream().close();
            String out = new String(p.getInputStream().readNBytes(256), StandardCharsets.US_ASCII).strip();
            return p.waitFor() == 0 && out.matches("\\d+") ? Optional.of(Long.parseLong(out)) : Optional.empty();
        } catch (IOException e) {
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }
}
