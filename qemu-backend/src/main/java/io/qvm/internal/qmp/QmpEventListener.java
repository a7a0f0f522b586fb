package io.qvm.internal.qmp;

/**
 * Receives QMP events. Called on the client's reader thread, in the order QEMU sent the events
 * (interleaved correctly with command replies). Return quickly and never block: in particular do
 * not call a blocking {@link QmpClient} method from here (it would wait for the thread that is
 * calling you; the client refuses such calls with {@link IllegalStateException}). Hand work to
 * another thread, or use {@link QmpClient#executeAsync}. An exception thrown by a listener is
 * logged and does not affect other listeners or the connection.
 */
@FunctionalInterface
public interface QmpEventListener {
    void onEvent(QmpEvent event);
}
