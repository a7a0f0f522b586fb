package io.qvm.internal.template;

/** How a template keeps the guest's RAM. */
public enum TemplateMode {
    /**
     * RAM in a file mapped {@code share=on} by the template and {@code share=off} (copy-on-write)
     * by each clone; the migration stream holds device state only ({@code x-ignore-shared}).
     * Clones share the template's pages and restore in milliseconds.
     */
    SHARED_RAM("shared-ram"),
    /**
     * For hosts that cannot map a RAM file: the whole RAM travels in the migration stream, which
     * each clone reads in full (seconds, and no page sharing between clones).
     */
    FULL("full");

    private final String id;

    TemplateMode(String id) {
        this.id = id;
    }

    /** The name used in metadata and output. */
    public String id() {
        return id;
    }

    public static TemplateMode fromId(String id) {
        for (TemplateMode m : values()) {
            if (m.id.equals(id)) {
                return m;
            }
        }
        throw new IllegalArgumentException("unknown template mode '" + id + "'");
    }
}
