package io.qvm.internal.qmp;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * The answer to {@code query-status}: {@code {"status": "running", "running": true, ...}}.
 *
 * @param status QEMU's run state, e.g. {@code running}, {@code paused}, {@code prelaunch},
 *     {@code shutdown}, {@code guest-panicked}, {@code inmigrate}; empty if absent
 * @param running whether the vCPUs are running
 */
public record QmpStatus(String status, boolean running) {

    public static final String RUNNING = "running";
    public static final String PAUSED = "paused";
    public static final String SHUTDOWN = "shutdown";
    public static final String GUEST_PANICKED = "guest-panicked";

    static QmpStatus parse(JsonNode result) {
        return new QmpStatus(result.path("status").asText(""), result.path("running").asBoolean(false));
    }
}
