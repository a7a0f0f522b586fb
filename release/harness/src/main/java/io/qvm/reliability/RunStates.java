package io.qvm.reliability;

import io.qvm.admin.SandboxStates;
import io.qvm.HostSetupException;
import io.qvm.protocol.util.FileTrees;
import io.qvm.protocol.util.PrivateDirectory;
import io.qvm.protocol.util.UnsafeDirectoryException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The state roots of {@code qvm reliability} runs: a temporary directory per run, named after the
 * JVM that owns it ({@code qvm-reliability-<pid>-<random>}), private (0700) like every state root.
 * A run that ends deletes its own; a run whose JVM was killed cannot, so each run first removes
 * those whose owner is gone: it reaps their sandboxes ({@link SandboxStates#reap}, which stops a
 * QEMU only when it proves it is that sandbox's) and deletes the directory once no process names it.
 *
 * <p>The parent is shared ({@code /tmp}): anyone can make a directory with that name there. Only a
 * root that is a private directory of this user ({@link PrivateDirectory}: not a symlink, ours,
 * mode 0700) is looked into; any other is never read, reaped or deleted.
 */
public final class RunStates {

    static final String PREFIX = "qvm-reliability-";
    private static final Pattern NAME = Pattern.compile(Pattern.quote(PREFIX) + "(\\d+)-.+");

    private RunStates() {
    }

    /** A new, empty state root for this JVM's run in {@code parent} (0700, from its creation). */
    public static Path create(Path parent) throws IOException {
        Path root = Files.createTempDirectory(parent, PREFIX + ProcessHandle.current().pid() + "-");
        PrivateDirectory.verify(root); // createTempDirectory makes it 0700 on POSIX: the reaper requires it
        return root;
    }

    /**
     * Removes the state roots in {@code parent} whose owning JVM is no longer running (a root whose
     * pid runs is kept, even if the pid was reused: the cost is a directory, not a live run's
     * state). Returns what was removed; what could not be (a process still names it) is kept, and
     * so is a root that is not a private directory of this user (another user's, shared, a
     * symlink): nothing in it is read.
     */
    public static List<Path> removeStale(Path parent) throws IOException {
        List<Path> removed = new ArrayList<>();
        List<Path> roots;
        try (Stream<Path> s = Files.list(parent)) {
            roots = s.filter(p -> Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)).toList();
        }
        for (Path root : roots) {
            Matcher m = NAME.matcher(root.getFileName().toString());
            if (!m.matches() || ownerRuns(m.group(1)) || !ours(root)) {
                continue;
            }
            try (Stream<Path> categories = Files.list(root)) {
                for (Path category : categories.filter(c -> Files.isDirectory(c.resolve("sandboxes"))).toList()) {
                    try {
                        SandboxStates.at(category).reap(SandboxStates.defaultRuntimeRoot(), false);
                    } catch (HostSetupException notPrivate) {
                        // a category that is not private is not read; the root goes below only if no process names it
                    }
                }
            }
            if (Leftovers.processesNaming(root).isEmpty()) {
                FileTrees.delete(root);
                removed.add(root);
            }
        }
        return removed;
    }

    /** Whether {@code root} is a private directory of this user (and so holds only what we wrote). */
    private static boolean ours(Path root) throws IOException {
        try {
            return PrivateDirectory.verifyIfPresent(root);
        } catch (UnsafeDirectoryException e) {
            return false;
        }
    }

    private static boolean ownerRuns(String pid) {
        try {
            return ProcessHandle.of(Long.parseLong(pid)).map(ProcessHandle::isAlive).orElse(false);
        } catch (NumberFormatException e) {
            return true;
        }
    }
}
