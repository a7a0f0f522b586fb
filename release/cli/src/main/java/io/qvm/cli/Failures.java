package io.qvm.cli;

import io.qvm.admin.HostReport;
import io.qvm.BootFailedException;
import io.qvm.InvalidConfigException;
import io.qvm.RenderFailedException;
import io.qvm.SandboxException;
import io.qvm.SandboxLostException;
import io.qvm.HostSetupException;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.util.UnsafeDirectoryException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * The one place that maps exceptions to {@link ExitCode}s, error codes and hints.
 *
 * <table>
 * <caption>exception → exit code</caption>
 * <tr><td>{@link QemuNotFoundException}</td><td>3 HOST, QEMU_NOT_FOUND, the install command for this OS</td></tr>
 * <tr><td>{@link AcceleratorUnavailableException}, {@link UnsupportedHostException},
 *     {@link TransportUnavailableException}</td><td>3 HOST</td></tr>
 * <tr><td>{@link ImageException}</td><td>8 IMAGE, hint {@code ./qvm image build}</td></tr>
 * <tr><td>{@link BootFailedException}</td><td>4 BOOT_FAILED</td></tr>
 * <tr><td>{@link RenderFailedException}</td><td>5 RENDER_FAILED with the worker's code
 *     (TOO_LARGE, LIMIT_EXCEEDED, PARSE_ERROR, UNSUPPORTED, BAD_REQUEST, INTERNAL); the worker's
 *     own TIMEOUT → 6</td></tr>
 * <tr><td>{@link SandboxLostException}</td><td>6 TIMEOUT</td></tr>
 * <tr><td>{@link InvalidConfigException}</td><td>2 USAGE</td></tr>
 * <tr><td>{@link InterruptedException}</td><td>130 INTERRUPTED</td></tr>
 * <tr><td>anything else</td><td>1 ERROR</td></tr>
 * </table>
 */
public final class Failures {

    private Failures() {
    }

    /** The CLI failure for {@code t}. */
    public static CliException classify(Throwable t) {
        Throwable e = unwrap(t);
        if (e instanceof CliException c) {
            return c;
        }
        String msg = e.getMessage() == null ? e.toString() : e.getMessage();
        if (e instanceof HostSetupException h) {
            return switch (h.problem()) {
                case QEMU_NOT_FOUND -> new CliException(ExitCode.HOST, "QEMU_NOT_FOUND", msg,
                        InstallHints.qemu(HostReport.Os.current(), hostArch()), e);
                case ACCELERATOR_UNAVAILABLE -> new CliException(ExitCode.HOST, "ACCELERATOR_UNAVAILABLE", msg,
                        "run qvm doctor; --accelerator auto falls back to tcg", e);
                case TRANSPORT_UNAVAILABLE -> new CliException(ExitCode.HOST, "TRANSPORT_UNAVAILABLE", msg,
                        "use --transport serial", e);
                case IMAGE_INVALID -> new CliException(ExitCode.IMAGE, "IMAGE", msg, InstallHints.imageBuild(hostArch()), e);
                case HOST_UNSUPPORTED -> new CliException(ExitCode.HOST, "UNSUPPORTED_HOST", msg, null, e);
                case QEMU_UNSUPPORTED -> new CliException(ExitCode.HOST, "QEMU_UNSUPPORTED", msg, null, e);
                case HOST_SETUP_NEEDED -> new CliException(ExitCode.HOST, "HOST_SETUP_NEEDED", msg,
                        "run the command in the message (./qvm does the set-up when run as root)", e);
            };
        }
        if (e instanceof BootFailedException) {
            return new CliException(ExitCode.BOOT_FAILED, "BOOT_FAILED", msg,
                    "qvm doctor checks the host; the guest console tail above shows how far the guest got", e);
        }
        if (e instanceof RenderFailedException r) {
            ExitCode x = r.code() == ErrorCode.TIMEOUT ? ExitCode.TIMEOUT : ExitCode.RENDER_FAILED;
            return new CliException(x, r.code().name(), msg, null, e);
        }
        if (e instanceof SandboxLostException l) {
            return l.reason() == SandboxLostException.Reason.DEADLINE_EXCEEDED
                    ? new CliException(ExitCode.TIMEOUT, "TIMEOUT", msg,
                            "raise --request-timeout; the sandbox that ran it was stopped", e)
                    : new CliException(ExitCode.ERROR, "SANDBOX_CRASHED", msg, null, e);
        }
        if (e instanceof InvalidConfigException) {
            return new CliException(ExitCode.USAGE, "INVALID_CONFIG", msg, null, e);
        }
        if (e instanceof InterruptedException) {
            return new CliException(ExitCode.INTERRUPTED, "INTERRUPTED", "interrupted", null, e);
        }
        if (e instanceof SandboxException) {
            return new CliException(ExitCode.ERROR, "SANDBOX_ERROR", msg, null, e);
        }
        if (e instanceof UnsafeDirectoryException) {
            return new CliException(ExitCode.HOST, "HOST_SETUP_NEEDED", msg, "qvm never changes an existing directory: "
                    + "fix it as the message says, or point qvm at another (--state-dir, QVM_STATE, QVM_RUNTIME_DIR, "
                    + "QVM_CACHE)", e);
        }
        if (e instanceof IOException || e instanceof UncheckedIOException) {
            return new CliException(ExitCode.ERROR, "IO_ERROR", msg, null, e);
        }
        return new CliException(ExitCode.ERROR, "INTERNAL", e.getClass().getSimpleName() + ": " + msg, null, e);
    }

    private static Arch hostArch() {
        return Arch.fromOsArch(System.getProperty("os.arch", "")).orElse(Arch.X86_64);
    }

    private static Throwable unwrap(Throwable t) {
        Throwable e = t;
        while ((e instanceof ExecutionException || e instanceof CompletionException
                || e instanceof picocli.CommandLine.ExecutionException) && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }
}
