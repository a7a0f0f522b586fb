package io.qvm.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The CLI's own defaults: unlike the library, it falls back to the checkout's out/image. */
@Tag("unit")
class CliContextTest {

    private static CliContext with(Map<String, String> env) {
        return CliContext.system().withEnv(env);
    }

    @Test
    void theImageRootIsTheOptionThenQvmImageDirThenTheCheckoutsOutImage() {
        Map<String, String> env = Map.of("QVM_IMAGE_DIR", "/srv/images", "QVM_CACHE", "/c");
        assertEquals(Path.of("/opt/img"), with(env).imageRoot(Path.of("/opt/img/")));
        assertEquals(Path.of("/srv/images"), with(env).imageRoot(null));
        // Maven runs this test in release/cli/, two levels below the checkout's root
        Path checkout = Path.of("").toAbsolutePath().getParent().getParent();
        assertEquals(checkout.resolve("out").resolve("image"), with(Map.of("QVM_CACHE", "/c")).imageRoot(null));
    }

    @Test
    void theStateRootIsTheOptionThenQvmStateThenTheHomeDirectory() {
        assertEquals(Path.of("/s"), with(Map.of("QVM_STATE", "/s/")).stateRoot(null));
        assertEquals(Path.of("/o"), with(Map.of("QVM_STATE", "/s")).stateRoot(Path.of("/o")));
        assertEquals(Path.of(System.getProperty("user.home"), ".local", "state", "qvm"), with(Map.of()).stateRoot(null));
    }
}
