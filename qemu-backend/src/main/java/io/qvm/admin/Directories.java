package io.qvm.admin;

import io.qvm.internal.host.QvmEnvironment;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/**
 * Where qvm keeps things by default, from an environment's {@code QVM_*} variables (the same
 * defaults a {@link io.qvm.QemuVmBackend} built with {@code environment(env)} uses).
 */
public final class Directories {

    /** The state directory's variable. */
    public static final String STATE = QvmEnvironment.STATE;
    /** The guest image root's variable. */
    public static final String IMAGE_DIR = QvmEnvironment.IMAGE_DIR;

    private final QvmEnvironment env;

    private Directories(QvmEnvironment env) {
        this.env = env;
    }

    /** The defaults {@code env} sets (this process's home and OS). */
    public static Directories of(Map<String, String> env) {
        return new Directories(QvmEnvironment.of(env));
    }

    /** This process's environment. */
    public static Directories system() {
        return new Directories(QvmEnvironment.system());
    }

    /** {@code name}'s value, if set and not blank. */
    public Optional<String> get(String name) {
        return env.get(name);
    }

    /** {@code $QVM_STATE}, else {@code ~/.local/state/qvm} (per OS). */
    public Path stateRoot() {
        return env.stateRoot();
    }

    /** {@code $QVM_RUNTIME_DIR}, else a short per-user directory for sockets. */
    public Path runtimeRoot() {
        return env.runtimeRoot();
    }

    /** {@code $QVM_CACHE/templates}, else {@code ~/.cache/qvm/templates}. */
    public Path templateRoot() {
        return env.templateRoot();
    }
}
