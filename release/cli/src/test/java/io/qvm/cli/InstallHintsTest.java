package io.qvm.cli;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.admin.HostReport;
import io.qvm.protocol.image.Arch;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The image hint says what works on each host (reached through the OS seam): the build with the
 * mirror variables where there is no apt, inside WSL on Windows, and the released image's fetch.
 */
@Tag("unit")
class InstallHintsTest {

    @Test
    void everyHostIsToldWhatWorksThereAndAboutTheReleasedImage() {
        for (HostReport.Os os : HostReport.Os.values()) {
            String hint = InstallHints.imageBuild(os, Arch.AARCH64);
            assertTrue(hint.contains("./qvm image build --arch aarch64"), os + ": " + hint);
            assertTrue(hint.contains("QVM_DEBIAN_MIRROR") && hint.contains("QVM_DEBIAN_SECURITY_MIRROR"), os + ": " + hint);
            assertTrue(hint.contains("QVM_IMAGE_REPOSITORY"), os + ": " + hint);
        }
        assertTrue(InstallHints.imageBuild(HostReport.Os.WINDOWS, Arch.X86_64).contains("inside WSL"));
        assertTrue(InstallHints.imageBuild(HostReport.Os.MACOS, Arch.X86_64).contains("no apt or dpkg needed"));
        assertFalse(InstallHints.imageBuild(HostReport.Os.MACOS, Arch.X86_64).contains("apt sources"));
        assertTrue(InstallHints.imageBuild(HostReport.Os.LINUX, Arch.X86_64).contains("host's apt sources"));
    }
}
