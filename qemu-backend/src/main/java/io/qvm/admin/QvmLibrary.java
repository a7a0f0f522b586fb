package io.qvm.admin;

import io.qvm.internal.host.QvmVersion;
import java.util.Optional;

/** This library itself: its version, which also names the guest image it pins. */
public final class QvmLibrary {

    private QvmLibrary() {
    }

    /** The version the build wrote into this jar (empty: classes not built by Maven, as in an IDE). */
    public static Optional<String> version() {
        return QvmVersion.current();
    }

    /** Whether {@code version} may name a directory of a Maven repository: letters, digits, {@code . _ + -}, no {@code ..}. */
    public static boolean isUsableVersion(String version) {
        return QvmVersion.usable(version);
    }

    /** The class path resource holding the version. */
    public static final String VERSION_RESOURCE = QvmVersion.RESOURCE;
}
