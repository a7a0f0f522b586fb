package io.qvm.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * SIGTERM and SIGINT handled as a request to stop, not as the end of the JVM: the command drains
 * and returns its own exit code (0 for a clean drain), where a shutdown hook would leave the JVM
 * to exit 143 and race the drain. Through {@code sun.misc.Signal} (module jdk.unsupported, in
 * every JDK qvm runs on); where a signal cannot be handled (Windows has no SIGTERM), Ctrl-C still
 * reaches the JVM's default handling.
 */
final class Signals {

    private Signals() {
    }

    /**
     * Calls {@code stop} with the signal's name ({@code TERM}, {@code INT}) on each of them.
     *
     * @return the signals handled
     */
    static List<String> onTermination(Consumer<String> stop) {
        List<String> handled = new ArrayList<>();
        for (String name : List.of("TERM", "INT")) {
            try {
                sun.misc.Signal.handle(new sun.misc.Signal(name), s -> stop.accept(s.getName()));
                handled.add(name);
            } catch (IllegalArgumentException | UnsupportedOperationException notHere) {
                // not a signal of this OS, or the JVM keeps it (-Xrs)
            }
        }
        return handled;
    }
}
