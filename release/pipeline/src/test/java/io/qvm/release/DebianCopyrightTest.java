package io.qvm.release;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Licences from Debian copyright files: DEP-5's License fields, nothing from free-form text. */
@Tag("unit")
class DebianCopyrightTest {

    @TempDir
    Path tmp;

    @Test
    void aDep5FileNamesEachLicenceOnceInTheOrderItAppears() {
        String text = """
                Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
                Upstream-Name: harfbuzz
                # a comment: License: not-this

                Files: *
                Copyright: 2010-2022 Google, Inc.
                License: MIT
                 Permission is hereby granted ...
                 License: not a field, a continuation line

                Files: src/hb-ucd.cc
                Copyright: 2016 Unicode
                license: Unicode-DFS-2016 or MIT

                Files: debian/*
                Copyright: Debian
                License: MIT

                License: MIT
                 the text
                """;
        assertEquals(List.of("MIT", "Unicode-DFS-2016 or MIT"), DebianCopyright.licenses(text));
    }

    @Test
    void freeFormTextAndAnOldDep5UrlAreTold() {
        assertEquals(List.of(), DebianCopyright.licenses(
                "This is the Debian prepackaged version of the GNU C Library.\nLicense: LGPL (it says so)\n"));
        assertEquals(List.of("Zlib"), DebianCopyright.licenses(
                "Format: http://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\r\n\r\nFiles: *\r\n"
                        + "License: Zlib\r\n"));
        assertEquals(List.of(), DebianCopyright.licenses(""));
    }

    @Test
    void aDocDirectorySymlinkedToAnotherPackagesIsFollowedIntoThatPackage() throws Exception {
        Path libgcc = tmp.resolve("libgcc");
        Path base = tmp.resolve("base");
        Files.createDirectories(libgcc.resolve("usr/share/doc"));
        Files.createSymbolicLink(libgcc.resolve("usr/share/doc/libgcc-s1"), Path.of("gcc-12-base"));
        Files.createDirectories(base.resolve("usr/share/doc/gcc-12-base"));
        Files.writeString(base.resolve("usr/share/doc/gcc-12-base/copyright"),
                "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\nFiles: *\n"
                        + "License: GPL-3+ with GCC-exception\n");
        assertEquals(List.of("GPL-3+ with GCC-exception"), DebianCopyright.licenses("libgcc-s1", libgcc,
                List.of(libgcc, base)));
        assertEquals(List.of(), DebianCopyright.licenses("libgcc-s1", libgcc, List.of(libgcc)),
                "the other package is not in the image: no licence");
        assertEquals(List.of(), DebianCopyright.licenses("nodoc", base, List.of(base)));
    }
}
