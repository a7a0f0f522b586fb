package io.qvm;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

/** A {@link FakeQemuHost} of its own for every test, and nothing left behind by it afterwards. */
abstract class FakeQemuFixture {

    static final Duration LONG = Duration.ofSeconds(60);

    @TempDir
    Path tmp;

    FakeQemuHost host;

    @BeforeEach
    void fakeQemuHost() throws IOException {
        host = new FakeQemuHost(tmp);
    }

    @AfterEach
    void nothingIsLeftBehind() throws IOException {
        host.assertNothingLeftBehind(LONG);
    }
}
