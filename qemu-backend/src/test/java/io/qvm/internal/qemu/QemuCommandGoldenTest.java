package io.qvm.internal.qemu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Tag;

/**
 * Pins the argv for every host/guest/accelerator pair, byte for byte, in
 * {@code src/test/resources/golden/<case>.argv} (one argument per line, LF, trailing LF).
 * Run with {@code -Dqvm.golden.update=true} to rewrite the files after an intended change, then
 * review the diff.
 */
@Tag("unit")
class QemuCommandGoldenTest {

    static Stream<Arguments> cases() {
        return GoldenCases.all().entrySet().stream().map(e -> Arguments.of(e.getKey(), e.getValue()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void matchesGoldenFile(String name, QemuCommandInput input) throws IOException {
        List<String> argv = QemuCommand.build(input);
        String actual = String.join("\n", argv) + "\n";
        if (Boolean.getBoolean("qvm.golden.update")) {
            Path dir = Path.of(System.getProperty("basedir", ".")).resolve("src/test/resources/golden");
            Files.createDirectories(dir);
            Files.writeString(dir.resolve(name + ".argv"), actual, StandardCharsets.UTF_8);
            return;
        }
        String expected;
        try (InputStream in = getClass().getResourceAsStream("/golden/" + name + ".argv")) {
            assertTrue(in != null, "missing golden file golden/" + name + ".argv: run with -Dqvm.golden.update=true");
            expected = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        assertEquals(expected, actual, "argv for " + name + " changed; if intended, rerun with -Dqvm.golden.update=true");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void neverANetworkDevice(String name, QemuCommandInput input) {
        List<String> argv = QemuCommand.build(input);
        for (String a : argv) {
            assertTrue(!a.equals("-nic") && !a.equals("-netdev") && !a.equals("-net"), name + ": " + a);
            assertTrue(!a.matches("(?i).*(virtio-net|e1000|rtl8139|vmxnet|ne2k|usb-net|user,|hostfwd|tap,).*"),
                    name + " has a network device: " + a);
        }
        assertTrue(argv.contains("-nodefaults") && argv.contains("-no-user-config") && argv.contains("-no-reboot"));
        int display = argv.indexOf("-display");
        assertEquals("none", argv.get(display + 1));
        assertTrue(argv.stream().noneMatch(a -> a.contains("stdio")), name + ": nothing on stdio");
        assertTrue(argv.stream().noneMatch(a -> a.equals("-monitor") || a.equals("-nographic")));
    }

    static Map<String, QemuCommandInput> all() {
        return GoldenCases.all();
    }
}
