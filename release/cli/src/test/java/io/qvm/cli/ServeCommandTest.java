package io.qvm.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code qvm serve}'s options: what it refuses before it starts anything (exit 2, with the fix). */
@Tag("unit")
class ServeCommandTest {

    @TempDir
    Path tmp;

    private CliRun.Result serve(String... args) {
        String[] all = new String[args.length + 1];
        all[0] = "serve";
        System.arraycopy(args, 0, all, 1, args.length);
        return CliRun.run(CliRun.context(tmp.resolve("state"), tmp.resolve("images"), FakeImageTool.NO_BUILDS), all);
    }

    @Test
    void aNonLoopbackAddressWithoutTokensIsRefused() {
        CliRun.Result r = serve("--listen", "0.0.0.0:8080");
        assertEquals(ExitCode.USAGE.code(), r.exit(), r.toString());
        assertTrue(r.err().contains("without --tokens") && r.err().contains("--insecure-no-auth"), r.err());
    }

    @Test
    void aTokensFileThatIsNotHashesNamesItsLine() throws Exception {
        Path bad = tmp.resolve("tenants.txt");
        Files.writeString(bad, "# tenants\nalpha:" + "ab".repeat(32) + "\nbeta:plain-token\n");
        CliRun.Result r = serve("--tokens", bad.toString());
        assertEquals(ExitCode.USAGE.code(), r.exit(), r.toString());
        assertTrue(r.err().contains(bad + ":3: not tenant:<sha256 hex of the token>"), r.err());
        CliRun.Result missing = serve("--tokens", tmp.resolve("absent.txt").toString());
        assertEquals(ExitCode.USAGE.code(), missing.exit(), missing.toString());
        assertTrue(missing.err().contains("no such tokens file"), missing.err());
    }

    @Test
    void aListenAddressMustBeHostAndPort() {
        for (String listen : new String[] {"8080", "127.0.0.1:", "127.0.0.1:70000", "127.0.0.1:http", ":8080"}) {
            CliRun.Result r = serve("--listen", listen);
            assertEquals(ExitCode.USAGE.code(), r.exit(), listen + ": " + r);
            assertTrue(r.err().contains("--listen"), r.err());
        }
    }

    @Test
    void minIdleAboveMaxSandboxesIsRefused() {
        CliRun.Result r = serve("--max-sandboxes", "1", "--min-idle", "2");
        assertEquals(ExitCode.USAGE.code(), r.exit(), r.toString());
    }
}
