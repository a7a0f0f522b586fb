/**
 * The QEMU process and what outlives it:
 * <ul>
 *   <li>{@link io.qvm.internal.process.QemuProcess} — launch (Commons Exec), exit watching, logs;
 *   <li>{@link io.qvm.internal.process.StopLadder} — graceful → quit → SIGTERM → SIGKILL, each
 *       with a deadline;
 *   <li>{@link io.qvm.internal.process.StateDirectory} / {@link io.qvm.internal.process.SandboxState}
 *       — per-sandbox owner record, pidfile and logs;
 *       {@link io.qvm.internal.process.SocketPaths} — short socket paths;
 *   <li>{@link io.qvm.internal.process.StaleSandboxReaper} — kills the QEMUs of dead owners,
 *       never a process it cannot prove is that QEMU;
 *   <li>{@link io.qvm.internal.process.LogTail} and {@link io.qvm.internal.process.QemuProcessException}
 *       — evidence for error messages.
 * </ul>
 */
package io.qvm.internal.process;
