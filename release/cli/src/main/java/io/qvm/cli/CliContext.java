package io.qvm.cli;

import io.qvm.admin.Directories;
import io.qvm.image.ImageInfo;
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
 * @param releaseTools what {@code qvm release} builds images with and gates them by (normally
 *     {@link ReleaseTools#system()})
 * @param backends the backend builder the commands start sandboxes with (normally
 *     {@link #SYSTEM_BACKENDS}; tests hand in a fake QEMU host's)
 */
public record CliContext(Map<String, String> env, boolean interactive, ImageTool imageTool,
        String javaCommand, String classPath, ReleaseTools releaseTools, Backends backends) {

    /** Makes the backend builder for a command: its image and state directories and its progress. */
    @FunctionalInterface
    public interface Backends {
        io.qvm.QemuVmBackend.Builder builder(CliContext ctx, Path imageRoot, Path stateRoot,
                java.util.function.Consumer<String> progress);
    }

    /** The real host: the probe, QEMU and templates of this machine and user. */
    public static final Backends SYSTEM_BACKENDS = (ctx, imageRoot, stateRoot, progress) ->
            io.qvm.QemuVmBackend.builder().imageDir(imageRoot).stateDirectory(stateRoot)
                    .templateDirectory(TemplateCommand.store(ctx).root()).progress(progress).environment(ctx.env());

    public CliContext {
        env = Map.copyOf(env);
        Objects.requireNonNull(imageTool, "imageTool");
        Objects.requireNonNull(javaCommand, "javaCommand");
        Objects.requireNonNull(classPath, "classPath");
        Objects.requireNonNull(releaseTools, "releaseTools");
        Objects.requireNonNull(backends, "backends");
    }

    /** This process: its environment, its console, its class path and {@code java}. */
    public static CliContext system() {
        return new CliContext(System.getenv(), System.console() != null, new BuilderImageTool(),
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                System.getProperty("java.class.path"), ReleaseTools.system(), SYSTEM_BACKENDS);
    }

    public CliContext withEnv(Map<String, String> newEnv) {
        return new CliContext(newEnv, interactive, imageTool, javaCommand, classPath, releaseTools, backends);
    }

    public CliContext withImageTool(ImageTool tool) {
        return new CliContext(env, interactive, tool, javaCommand, classPath, releaseTools, backends);
    }

    public CliContext withReleaseTools(ReleaseTools tools) {
        return new CliContext(env, interactive, imageTool, javaCommand, classPath, tools, backends);
    }

    public CliContext withBackends(Backends newBackends) {
        return new CliContext(env, interactive, imageTool, javaCommand, classPath, releaseTools, newBackends);
    }

    /** The library's view of {@link #env}: every {@code QVM_*} variable and its default. */
    Directories qvmEnv() {
        return Directories.of(env);
    }

    /**
     * A backend on the directories these options name (image, state) and the user's template
     * store, saying its progress to {@code progress}.
     */
    io.qvm.QemuVmBackend.Builder backend(DirOptions dirs, java.util.function.Consumer<String> progress) {
        return backends.builder(this, imageRoot(dirs.imageDir), stateRoot(dirs.stateDir), progress);
    }

    /** {@code --state-dir}, else {@code $QVM_STATE}, else {@code ~/.local/state/qvm}. */
    Path stateRoot(Path option) {
        if (option != null) {
            return option.toAbsolutePath().normalize();
        }
        return qvmEnv().get(Directories.STATE).map(s -> Path.of(s).toAbsolutePath().normalize())
                .orElseGet(() -> qvmEnv().stateRoot());
    }

    /**
     * {@code --image-dir}, else {@code $QVM_IMAGE_DIR}, else {@code out/image} of the qvm checkout
     * holding the working directory (the {@code ./qvm} launcher sets {@code $QVM_IMAGE_DIR} to its
     * checkout's). The CLI gives the backend this directory, so it is the only place searched; the
     * library alone never looks for a checkout: it searches {@code $QVM_IMAGE_DIR}, the user cache,
     * then the local Maven repository (the backend's default).
     */
    Path imageRoot(Path option) {
        if (option != null) {
            return option.toAbsolutePath().normalize();
        }
        return qvmEnv().get(Directories.IMAGE_DIR).map(s -> Path.of(s).toAbsolutePath().normalize())
                .orElseGet(() -> ImageInfo.repoRoot().resolve("out").resolve("image"));
    }

    /** Where sandbox sockets go (the control socket too): {@link Directories#runtimeRoot()} of this process. */
    Path runtimeRoot() {
        return Directories.system().runtimeRoot();
    }
}
