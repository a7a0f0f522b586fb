package io.qvm.image;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("unit")
class HostAptSourcesTest {
    @Test
    void readsDeb822Sources(@TempDir Path etc) throws Exception {
        Files.createDirectories(etc.resolve("sources.list.d"));
        Files.writeString(etc.resolve("sources.list.d/debian.sources"), String.join("\n",
                "Types: deb",
                "# a comment",
                "URIs: http://mirror.example/debian/",
                "Suites: bookworm bookworm-updates",
                "Components: main",
                "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg",
                "",
                "Types: deb",
                "URIs: http://mirror.example/debian-security",
                "Suites: bookworm-security",
                "Components: main",
                "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg",
                ""));
        Files.writeString(etc.resolve("sources.list.d/other.list.disabled"), "deb http://x/ y main\n");
        HostAptSources.Mirrors m = HostAptSources.mirrors(etc);
        assertEquals("http://mirror.example/debian", m.archiveUri());
        assertEquals("http://mirror.example/debian-security", m.securityUri());
        assertEquals(Optional.of("/usr/share/keyrings/debian-archive-keyring.gpg"), m.signedBy());
    }

    @Test
    void readsOneLineSourcesAndDerivesSecurity(@TempDir Path etc) throws Exception {
        Files.writeString(etc.resolve("sources.list"),
                "# deb http://old/ x main\ndeb-src http://src/debian bookworm main\n"
                        + "deb [arch=amd64 signed-by=/k.gpg] http://m.example/debian bookworm main contrib\n");
        HostAptSources.Mirrors m = HostAptSources.mirrors(etc);
        assertEquals("http://m.example/debian", m.archiveUri());
        assertEquals("http://m.example/debian-security", m.securityUri());
        assertEquals(Optional.of("/k.gpg"), m.signedBy());
    }
}
