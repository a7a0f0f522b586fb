package io.qvm.internal.qmp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import java.time.Instant;
import java.util.Locale;
import java.util.Optional;

/**
 * An asynchronous QMP event:
 *
 * <pre>
 * {"timestamp": {"seconds": 1796069093, "microseconds": 834651},
 *  "event": "SHUTDOWN", "data": {"guest": false, "reason": "host-qmp-quit"}}
 * </pre>
 *
 * Use the typed views for the events qvm acts on — {@link #shutdown()}, {@link #guestPanicked()},
 * {@link #vserportChange()}, {@link #isStop()}, {@link #isResume()} — and {@link #data()} for the
 * rest. Unknown fields are ignored everywhere.
 *
 * @param name the event name, e.g. {@code SHUTDOWN}
 * @param data the {@code data} object; an empty object if QEMU sent none
 * @param timestamp QEMU's clock when it emitted the event, or {@code null} if QEMU sent no
 *     usable timestamp (QEMU uses {@code -1} when its clock is not available; a peer may send
 *     anything)
 */
public record QmpEvent(String name, JsonNode data, Instant timestamp) {

    public static final String SHUTDOWN = "SHUTDOWN";
    public static final String STOP = "STOP";
    public static final String RESUME = "RESUME";
    public static final String GUEST_PANICKED = "GUEST_PANICKED";
    public static final String VSERPORT_CHANGE = "VSERPORT_CHANGE";

    public QmpEvent {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("event name must not be empty");
        }
        data = data == null || !data.isObject() ? JsonNodeFactory.instance.objectNode() : data;
    }

    /** Reads an event from the whole message; {@code null} if it has no textual {@code event}. */
    static QmpEvent parse(JsonNode message) {
        JsonNode name = message.get("event");
        if (name == null || !name.isTextual() || name.asText().isEmpty()) {
            return null;
        }
        return new QmpEvent(name.asText(), message.get("data"), timestamp(message.get("timestamp")));
    }

    /**
     * The instant {@code {"seconds": s, "microseconds": us}} names, or {@code null} when it names
     * none: a field that is not an integer of 64 bits, a negative one (QEMU's -1), microseconds
     * outside 0..999999, or seconds past {@link Instant#MAX}.
     */
    private static Instant timestamp(JsonNode ts) {
        if (ts == null || !isLong(ts.path("seconds")) || !(ts.path("microseconds").isMissingNode()
                || isLong(ts.path("microseconds")))) {
            return null;
        }
        long seconds = ts.path("seconds").longValue();
        long micros = ts.path("microseconds").asLong(0);
        if (seconds < 0 || seconds > Instant.MAX.getEpochSecond() || micros < 0 || micros >= 1_000_000) {
            return null;
        }
        return Instant.ofEpochSecond(seconds, micros * 1000);
    }

    private static boolean isLong(JsonNode n) {
        return n.isIntegralNumber() && n.canConvertToLong();
    }

    public boolean is(String eventName) {
        return name.equals(eventName);
    }

    public boolean isStop() {
        return is(STOP);
    }

    public boolean isResume() {
        return is(RESUME);
    }

    /** The SHUTDOWN view, if this is a SHUTDOWN event. */
    public Optional<Shutdown> shutdown() {
        if (!is(SHUTDOWN)) {
            return Optional.empty();
        }
        String reason = data.path("reason").asText("");
        return Optional.of(new Shutdown(data.path("guest").asBoolean(false), ShutdownCause.fromWire(reason), reason));
    }

    /** The GUEST_PANICKED view, if this is a GUEST_PANICKED event. */
    public Optional<GuestPanicked> guestPanicked() {
        if (!is(GUEST_PANICKED)) {
            return Optional.empty();
        }
        return Optional.of(new GuestPanicked(data.path("action").asText(""), data.path("info")));
    }

    /** The VSERPORT_CHANGE view, if this is a VSERPORT_CHANGE event. */
    public Optional<VserportChange> vserportChange() {
        if (!is(VSERPORT_CHANGE)) {
            return Optional.empty();
        }
        return Optional.of(new VserportChange(data.path("id").asText(""), data.path("open").asBoolean(false)));
    }

    /**
     * SHUTDOWN: QEMU is shutting down (with {@code -no-reboot}, also on a guest reset).
     *
     * @param guest true if the guest initiated it (e.g. ACPI poweroff, panic with panic=-1)
     * @param cause the reason as an enum ({@link ShutdownCause#UNKNOWN} for a reason this code
     *     does not know yet)
     * @param reason the reason exactly as QEMU sent it, e.g. {@code guest-shutdown}
     */
    public record Shutdown(boolean guest, ShutdownCause cause, String reason) {}

    /**
     * GUEST_PANICKED: the guest reported a panic (pvpanic or similar).
     *
     * @param action what QEMU does about it: {@code pause}, {@code poweroff}, {@code run}
     * @param info extra information if the device gave any (may be a missing node)
     */
    public record GuestPanicked(String action, JsonNode info) {}

    /**
     * VSERPORT_CHANGE: the guest opened or closed a virtio-serial port.
     *
     * @param id the QEMU device id of the port (not the port name)
     * @param open true if the guest opened it
     */
    public record VserportChange(String id, boolean open) {}

    /** The SHUTDOWN reasons QEMU documents ({@code ShutdownCause} in qapi/run-state.json). */
    public enum ShutdownCause {
        NONE("none"),
        HOST_ERROR("host-error"),
        HOST_QMP_QUIT("host-qmp-quit"),
        HOST_QMP_SYSTEM_RESET("host-qmp-system-reset"),
        HOST_SIGNAL("host-signal"),
        HOST_UI("host-ui"),
        GUEST_SHUTDOWN("guest-shutdown"),
        GUEST_RESET("guest-reset"),
        GUEST_PANIC("guest-panic"),
        SUBSYSTEM_RESET("subsystem-reset"),
        SNAPSHOT_LOAD("snapshot-load"),
        /** A reason this version of qvm does not know; see {@link Shutdown#reason()}. */
        UNKNOWN("");

        private final String wire;

        ShutdownCause(String wire) {
            this.wire = wire;
        }

        public String wire() {
            return wire;
        }

        public static ShutdownCause fromWire(String reason) {
            for (ShutdownCause c : values()) {
                if (c != UNKNOWN && c.wire.equals(reason)) {
                    return c;
                }
            }
            return UNKNOWN;
        }

        @Override
        public String toString() {
            return this == UNKNOWN ? "unknown" : wire.toLowerCase(Locale.ROOT);
        }
    }
}
