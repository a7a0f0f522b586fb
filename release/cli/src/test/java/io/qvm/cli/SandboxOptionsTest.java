package io.qvm.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.qvm.InvalidConfigException;
import io.qvm.SandboxConfig;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** The command line's sandbox options land in {@link SandboxConfig}, and travel to a child process unchanged. */
@Tag("unit")
class SandboxOptionsTest {

    @Command(name = "t")
    static final class Holder {
        @Mixin
        SandboxOptions options;
    }

    private static SandboxOptions parse(String... args) {
        Holder h = new Holder();
        new CommandLine(h).parseArgs(args);
        return h.options;
    }

    @Test
    void idlePauseLandsInTheConfigAndZeroMeansNever() {
        assertEquals(Duration.ofSeconds(1), parse().toConfig().idlePause(), "the default");
        assertEquals(Duration.ZERO, parse("--idle-pause", "0").toConfig().idlePause());
        assertEquals(Duration.ofMillis(2500), parse("--idle-pause", "2500").toConfig().idlePause());
        InvalidConfigException e = assertThrows(InvalidConfigException.class,
                () -> parse("--idle-pause", "99").toConfig());
        assertEquals("idlePause", e.field());
        assertEquals("0 (never) or 100 ms..60 min", e.allowed());
    }

    @Test
    void givenOptionsTravelToAChildProcessAsTheyWere() {
        SandboxOptions o = parse("--vcpus", "1", "--boot-timeout", "60", "--idle-pause", "0");
        assertEquals(List.of("--vcpus", "1", "--boot-timeout", "60", "--idle-pause", "0"), o.toArgs());
        assertEquals(o.toConfig(), parse(o.toArgs().toArray(String[]::new)).toConfig());
    }
}
