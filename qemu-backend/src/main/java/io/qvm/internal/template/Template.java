package io.qvm.internal.template;

import java.nio.file.Path;
import java.util.Optional;

/**
 * A verified template on disk: its directory, metadata and files. Obtained from
 * {@link TemplateStore}; the files are only read (clones map the RAM file copy-on-write).
 */
public record Template(Path dir, TemplateMeta meta) {

    public static final String META = "meta.json";
    public static final String STATE = "state";
    public static final String RAM = "ram";

    public String id() {
        return dir.getFileName().toString();
    }

    public TemplateMode mode() {
        return meta.templateMode();
    }

    public Path stateFile() {
        return dir.resolve(STATE);
    }

    /** The RAM file ({@link TemplateMode#SHARED_RAM} only). */
    public Optional<Path> ramFile() {
        return mode() == TemplateMode.SHARED_RAM ? Optional.of(dir.resolve(RAM)) : Optional.empty();
    }
}
