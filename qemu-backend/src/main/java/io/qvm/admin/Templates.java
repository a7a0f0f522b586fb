package io.qvm.admin;

import io.qvm.internal.template.TemplateStore;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The snapshot templates sandboxes are cloned from, in one directory: list them, remove them.
 * A template is built by the backend that needs it ({@link BackendAdmin#buildTemplate}); a removed
 * one is built again by the next sandbox that needs it.
 */
public final class Templates {

    private final TemplateStore store;

    private Templates(TemplateStore store) {
        this.store = store;
    }

    /** The templates under {@code root}. */
    public static Templates at(Path root) {
        return new Templates(TemplateStore.at(root));
    }

    /** {@code $QVM_CACHE/templates} of {@code env}, else {@code ~/.cache/qvm/templates}. */
    public static Templates defaultLocation(Map<String, String> env) {
        return new Templates(TemplateStore.defaultLocation(env));
    }

    /** The directory holding the templates. */
    public Path root() {
        return store.root();
    }

    /**
     * One template as built.
     *
     * @param mode {@code full} (the whole state in one file) or {@code shared-ram} (RAM in a file
     *     clones map)
     * @param created when it was saved (ISO-8601)
     * @param ramBytes the RAM file's size (shared-RAM templates only)
     */
    public record TemplateInfo(String id, Path dir, String mode, int memoryMib, String created, long bootMillis,
            long saveMillis, long stateBytes, OptionalLong ramBytes) {
        public TemplateInfo {
            Objects.requireNonNull(id, "id");
            Objects.requireNonNull(ramBytes, "ramBytes");
        }

    }

    /**
     * One directory of the store: its template, or why it cannot be read (a template that does
     * not verify is never restored; the next sandbox builds a fresh one).
     *
     * @param problem what is wrong with it, empty when nothing is
     */
    public record Entry(String id, Path dir, Optional<TemplateInfo> info, String problem) {
    }

    /** Every template directory, oldest first. */
    public List<Entry> list() throws IOException {
        return store.list().stream().map(l -> new Entry(l.id(), l.dir(), l.meta().map(m -> new TemplateInfo(l.id(),
                l.dir(), m.mode(), m.memoryMib(), m.created(), m.bootMillis(), m.saveMillis(), m.state().bytes(),
                m.ram() == null ? OptionalLong.empty() : OptionalLong.of(m.ram().bytes()))), l.problem())).toList();
    }

    /**
     * Removes the templates whose id starts with {@code idPrefix} (at least 4 hex digits).
     *
     * @return the ids removed (none: there is no such template)
     * @throws IllegalArgumentException the prefix is too short or not hex
     */
    public List<String> remove(String idPrefix) throws IOException {
        return store.remove(idPrefix);
    }

    /** Removes every template; returns their ids. */
    public List<String> removeAll() throws IOException {
        return store.removeAll();
    }
}
