package io.qvm.cli;

import io.qvm.backend.image.GuestImage;
import io.qvm.backend.process.SocketPaths;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;

/**
 * What the commands need from their environment, in one immutable value so that tests run every
 * command in-process with their own directories, image tools and terminal setting.
 *
 * @param env the environment ({@code QVM_STATE}, {@code QVM_IMAGE_DIR}, …)
 * @param interactive whether stdout is a terminal (progress redraws one line) or not (plain lines)
 * @param imageTool builds and verifies guest images (normally {@link BuilderImageTool})
 * @param javaCommand the {@code java} binary a detached supervisor is started with
 * @param classPath the class path a detached supervisor is started with
 */
public record CliContext(Map<String, String> env, boolean interactive, ImageTool imageTool,
        String javaCommand, String classPath) {

    public CliContext {
        env = Map.copyOf(env);
        Objects.requireNonNull(imageTool, "imageTool");
        Objects.requireNonNull(javaCommand, "javaCommand");
        Objects.requireNonNull(classPath, "classPath");
    }

    /** This process: its environment, its console, its class path and {@code java}. */
    public static CliContext system() {
        return new CliContext(System.getenv(), System.console() != null, new BuilderImageTool(),
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                System.getProperty("java.class.path"));
    }

    public CliContext withEnv(Map<String, String> newEnv) {
        return new CliContext(newEnv, interactive, imageTool, javaCommand, classPath);
    }

    public CliContext withImageTool(ImageTool tool) {
        return new CliContext(env, interactive, tool, javaCommand, classPath);
    }

    /** {@code --state-dir}, else {@code $QVM_STATE}, else {@code ~/.local/state/qvm}. */
    Path stateRoot(Path option) {
        if (option != null) {
            return option.toAbsolutePath().normalize();
        }
        String s = env.get("QVM_STATE");
        if (s != null && !s.isBlank()) {
            return Path.of(s).toAbsolutePath().normalize();
        }
        return Path.of(System.getProperty("user.home"), ".local", "state", "qvm");
    }

    /** {@code --image-dir}, else {@code $QVM_IMAGE_DIR}, else {@code out/image} of the checkout. */
    Path imageRoot(Path option) {
        if (option != null) {
            return option.toAbsolutePath().normalize();
        }
        String s = env.get(GuestImage.ENV_IMAGE_DIR);
        if (s != null && !s.isBlank()) {
            return Path.of(s).toAbsolutePath().normalize();
        }
        return GuestImage.defaultRoot();
    }

    /** Where sandbox sockets go (the control socket too): {@link SocketPaths#defaultRuntimeRoot()}. */
    Path runtimeRoot() {
        return SocketPaths.defaultRuntimeRoot();
    }
}
