package io.qvm.reliability;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * What sandboxes can leave behind on this host, looked for the same way by the reliability
 * report's orphan count and the release gate's {@code nothing-left} step: processes whose command
 * line names a state directory (a QEMU started for it), and directories in a runtime root (one
 * per live sandbox's sockets).
 */
public final class Leftovers {

    private Leftovers() {
    }

    /** Live processes other than this JVM whose command line names {@code dir}. */
    public static List<ProcessHandle> processesNaming(Path dir) {
        String marker = dir.toAbsolutePath().toString();
        long self = ProcessHandle.current().pid();
        return ProcessHandle.allProcesses().filter(p -> p.pid() != self && p.isAlive())
                .filter(p -> p.info().commandLine().orElse("").contains(marker)).toList();
    }

    /**
     * The names in a runtime root (one directory per live sandbox); an unreadable root is one
     * name saying so, so that it never passes for an empty one.
     */
    public static Set<String> socketDirectories(Path root) {
        Set<String> names = new TreeSet<>();
        if (Files.isDirectory(root)) {
            try (Stream<Path> s = Files.list(root)) {
                s.forEach(p -> names.add(p.getFileName().toString()));
            } catch (IOException e) {
                names.add("(unreadable: " + e.getMessage() + ")");
            }
        }
        return names;
    }
}
