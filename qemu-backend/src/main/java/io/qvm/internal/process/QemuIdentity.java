package io.qvm.internal.process;

import java.util.List;
import java.util.Optional;

/**
 * Whether a live pid is a sandbox's QEMU, from what its owner.json recorded and what the OS tells
 * ({@link ProcessInfo}): the one rule for the reaper and for {@code qvm down}. A pid is signalled
 * only when {@link #notThatQemu} finds nothing against it <em>and</em> {@link #unproven} finds
 * nothing missing: its start instant recorded and matching, plus its command line naming the
 * sandbox (where the OS gives one) or its executable recorded and matching (where it gives none:
 * Windows).
 */
public final class QemuIdentity {

    private QemuIdentity() {}

    /**
     * What proves {@code p} is <em>not</em> this sandbox's QEMU, or empty if nothing does: a known
     * start instant other than the recorded one, a known executable other than the recorded one,
     * or — where the OS gives the command line — an argv[0] other than the recorded binary or
     * arguments that do not mention this sandbox. Unknown proves nothing.
     */
    public static Optional<String> notThatQemu(SandboxState s, OwnerRecord owner, ProcessInfo p) {
        if (owner.qemuStartedAt() != null && p.startInstant().isPresent()
                && !ProcessIdentity.sameStart(owner.qemuStartedAt(), p.startInstant().get())) {
            return Optional.of("it started at " + p.startInstant().get() + ", the recorded QEMU at "
                    + owner.qemuStartedAt());
        }
        if (owner.qemuExecutable() != null && p.executable().isPresent()
                && !ProcessIdentity.sameExecutable(owner.qemuExecutable(), p.executable().get())) {
            return Optional.of("its executable is " + p.executable().get() + ", the recorded QEMU's is "
                    + owner.qemuExecutable());
        }
        if (p.argv().isEmpty() || p.argv().get().isEmpty()) {
            return Optional.empty();
        }
        List<String> argv = p.argv().get();
        String argv0 = argv.get(0);
        String recorded = owner.qemuBinary();
        if (!argv0.equals(recorded) && !ProcessIdentity.baseName(argv0).equals(ProcessIdentity.baseName(recorded))) {
            return Optional.of("its command is " + argv0 + ", the recorded QEMU is " + recorded);
        }
        String pidFile = s.pidFile().toString();
        String idSegment = "/" + s.id() + "/";
        String idSegmentWindows = "\\" + s.id() + "\\";
        boolean mentions = argv.subList(1, argv.size()).stream()
                .anyMatch(a -> a.contains(pidFile) || a.contains(idSegment) || a.contains(idSegmentWindows));
        if (!mentions) {
            return Optional.of("its arguments mention neither " + pidFile + " nor a path with " + idSegment);
        }
        return Optional.empty();
    }

    /**
     * Why {@code p} (which nothing shows to be another process) is not proven to be this
     * sandbox's QEMU, or empty if it is: its start instant must be recorded and match, and either
     * its command line was read (and named this sandbox: {@link #notThatQemu}) or — where the OS
     * gives none — its executable must be recorded and match.
     */
    public static Optional<String> unproven(OwnerRecord owner, ProcessInfo p) {
        if (owner.qemuStartedAt() == null) {
            return Optional.of("no QEMU start instant was recorded");
        }
        if (p.startInstant().isEmpty()) {
            return Optional.of("its start instant cannot be read");
        }
        if (p.argv().isPresent() && !p.argv().get().isEmpty()) {
            return Optional.empty(); // start instant and command line both match
        }
        if (owner.qemuExecutable() == null) {
            return Optional.of("its command line is unreadable (the OS gives none, as on Windows, or it is another "
                    + "user's) and no QEMU executable was recorded");
        }
        if (p.executable().isEmpty()) {
            return Optional.of("neither its command line nor its executable can be read");
        }
        return Optional.empty(); // start instant and executable both match
    }

}
