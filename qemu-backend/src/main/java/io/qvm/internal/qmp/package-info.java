/**
 * QEMU's machine protocol (QMP): {@link io.qvm.internal.qmp.QmpClient} (async reader thread,
 * id-matched futures, bounded lines, fail-closed on protocol errors), the typed values
 * {@link io.qvm.internal.qmp.QmpGreeting}, {@link io.qvm.internal.qmp.QmpStatus},
 * {@link io.qvm.internal.qmp.QmpEvent}, and one exception type per failure under
 * {@link io.qvm.internal.qmp.QmpException}. Independent of the public {@code io.qvm} API, which
 * wraps these exceptions.
 */
package io.qvm.internal.qmp;
