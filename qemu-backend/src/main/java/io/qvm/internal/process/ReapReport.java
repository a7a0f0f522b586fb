package io.qvm.internal.process;

import java.util.List;

/**
 * What {@link StaleSandboxReaper#reap()} did, one entry per sandbox directory it looked at.
 *
 * @param entries in sandbox-id order
 */
public record ReapReport(List<Entry> entries) {

    public ReapReport {
        entries = List.copyOf(entries);
    }

    /** What happened to one sandbox. */
    public enum Outcome {
        /** Owner gone, its QEMU verified and killed, state and sockets removed. */
        KILLED_AND_REMOVED(true),
        /** Owner gone and no QEMU of this sandbox alive (exited, or its pid now belongs to another process); state removed. */
        REMOVED(true),
        /** The owner process is alive (same pid and start instant): not stale. */
        SKIPPED_OWNER_ALIVE(false),
        /** Recorded by another host (shared home directory?): its pids mean nothing here. */
        SKIPPED_OTHER_HOST(false),
        /** owner.json missing or invalid: cannot tell who owns it; left alone. */
        SKIPPED_UNREADABLE(false),
        /** The recorded QEMU pid is alive but we cannot read its identity (another user?): not killed. */
        SKIPPED_UNVERIFIABLE(false),
        /** Killing or deleting failed; see the reason. */
        FAILED(false);

        private final boolean removed;

        Outcome(boolean removed) {
            this.removed = removed;
        }

        /** Whether the sandbox's state directory was removed. */
        public boolean removed() {
            return removed;
        }
    }

    /**
     * @param sandboxId the sandbox directory's name
     * @param outcome what happened
     * @param reason why, in words (pids, commands, instants)
     */
    public record Entry(String sandboxId, Outcome outcome, String reason) {}

    /** The entry of {@code sandboxId}, if it was looked at. */
    public java.util.Optional<Entry> entry(String sandboxId) {
        return entries.stream().filter(e -> e.sandboxId().equals(sandboxId)).findFirst();
    }

    public long count(Outcome outcome) {
        return entries.stream().filter(e -> e.outcome() == outcome).count();
    }
}
