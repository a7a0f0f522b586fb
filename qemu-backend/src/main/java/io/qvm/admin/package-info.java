/**
 * What an operator's tool needs beyond rendering: the host check behind {@code qvm doctor}
 * ({@link io.qvm.admin.HostReport}), the guest image ({@link io.qvm.admin.GuestImages}), the
 * sandboxes recorded on disk and the reaping of stale ones ({@link io.qvm.admin.SandboxStates}),
 * snapshot templates ({@link io.qvm.admin.Templates}) and what one backend decided
 * ({@link io.qvm.admin.BackendAdmin}, from {@link io.qvm.QemuVmBackend#admin()}).
 *
 * <p>Every type here is a value or a small facade; the implementation behind them
 * ({@code io.qvm.internal.*}) is not API and changes without notice.
 */
package io.qvm.admin;
