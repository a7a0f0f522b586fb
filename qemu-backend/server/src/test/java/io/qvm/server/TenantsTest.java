package io.qvm.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("unit")
class TenantsTest {

    @Test
    void aTokenNamesItsTenantByItsHashAndNothingElseDoes(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("tenants.txt");
        // sha256("test") as sha256sum prints it
        Files.writeString(file, "# who may render\n\nbilling:9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08\n"
                + "  uploads:" + Tenants.sha256Hex("s3cret-token") + "  \n");
        Tenants t = Tenants.load(file);
        assertTrue(t.required());
        assertEquals(List.of("billing", "uploads"), t.names());
        assertEquals(Optional.of("billing"), t.authenticate("test"));
        assertEquals(Optional.of("uploads"), t.authenticate("s3cret-token"));
        assertEquals(Optional.empty(), t.authenticate("s3cret-token "));
        assertEquals(Optional.empty(), t.authenticate("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"));
        assertEquals(Optional.empty(), t.authenticate(""));
        assertEquals(Optional.empty(), t.authenticate(null));
        assertEquals(Optional.empty(), t.authenticate("x".repeat(Tenants.MAX_TOKEN_CHARS + 1)));
        assertEquals(Optional.empty(), t.authenticate("tok en"));
        assertEquals(Optional.empty(), t.authenticate("tok\u00e9n"));
        assertFalse(t.toString().contains("9f86"), "no hash in toString");
    }

    @Test
    void aMalformedOrAmbiguousFileIsRefusedWithItsLine() {
        String h1 = Tenants.sha256Hex("one");
        String h2 = Tenants.sha256Hex("two");
        for (List<String> lines : List.of(
                List.of("alpha " + h1),
                List.of("alpha:" + h1.substring(1)),
                List.of("alpha:" + h1 + "0"),
                List.of("al pha:" + h1),
                List.of(":" + h1),
                List.of("a".repeat(65) + ":" + h1),
                List.of("alpha:" + h1.replace(h1.charAt(0), 'g')))) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Tenants.parse(lines, "f"));
            assertTrue(e.getMessage().startsWith("f:1: "), e.getMessage());
        }
        IllegalArgumentException twice = assertThrows(IllegalArgumentException.class,
                () -> Tenants.parse(List.of("alpha:" + h1, "alpha:" + h2), "f"));
        assertTrue(twice.getMessage().contains("f:2") && twice.getMessage().contains("line 1"), twice.getMessage());
        IllegalArgumentException shared = assertThrows(IllegalArgumentException.class,
                () -> Tenants.parse(List.of("alpha:" + h1, "beta:" + h1.toUpperCase()), "f"));
        assertTrue(shared.getMessage().contains("one tenant"), shared.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Tenants.parse(List.of("# none", ""), "f"));
    }

    @Test
    void withoutTenantsNoTokenIsAsked() {
        assertFalse(Tenants.none().required());
        assertEquals(Optional.empty(), Tenants.none().authenticate("anything"));
    }
}
