package io.qvm.internal.template;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * {@code meta.json} of a template: its key, how it was made, and what its files must look like.
 * Written once by {@link TemplateStore} when the template is committed and never changed.
 *
 * @param format       {@link TemplateKey#FORMAT}
 * @param key          {@link TemplateKey#hash()}
 * @param inputs       the key's inputs (for {@code qvm template ls} and for a human)
 * @param mode         {@link TemplateMode#id()}
 * @param memoryMib    guest RAM
 * @param created      ISO-8601 instant
 * @param ownerUid     uid that built it (-1 where files have no owner)
 * @param bootMillis   cold boot to READY of the template VM
 * @param saveMillis   stop + migrate
 * @param state        the migration stream file
 * @param ram          the RAM file ({@code null} in full mode)
 */
@JsonIgnoreProperties(ignoreUnknown = true)
public record TemplateMeta(String format, String key, SortedMap<String, String> inputs, String mode, int memoryMib,
        String created, int ownerUid, long bootMillis, long saveMillis, FileFacts state, FileFacts ram) {

    static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    public TemplateMeta {
        Objects.requireNonNull(format, "format");
        Objects.requireNonNull(key, "key");
        inputs = new TreeMap<>(inputs == null ? Map.of() : inputs);
        Objects.requireNonNull(mode, "mode");
        Objects.requireNonNull(state, "state");
    }

    /**
     * What a file of the template must be.
     *
     * @param bytes  its size
     * @param sha256 its content hash
     * @param inode  its inode ({@code unix:ino}; -1 where there is none)
     * @param ctime  its change time in nanoseconds ({@code unix:ctime}; -1 where there is none):
     *               any write, truncate, chmod or utime moves it, and no user can set it back
     */
    @JsonIgnoreProperties(ignoreUnknown = true)
    public record FileFacts(long bytes, String sha256, long inode, long ctime) {
    }

    public TemplateMode templateMode() {
        return TemplateMode.fromId(mode);
    }

    void write(Path file) throws IOException {
        JSON.writeValue(file.toFile(), this);
    }

    static TemplateMeta read(Path file) throws IOException {
        return JSON.readValue(file.toFile(), TemplateMeta.class);
    }
}
