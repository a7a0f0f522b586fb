package io.qvm.internal.qmp;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;

/**
 * One line from QEMU, read but not yet acted on. {@link #read(byte[])} is a pure function of the
 * line's bytes, so it can be tested and fuzzed without a socket; {@link QmpClient}'s reader thread
 * then acts on what the line is:
 *
 * <pre>
 * {"QMP": {"version": ..., "capabilities": [...]}}                    Greeting
 * {"timestamp": {...}, "event": "STOP", "data": {...}}               Event
 * {"return": {...}, "id": "qvm-2"}                                   Reply (a result)
 * {"id": "qvm-3", "error": {"class": "CommandNotFound", "desc": ...}} Reply (an error)
 * a blank line, an event without a name, any other JSON object       Ignored
 * not JSON, JSON that is not an object, a greeting that is not one   QmpProtocolException
 * </pre>
 *
 * Unknown fields are ignored everywhere.
 */
sealed interface QmpMessage {

    /** The greeting QEMU sends first. */
    record Greeting(QmpGreeting greeting) implements QmpMessage {
    }

    /** An asynchronous event. */
    record Event(QmpEvent event) implements QmpMessage {
    }

    /**
     * The reply to a command.
     *
     * @param id the command's id when the reply carries one as a string, otherwise {@code null}
     * @param result the {@code return} value, or {@code null} for an error
     * @param error the error, or {@code null} for a result
     */
    record Reply(String id, JsonNode result, CommandError error) implements QmpMessage {
    }

    /**
     * QEMU's error for a command.
     *
     * @param errorClass its {@code class}, or {@code (no class)} when it has none that is a string
     * @param description its {@code desc}, possibly empty
     */
    record CommandError(String errorClass, String description) {
    }

    /** A line the client has no use for, and why. */
    record Ignored(String why) implements QmpMessage {
    }

    /**
     * What {@code line} (without its line end) is.
     *
     * @throws QmpProtocolException if it is not QMP at all; the message carries a sanitised excerpt
     */
    static QmpMessage read(byte[] line) throws QmpProtocolException {
        if (isBlank(line)) {
            return new Ignored("a blank line");
        }
        JsonNode message;
        try {
            message = QmpClient.MAPPER.readTree(line);
        } catch (IOException e) {
            throw new QmpProtocolException("QMP line is not JSON", QmpClient.excerpt(line, 120), e);
        }
        if (message == null || !message.isObject()) {
            throw new QmpProtocolException("QMP line is not a JSON object", QmpClient.excerpt(line, 120), null);
        }
        if (message.has("QMP")) {
            QmpGreeting g = QmpGreeting.parse(message);
            if (g == null) {
                throw new QmpProtocolException("QMP greeting is not an object", QmpClient.excerpt(line, 120), null);
            }
            return new Greeting(g);
        }
        if (message.has("event")) {
            QmpEvent event = QmpEvent.parse(message);
            return event == null ? new Ignored("an event without a name") : new Event(event);
        }
        if (message.has("return") || message.has("error")) {
            JsonNode id = message.get("id");
            String textId = id != null && id.isTextual() ? id.asText() : null;
            JsonNode error = message.get("error");
            if (error != null) {
                String errorClass = error.path("class").isTextual() ? error.path("class").asText() : "(no class)";
                return new Reply(textId, null, new CommandError(errorClass, error.path("desc").asText("")));
            }
            return new Reply(textId, message.get("return"), null);
        }
        return new Ignored("neither a reply nor an event");
    }

    private static boolean isBlank(byte[] line) {
        for (byte b : line) {
            if (b != ' ' && b != '\t' && b != '\r') {
                return false;
            }
        }
        return true;
    }
}
