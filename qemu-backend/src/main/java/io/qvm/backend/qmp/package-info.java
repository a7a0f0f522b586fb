/**
 * QEMU's machine protocol (QMP): {@link io.qvm.backend.qmp.QmpClient} (async reader thread,
 * id-matched futures, bounded lines, fail-closed on protocol errors), the typed values
 * {@link io.qvm.backend.qmp.QmpGreeting}, {@link io.qvm.backend.qmp.QmpStatus},
 * {@link io.qvm.backend.qmp.QmpEvent}, and one exception type per failure under
 * {@link io.qvm.backend.qmp.QmpException}. Independent of the public {@code io.qvm} API, which
 * wraps these exceptions.
 */
package io.qvm.backend.qmp;
