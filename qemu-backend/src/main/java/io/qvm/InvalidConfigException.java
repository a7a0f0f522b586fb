package io.qvm;

/**
 * A configuration value is out of range. The message names the field, the value given and what
 * is allowed, e.g. {@code vcpus = 0 is invalid: allowed 1..64}.
 *
 * <p>It is an {@link IllegalArgumentException}: a bad value is a programming or operator error
 * found at once, when the setter is called (or, for a rule between two fields, in
 * {@code build()}), never later when a VM boots.
 */
public class InvalidConfigException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final String field;
    private final String value;
    private final String allowed;

    /**
     * @param field   the configuration field (the builder method's name)
     * @param value   the rejected value ({@code String.valueOf} is used; {@code null} allowed)
     * @param allowed what would have been accepted, e.g. {@code "1..64"}
     */
    public InvalidConfigException(String field, Object value, String allowed) {
        super(field + " = " + value + " is invalid: allowed " + allowed);
        this.field = field;
        this.value = String.valueOf(value);
        this.allowed = allowed;
    }

    /**
     * For a rule between fields: {@code field} is the one reported, {@code message} explains
     * the rule and the fix.
     */
    public InvalidConfigException(String field, Object value, String allowed, String message) {
        super(message);
        this.field = field;
        this.value = String.valueOf(value);
        this.allowed = allowed;
    }

    /** The configuration field that was rejected. */
    public String field() {
        return field;
    }

    /** The rejected value as text. */
    public String value() {
        return value;
    }

    /** What would have been accepted. */
    public String allowed() {
        return allowed;
    }
}
