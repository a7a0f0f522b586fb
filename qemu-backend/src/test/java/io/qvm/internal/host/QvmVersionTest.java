package io.qvm.internal.host;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The backend's own version: the pom's, from the filtered resource; nothing a path could be abused with. */
@Tag("unit")
class QvmVersionTest {

    private static Optional<String> parse(String properties) throws IOException {
        return QvmVersion.parse(new ByteArrayInputStream(properties.getBytes(StandardCharsets.ISO_8859_1)));
    }

    @Test
    void theBuildFillsInThePomsVersion() {
        assertEquals(Optional.of(System.getProperty("qvm.project.version")), QvmVersion.current());
    }

    @Test
    void anUnfilteredOrUnsafeVersionIsNoVersion() throws IOException {
        assertEquals(Optional.of("0.1.0-SNAPSHOT"), parse("version=0.1.0-SNAPSHOT\n"));
        assertEquals(Optional.of("2.0.1+build.7"), parse("# comment\nversion = 2.0.1+build.7 \n"));
        assertEquals(Optional.empty(), parse("version=${project.version}\n"), "an unfiltered copy");
        assertEquals(Optional.empty(), parse(""));
        assertEquals(Optional.empty(), parse("version=../../../etc\n"));
        assertEquals(Optional.empty(), parse("version=1.0/evil\n"));
        assertEquals(Optional.empty(), parse("version=1..0\n"));
    }
}
