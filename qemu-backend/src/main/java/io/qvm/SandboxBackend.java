package io.qvm;

/**
 * Starts sandboxes. A backend owns what its sandboxes share (the host probe's verdict, the state
 * directory); closing it closes every sandbox it started and still runs.
 *
 * <pre>{@code
 * try (SandboxBackend backend = QemuVmBackend.create();
 *      Sandbox sandbox = backend.start(SandboxConfig.defaults())) {
 *     RenderResult png = sandbox.render(RenderRequest.svg(bytes).width(800).build());
 * }
 * }</pre>
 */
public interface SandboxBackend extends AutoCloseable {

    /**
     * Starts a sandbox and returns once its worker answered the handshake.
     *
     * @throws BootFailedException the guest did not become ready within {@link SandboxConfig#bootTimeout()}
     * @throws HostSetupException the host cannot run this configuration ({@link HostSetupException#problem()}:
     *     no QEMU, the accelerator asked for is unavailable, the image is missing or invalid, ...)
     */
    Sandbox start(SandboxConfig config);

    @Override
    void close();
}
