package io.qvm.internal.probe;

import io.qvm.internal.host.QemuInstallation;
import io.qvm.internal.host.QemuCapabilities;

import io.qvm.internal.host.QemuVersion;
import io.qvm.internal.host.CommandRunner;

import io.qvm.protocol.image.Arch;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

/**
 * The QEMU builds users install, as their answers to the capability probe's questions
 * ({@code src/test/resources/qemu-builds/<build>/}: recorded with {@code record.sh} where the build
 * runs here, derived with {@code derive.py} from its configuration where it does not; each
 * directory's {@code SOURCE.md} says which). {@link #replay} is a {@link CommandRunner} that answers
 * as that build does, so the real {@link QemuCapabilityProbe} parses them.
 */
public final class QemuBuilds {

    private QemuBuilds() {
    }

    /** Every build with answers. */
    public static List<String> all() {
        try (Stream<Path> s = Files.list(root())) {
            return s.filter(Files::isDirectory).map(p -> p.getFileName().toString()).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** True when the answers were recorded from the running build, false when derived. */
    public static boolean recorded(String build) {
        return text(build, "SOURCE.md").contains("**Recorded**");
    }

    /** The guest architecture the build's binary emulates. */
    public static Arch guest(String build) {
        return build.contains("-aarch64") ? Arch.AARCH64 : Arch.X86_64;
    }

    /** Its {@code --version}. */
    public static QemuVersion version(String build) {
        return QemuVersion.parse(text(build, "version.txt"));
    }

    /** Its capabilities, parsed by the real probe from its replayed answers. */
    public static QemuCapabilities capabilities(String build) {
        return new QemuCapabilityProbe(replay(build, new AtomicInteger()), null).ask(binary(build), guest(build));
    }

    /** An installation of the build at {@link #binary}. */
    public static QemuInstallation installation(String build) {
        return new QemuInstallation(guest(build), binary(build), version(build), capabilities(build));
    }

    /** A made-up path of the build's binary. */
    public static Path binary(String build) {
        return Path.of("/opt/" + build + "/bin/qemu-system-" + guest(build).qemuName());
    }

    /**
     * A runner answering as the build does; {@code runs} counts the commands. A question the build
     * was not asked exits 1 the way QEMU does for an unknown machine.
     */
    public static CommandRunner replay(String build, AtomicInteger runs) {
        return new CommandRunner() {
            @Override
            public Result run(List<String> argv, Duration deadline) {
                runs.incrementAndGet();
                String args = String.join(" ", argv.subList(1, argv.size()));
                String file = switch (args) {
                    case "--version" -> "version.txt";
                    case "-accel help" -> "accel-help.txt";
                    case "-machine help" -> "machine-help.txt";
                    case "-object help" -> "object-help.txt";
                    case "-device help" -> "device-help.txt";
                    default -> args.matches("-machine [a-z0-9]+,help")
                            ? "machine-" + args.substring(9, args.length() - 5) + "-help.txt" : null;
                };
                if (file == null || !Files.exists(root().resolve(build).resolve(file))) {
                    return new Result(1, "", "qemu: unexpected question: " + args, false);
                }
                return new Result(0, text(build, file), "", false);
            }

            @Override
            public Result run(List<String> argv, String stdin, Duration deadline) {
                runs.incrementAndGet();
                if (!argv.contains("-qmp") || !stdin.contains("query-command-line-options")) {
                    return new Result(1, "", "qemu: unexpected session", false);
                }
                return new Result(0, text(build, "qmp.txt"), "", false);
            }
        };
    }

    static String text(String build, String file) {
        try (InputStream in = Files.newInputStream(root().resolve(build).resolve(file))) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Path root() {
        try {
            return Path.of(QemuBuilds.class.getResource("/qemu-builds").toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }
}
