package io.qvm.protocol.image;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.core.util.DefaultIndenter;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectWriter;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * {@code manifest.json} of an image directory ({@link ImageDirectory}): what the image builder
 * put in it, written by the builder and read by the backend and the CLI through this one record
 * (docs/CONTRACTS.md). JSON names are the components' in snake case ({@code debian_arch},
 * {@code worker_jar}, …), in this order; unknown fields are ignored when reading, absent ones are
 * {@code null} (0 or false for numbers and flags) and not written.
 *
 * @param transports the worker transports the image's init supports; absent means serial only
 * @param recipeSha256 SHA-256 of what the builder generates rather than takes from a package — the
 *     init as rendered from its template and the guest contract, and the OCI config template — so
 *     that a change to either makes the next build rebuild the image; absent in older images
 * @param crngReseed whether the init reseeds the guest kernel's CRNG from a seed the host sends
 *     with {@code restore} (ControlProtocol; adr/0012); false in older images, whose clones rely
 *     on vmgenid alone; written only when true
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
@JsonIgnoreProperties(ignoreUnknown = true)
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ImageManifest(int format, String arch, String debianArch, String console, Kernel kernel, Runsc runsc,
        Jre jre, boolean reproducible, WorkerJar workerJar, FixedLimits fixedLimits, long sourceDateEpoch,
        List<Input> inputs, List<Output> outputs, List<String> transports, String recipeSha256,
        @JsonInclude(JsonInclude.Include.NON_DEFAULT) boolean crngReseed) {

    /** The format this record reads and writes. */
    public static final int FORMAT = 1;

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final ObjectWriter WRITER = JSON.writer(new DefaultPrettyPrinter()
            .withObjectIndenter(new DefaultIndenter("  ", "\n"))
            .withArrayIndenter(new DefaultIndenter("  ", "\n")));

    /**
     * The guest kernel: its version, its Debian package (JSON {@code package}, a Java keyword) and
     * the modules the init loads, in order.
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    @JsonIgnoreProperties(ignoreUnknown = true)
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Kernel(String version, @JsonProperty("package") String packageName, List<String> modules) {
    }

    /** gVisor's runsc: package version and suite, the platforms the init accepts and its default. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    @JsonIgnoreProperties(ignoreUnknown = true)
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Runsc(String version, String suite, List<String> platforms, String defaultPlatform) {
    }

    /** The linked JRE: modules, the JDK that linked it, whether a CDS archive ships, jlink's arguments, libraries. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    @JsonIgnoreProperties(ignoreUnknown = true)
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Jre(List<String> modules, String jlinkRuntime, boolean cds, List<String> jlinkArgs,
            List<String> libraries) {
    }

    /** The worker jar: its path in the guest, its SHA-256 and size. */
    @JsonIgnoreProperties(ignoreUnknown = true)
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record WorkerJar(String path, String sha256, long size) {
    }

    /** The rlimits fixed in the OCI config. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    @JsonIgnoreProperties(ignoreUnknown = true)
    public record FixedLimits(int rlimitNofile, int rlimitNproc) {
    }

    /** One pinned package the image was built from. */
    @JsonIgnoreProperties(ignoreUnknown = true)
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Input(String name, String role, String suite, String version, String architecture, String sha256) {
    }

    /** One file of the image with its SHA-256 and size. */
    @JsonIgnoreProperties(ignoreUnknown = true)
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Output(String name, String sha256, long size) {
    }

    /** The kernel version, if the manifest names one. */
    public Optional<String> kernelVersion() {
        return Optional.ofNullable(kernel).map(Kernel::version);
    }

    /** {@link #transports}, or serial alone when the manifest lists none. */
    public List<String> supportedTransports() {
        return transports == null || transports.isEmpty() ? List.of(KernelCommandLine.TRANSPORT_SERIAL) : transports;
    }

    /** {@link #outputs}, or none. */
    public List<Output> outputFiles() {
        return outputs == null ? List.of() : outputs;
    }

    /** Parses a manifest. */
    public static ImageManifest parse(String json) throws IOException {
        return JSON.readValue(json, ImageManifest.class);
    }

    /** Reads {@code file}. */
    public static ImageManifest read(Path file) throws IOException {
        return JSON.readValue(file.toFile(), ImageManifest.class);
    }

    /** The manifest's text: indented by two spaces, one field per line, a final newline. */
    public String toJson() {
        try {
            return WRITER.writeValueAsString(this) + "\n";
        } catch (IOException e) {
            throw new IllegalStateException("a manifest is always writable as JSON", e);
        }
    }

    /** Writes {@link #toJson()} to {@code file}. */
    public void write(Path file) throws IOException {
        Files.writeString(file, toJson(), StandardCharsets.UTF_8);
    }
}
