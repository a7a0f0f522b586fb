package io.qvm.reliability;

import io.qvm.backend.process.StaleSandboxReaper;
import io.qvm.backend.process.StateDirectory;
import io.qvm.protocol.util.FileTrees;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The state roots of {@code qvm reliability} runs: a temporary directory per run, named after the
 * JVM that owns it ({@code qvm-reliability-<pid>-<random>}). A run that ends deletes its own; a
 * run whose JVM was killed cannot, so each run first removes those whose owner is gone: it reaps
 * their sandboxes ({@link StaleSandboxReaper}, which stops a QEMU only when it proves it is that
 * sandbox's) and deletes the directory once no process names it.
 */
public final class RunStates {

    static final String PREFIX = "qvm-reliability-";
    private static final Pattern NAME = Pattern.compile(Pattern.quote(PREFIX) + "(\\d+)-.+");

    private RunStates() {
    }

    /** A new, empty state root for this JVM's run in {@code parent}. */
    public static Path create(Path parent) throws IOException {
        return Files.createTempDirectory(parent, PREFIX + ProcessHandle.current().pid() + "-");
    }

    /**
     * Removes the state roots in {@code parent} whose owning JVM is no longer running (a root whose
     * pid runs is kept, even if the pid was reused: the cost is a directory, not a live run's
     * state). Returns what was removed; what could not be (a process still names it) is kept.
     */
    public static List<Path> removeStale(Path parent) throws IOException {
        List<Path> removed = new ArrayList<>();
        List<Path> roots;
        try (Stream<Path> s = Files.list(parent)) {
            roots = s.filter(p -> Files.isDirectory(p) && !Files.isSymbolicLink(p)).toList();
        }
        for (Path root : roots) {
            Matcher m = NAME.matcher(root.getFileName().toString());
            if (!m.matches() || ownerRuns(m.group(1))) {
                continue;
            }
            try (Stream<Path> categories = Files.list(root)) {
                for (Path category : categories.filter(c -> Files.isDirectory(c.resolve("sandboxes"))).toList()) {
                    new StaleSandboxReaper(StateDirectory.at(category)).reap();
                }
            }
            if (Leftovers.processesNaming(root).isEmpty()) {
                FileTrees.delete(root);
                removed.add(root);
            }
        }
        return removed;
    }

    private static boolean ownerRuns(String pid) {
        try {
            return ProcessHandle.of(Long.parseLong(pid)).map(ProcessHandle::isAlive).orElse(false);
        } catch (NumberFormatException e) {
            return true;
        }
    }
}
