package io.qvm.server.internal;

import io.qvm.BootFailedException;
import io.qvm.HostSetupException;
import io.qvm.PoolClosedException;
import io.qvm.PoolTimeoutException;
import io.qvm.RenderFailedException;
import io.qvm.SandboxException;
import io.qvm.SandboxLostException;
import io.qvm.protocol.ErrorCode;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * One failed request as the client sees it: an HTTP status, a stable error code, whether
 * sending the same request again can help, and how long to wait first. Written as
 * {@code application/problem+json} (RFC 9457) with the request id.
 *
 * <p>The mapping from qvm's typed errors (adr/0007) is {@link #of(Throwable)}; its rows are
 * {@link #TABLE}, which the README's table must match (a test reads it). The rule: a fault of the
 * document is 4xx and not retryable; a sandbox lost after the pool's own retry is 502; trouble
 * booting or on the host, and a pool with no sandbox free in time, are 503 with
 * {@code Retry-After}; a full queue or a tenant at its cap is 429 with {@code Retry-After}.
 *
 * @param retryAfterSeconds 0: no {@code Retry-After} header
 */
public record Problem(int status, String code, String title, boolean retryable, int retryAfterSeconds, String detail) {

    public Problem {
        Objects.requireNonNull(code, "code");
        Objects.requireNonNull(title, "title");
        detail = detail == null ? "" : detail;
    }

    /** One row of the mapping: what raises it, and the answer. */
    public record Row(String cause, int status, String code, boolean retryable, int retryAfterSeconds) {
    }

    public static final int RETRY_BUSY_SECONDS = 1;
    public static final int RETRY_UNAVAILABLE_SECONDS = 5;

    /** Every typed error and HTTP-level refusal, and its answer (the README's table). */
    public static final List<Row> TABLE = table();

    private static List<Row> table() {
        List<Row> rows = new ArrayList<>();
        for (ErrorCode c : ErrorCode.values()) {
            Problem p = renderFailed(c, "");
            rows.add(new Row("RenderFailedException " + c, p.status(), p.code(), p.retryable(), p.retryAfterSeconds()));
        }
        rows.add(row("SandboxLostException CRASHED, worker out of memory (exit status 3)",
                lost(new SandboxLostException(SandboxLostException.Reason.CRASHED, "", null, "", "",
                        SandboxLostException.OUT_OF_MEMORY_STATUS))));
        for (SandboxLostException.Reason r : SandboxLostException.Reason.values()) {
            rows.add(row("SandboxLostException " + r, lost(new SandboxLostException(r, ""))));
        }
        rows.add(row("PoolTimeoutException", of(new PoolTimeoutException(java.time.Duration.ofSeconds(1), 1))));
        rows.add(row("PoolClosedException", of(new PoolClosedException())));
        rows.add(row("BootFailedException", of(new BootFailedException(""))));
        rows.add(row("HostSetupException", of(new HostSetupException(HostSetupException.Problem.QEMU_NOT_FOUND, ""))));
        rows.add(row("any other SandboxException", of(new SandboxException(""))));
        rows.add(row("queue full", queueFull(0)));
        rows.add(row("tenant at its cap", tenantBusy("", 0)));
        rows.add(row("request bodies held at once at their cap", bodiesBusy(0)));
        rows.add(row("draining (SIGTERM)", draining()));
        rows.add(row("no or unknown token", unauthorized()));
        rows.add(row("body above maxRequestBytes", tooLarge(0, 0)));
        rows.add(row("Content-Type not image/svg+xml, application/pdf or multipart/form-data", unsupportedType("")));
        rows.add(row("bad query or multipart", badRequest("")));
        rows.add(row("headers not complete, or body not complete, in time", timeout("")));
        rows.add(row("request line above its cap", uriTooLong()));
        rows.add(row("headers above their cap", headersTooLarge()));
        rows.add(row("unknown path", notFound()));
        rows.add(row("method not allowed", methodNotAllowed()));
        return List.copyOf(rows);
    }

    private static Row row(String cause, Problem p) {
        return new Row(cause, p.status(), p.code(), p.retryable(), p.retryAfterSeconds());
    }

    /** What a render that threw {@code e} answers. */
    public static Problem of(Throwable e) {
        String detail = firstLine(e.getMessage());
        if (e instanceof RenderFailedException r) {
            return renderFailed(r.code(), detail);
        }
        if (e instanceof SandboxLostException l) {
            return lost(l);
        }
        if (e instanceof PoolTimeoutException) {
            return new Problem(503, "POOL_TIMEOUT", "No sandbox came free in time", true, RETRY_UNAVAILABLE_SECONDS,
                    detail);
        }
        if (e instanceof PoolClosedException) {
            return new Problem(503, "SHUTTING_DOWN", "The service is shutting down", true, RETRY_UNAVAILABLE_SECONDS,
                    detail);
        }
        if (e instanceof BootFailedException) {
            return new Problem(503, "BOOT_FAILED", "No sandbox could be started", true, RETRY_UNAVAILABLE_SECONDS,
                    detail);
        }
        if (e instanceof HostSetupException h) {
            return new Problem(503, "HOST_SETUP", "This host cannot run sandboxes (" + h.problem() + ")", true,
                    RETRY_UNAVAILABLE_SECONDS, detail);
        }
        return new Problem(500, "INTERNAL", "The request failed inside the service", false, 0,
                e instanceof SandboxException ? detail : e.getClass().getSimpleName());
    }

    private static Problem renderFailed(ErrorCode c, String detail) {
        return switch (c) {
            case TOO_LARGE -> new Problem(413, "TOO_LARGE", "The document or its image is above a byte limit", false, 0,
                    detail);
            case LIMIT_EXCEEDED -> new Problem(422, "LIMIT_EXCEEDED",
                    "The document asks for more than a limit allows (pixels, side, pages)", false, 0, detail);
            case PARSE_ERROR -> new Problem(422, "PARSE_ERROR", "The document could not be parsed", false, 0, detail);
            case UNSUPPORTED -> new Problem(422, "UNSUPPORTED",
                    "The document uses something the renderer refuses (scripts, external resources)", false, 0, detail);
            case TIMEOUT -> new Problem(422, "TIMEOUT", "The document did not render within the request deadline",
                    false, 0, detail);
            case BAD_REQUEST -> new Problem(400, "BAD_REQUEST", "The renderer did not understand the request", false, 0,
                    detail);
            case INTERNAL -> new Problem(500, "RENDER_INTERNAL", "The renderer failed on the document", false, 0,
                    detail);
        };
    }

    private static Problem lost(SandboxLostException l) {
        String detail = firstLine(l.getMessage());
        return switch (l.reason()) {
            case CRASHED -> l.outOfMemory()
                    ? new Problem(422, "OUT_OF_MEMORY", "The document exhausted the renderer's memory", false, 0, detail)
                    : new Problem(502, "SANDBOX_LOST", "The sandbox was lost, after the pool's one retry", true,
                            0, detail);
            case DEADLINE_EXCEEDED -> new Problem(422, "DEADLINE_EXCEEDED",
                    "The document did not render within the request deadline; its sandbox was stopped", false, 0,
                    detail);
            case PROTOCOL_VIOLATION -> new Problem(502, "PROTOCOL_VIOLATION",
                    "The sandbox broke the protocol and was stopped; the document may have taken over the renderer",
                    false, 0, detail);
        };
    }

    public static Problem queueFull(int queue) {
        return new Problem(429, "QUEUE_FULL", "Every sandbox is busy and the queue is full", true, RETRY_BUSY_SECONDS,
                "the queue holds " + queue + " requests");
    }

    public static Problem tenantBusy(String tenant, int cap) {
        return new Problem(429, "TENANT_BUSY", "This tenant has as many requests in flight as it may", true,
                RETRY_BUSY_SECONDS, "tenant " + tenant + " may have " + cap + " requests rendering or queued at once");
    }

    public static Problem bodiesBusy(long maxBufferedBytes) {
        return new Problem(429, "BODIES_BUSY", "As many request bodies are being received as the service holds at once",
                true, RETRY_BUSY_SECONDS, "at most " + (maxBufferedBytes >> 20) + " MiB of request bodies at once");
    }

    public static Problem draining() {
        return new Problem(503, "SHUTTING_DOWN", "The service is shutting down", true, RETRY_UNAVAILABLE_SECONDS,
                "this instance is draining; another one can take the request");
    }

    public static Problem unauthorized() {
        return new Problem(401, "UNAUTHORIZED", "A valid bearer token is required", false, 0,
                "send Authorization: Bearer <token> with a token listed (by its SHA-256) in the server's tenants file");
    }

    public static Problem tooLarge(long bytes, long max) {
        return new Problem(413, "TOO_LARGE", "The request body is above the limit", false, 0,
                (bytes > 0 ? "the body has " + bytes + " bytes; " : "") + "the limit is " + max + " bytes (maxRequestBytes)");
    }

    public static Problem unsupportedType(String type) {
        return new Problem(415, "UNSUPPORTED_MEDIA_TYPE", "Send image/svg+xml, application/pdf or multipart/form-data",
                false, 0, type.isEmpty() ? "" : "Content-Type " + type + " is not rendered");
    }

    public static Problem badRequest(String detail) {
        return new Problem(400, "BAD_REQUEST", "The request is malformed", false, 0, detail);
    }

    public static Problem timeout(String detail) {
        return new Problem(408, "REQUEST_TIMEOUT", "The request did not arrive in time", false, 0, detail);
    }

    public static Problem uriTooLong() {
        return new Problem(414, "URI_TOO_LONG", "The request line is above its cap", false, 0, "");
    }

    public static Problem headersTooLarge() {
        return new Problem(431, "HEADERS_TOO_LARGE", "The request's headers are above their cap", false, 0, "");
    }

    public static Problem notFound() {
        return new Problem(404, "NOT_FOUND", "No such endpoint", false, 0,
                "the endpoints are POST /v1/render, GET /v1/info, /healthz, /readyz, /metrics");
    }

    public static Problem methodNotAllowed() {
        return new Problem(405, "METHOD_NOT_ALLOWED", "This endpoint does not take that method", false, 0, "");
    }

    /** The first line of a message, at most 300 characters: no console tails or stacks to a client. */
    static String firstLine(String message) {
        if (message == null) {
            return "";
        }
        String line = message.lines().findFirst().orElse("");
        return line.length() <= 300 ? line : line.substring(0, 297) + "...";
    }
}
