package io.qvm.internal.image;

import io.qvm.internal.host.QvmVersion;
import io.qvm.protocol.image.Arch;
import java.io.IOException;
import java.io.InputStream;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.regex.Pattern;

/**
 * The image zips a backend accepts from a remote repository: per architecture the SHA-256 and
 * size of {@code io.qvm:qvm-image:<version>:zip:<arch>} for one release version, the way Lima
 * pins the digests of the images its templates name. The pins travel inside the backend's own
 * jar, as the class-path resource {@value #RESOURCE}:
 * <pre>
 * # qvm image pins, written by qvm release 1.2.0
 * version=1.2.0
 * x86_64.sha256=3f5a…  (64 lower-case hex digits)
 * x86_64.size=61234567
 * aarch64.sha256=9c01…
 * aarch64.size=60123456
 * </pre>
 * The release pipeline writes this file ({@code OUT/<version>/pinned-images.properties}) from the
 * very zips it deploys; it is copied into {@code qemu-backend/src/main/resources} before the
 * backend of that version is built (adr/0011): the image depends on the worker, never on the
 * backend, so its hashes exist before the backend jar does. A backend whose resource names another
 * version, or that has none (every development build), pins nothing and fetches nothing.
 *
 * @param version the release version the pins are for
 * @param pins architecture → its zip's pin
 * @param source where the pins were read from, for messages
 */
public record PinnedImages(String version, Map<Arch, Pin> pins, String source) {

    /** The class-path resource a backend's jar carries its pins in. */
    public static final String RESOURCE = "io/qvm/backend/image/pinned-images.properties";
    /** What the release writes into its output directory (the same format). */
    public static final String FILE = "pinned-images.properties";
    private static final Pattern SHA256 = Pattern.compile("[0-9a-f]{64}");
    private static final int MAX_BYTES = 64 * 1024;

    /**
     * One zip's pin.
     *
     * @param sha256 its SHA-256, 64 lower-case hex digits
     * @param size its length in bytes (a download longer than this is cut off and refused)
     */
    public record Pin(String sha256, long size) {
        public Pin {
            if (sha256 == null || !SHA256.matcher(sha256).matches()) {
                throw new IllegalArgumentException("a pin's sha256 is 64 lower-case hex digits, got '" + sha256 + "'");
            }
            if (size <= 0) {
                throw new IllegalArgumentException("a pin's size is positive, got " + size);
            }
        }
    }

    public PinnedImages {
        if (!QvmVersion.usable(version)) {
            throw new IllegalArgumentException("pins name a release version, got '" + version + "'");
        }
        Objects.requireNonNull(source, "source");
        Map<Arch, Pin> copy = new EnumMap<>(Arch.class);
        copy.putAll(pins);
        pins = Collections.unmodifiableMap(copy);
    }

    /**
     * The pins this backend's jar carries, if it carries any.
     *
     * @throws IllegalStateException the resource is there but malformed (a broken build: refuse,
     *     never guess)
     */
    public static Optional<PinnedImages> bundled() {
        return fromClassPath(PinnedImages.class.getClassLoader());
    }

    static Optional<PinnedImages> fromClassPath(ClassLoader loader) {
        try (InputStream in = loader.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                return Optional.empty();
            }
            byte[] bytes = in.readNBytes(MAX_BYTES + 1);
            if (bytes.length > MAX_BYTES) {
                throw new IllegalStateException(RESOURCE + " on the class path is larger than " + MAX_BYTES
                        + " bytes: not a pins file");
            }
            return Optional.of(parse(new String(bytes, StandardCharsets.UTF_8), "the backend's " + RESOURCE));
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + RESOURCE + " from the class path: " + e, e);
        }
    }

    /**
     * Reads the format above.
     *
     * @throws IllegalStateException no usable {@code version}, an unknown key, an architecture
     *     with a hash but no size (or the reverse), or a value that is not a hash or a size
     */
    public static PinnedImages parse(String text, String source) {
        Properties p = new Properties();
        try {
            p.load(new StringReader(text));
        } catch (IOException | IllegalArgumentException e) {
            throw new IllegalStateException(source + " is not a properties file: " + e.getMessage(), e);
        }
        String version = p.getProperty("version", "").strip();
        Map<Arch, Pin> pins = new EnumMap<>(Arch.class);
        for (String key : p.stringPropertyNames()) {
            if (key.equals("version")) {
                continue;
            }
            int dot = key.lastIndexOf('.');
            Optional<Arch> arch = dot < 0 ? Optional.empty() : archOf(key.substring(0, dot));
            String field = dot < 0 ? "" : key.substring(dot + 1);
            if (arch.isEmpty() || !(field.equals("sha256") || field.equals("size"))) {
                throw new IllegalStateException(source + " has an unknown key '" + key + "' (known: version, "
                        + "<arch>.sha256, <arch>.size)");
            }
        }
        try {
            for (Arch a : Arch.values()) {
                String sha = p.getProperty(a.qemuName() + ".sha256");
                String size = p.getProperty(a.qemuName() + ".size");
                if (sha == null && size == null) {
                    continue;
                }
                if (sha == null || size == null) {
                    throw new IllegalStateException(source + " pins " + a.qemuName() + " with "
                            + (sha == null ? "a size but no sha256" : "a sha256 but no size"));
                }
                pins.put(a, new Pin(sha.strip(), Long.parseLong(size.strip())));
            }
            return new PinnedImages(version, pins, source);
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException(source + " is malformed: " + e.getMessage(), e);
        }
    }

    /** The pin for {@code arch} of {@code version}: empty unless these pins are for that version. */
    public Optional<Pin> pin(String version, Arch arch) {
        return this.version.equals(version) ? Optional.ofNullable(pins.get(arch)) : Optional.empty();
    }

    /** The file's text, architectures in a fixed order, as {@link #parse} reads it. */
    public String format() {
        StringBuilder sb = new StringBuilder("# qvm image pins: SHA-256 and size of each image zip of io.qvm:qvm-image:")
                .append(version).append(", written by qvm release (adr/0011)\n").append("version=").append(version)
                .append('\n');
        pins.forEach((a, pin) -> sb.append(a.qemuName()).append(".sha256=").append(pin.sha256()).append('\n')
                .append(a.qemuName()).append(".size=").append(pin.size()).append('\n'));
        return sb.toString();
    }

    private static Optional<Arch> archOf(String name) {
        for (Arch a : Arch.values()) {
            if (a.qemuName().equals(name)) {
                return Optional.of(a);
            }
        }
        return Optional.empty();
    }
}
