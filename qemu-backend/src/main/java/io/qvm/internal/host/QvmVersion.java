package io.qvm.internal.host;

import java.io.IOException;
import java.io.InputStream;
import java.util.Optional;
import java.util.Properties;
import java.util.regex.Pattern;

/**
 * The backend's own Maven version ({@code 0.1.0-SNAPSHOT}), as the build wrote it into
 * {@value #RESOURCE}: a filtered resource, so it is the same in {@code target/classes} and in the
 * jar. The image resolver looks in the local Maven repository for the image artifact of exactly
 * this version, so a backend boots the image released with it and never another one.
 */
public final class QvmVersion {

    /** The class-path resource holding {@code version=<the project's version>}. */
    public static final String RESOURCE = "io/qvm/backend/qvm-version.properties";

    /** A Maven version as it may appear in a repository path: no separators, no {@code ..}. */
    private static final Pattern SAFE = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._+-]{0,99}");

    private static final Optional<String> CURRENT = load();

    private QvmVersion() {
    }

    /** This backend's version, or empty when the resource is missing or was never filled in. */
    public static Optional<String> current() {
        return CURRENT;
    }

    /**
     * The version in a {@value #RESOURCE} stream: empty unless {@code version} is set, filled in
     * (not the literal {@code ${project.version}} an unfiltered copy carries) and {@link #usable}.
     */
    static Optional<String> parse(InputStream in) throws IOException {
        Properties p = new Properties();
        p.load(in);
        String v = p.getProperty("version", "").strip();
        return usable(v) ? Optional.of(v) : Optional.empty();
    }

    /** Whether {@code version} may name a directory of a Maven repository: letters, digits, {@code . _ + -}, no {@code ..}. */
    public static boolean usable(String version) {
        return version != null && SAFE.matcher(version).matches() && !version.contains("..");
    }

    private static Optional<String> load() {
        try (InputStream in = QvmVersion.class.getClassLoader().getResourceAsStream(RESOURCE)) {
            return in == null ? Optional.empty() : parse(in);
        } catch (IOException e) {
            return Optional.empty();
        }
    }
}
