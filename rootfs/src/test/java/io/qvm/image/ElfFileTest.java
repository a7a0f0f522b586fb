package io.qvm.image;

import io.qvm.protocol.image.Arch;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("unit")
class ElfFileTest {
    @Test
    void readsTheRunningJvmsLauncher() throws Exception {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        ElfFile elf = ElfFile.read(java);
        assertEquals(Arch.host().elfMachine(), elf.machine());
        assertTrue(elf.interpreter().orElseThrow().contains("ld-linux"), elf.interpreter().toString());
        assertTrue(elf.needed().contains("libc.so.6"), elf.needed().toString());
    }

    @Test
    void refusesTruncatedFiles(@TempDir Path dir) throws Exception {
        Path launcher = Path.of(System.getProperty("java.home"), "bin", "java");
        byte[] head = Files.readAllBytes(launcher);
        Path cut = dir.resolve("cut");
        Files.write(cut, java.util.Arrays.copyOf(head, 200));
        ImageException e = assertThrows(ImageException.class, () -> ElfFile.read(cut).needed());
        assertTrue(e.getMessage().contains("malformed ELF"), e.getMessage());
    }

    @Test
    void fontConfigNamesEveryFile() {
        String p = FontConfig.properties();
        FontConfig.files().forEach((name, file) -> {
            assertTrue(p.contains("filename." + name.replace(' ', '_') + "=" + FontConfig.DEJAVU_DIR
                    + "/" + file), name);
        });
    }
}
