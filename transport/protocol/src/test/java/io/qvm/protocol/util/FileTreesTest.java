package io.qvm.protocol.util;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("unit")
class FileTreesTest {

    @TempDir
    Path tmp;

    @Test
    void deletesANestedTree() throws Exception {
        Path root = tmp.resolve("root");
        Files.createDirectories(root.resolve("a/b/c"));
        Files.writeString(root.resolve("a/file"), "x");
        Files.writeString(root.resolve("a/b/c/deep"), "y");

        FileTrees.delete(root);

        assertFalse(Files.exists(root));
        assertTrue(Files.isDirectory(tmp), "only the tree itself goes");
    }

    @Test
    void aMissingTreeOrNullIsFine() {
        assertDoesNotThrow(() -> FileTrees.delete(tmp.resolve("absent")));
        assertDoesNotThrow(() -> FileTrees.deleteQuietly(tmp.resolve("absent")));
        assertDoesNotThrow(() -> FileTrees.deleteQuietly(null));
    }

    @Test
    void deletesSymlinksWithoutFollowingThem() throws Exception {
        Path outside = Files.createDirectory(tmp.resolve("outside"));
        Path kept = Files.writeString(outside.resolve("kept"), "not ours");
        Path root = Files.createDirectory(tmp.resolve("root"));
        Files.createSymbolicLink(root.resolve("dir-link"), outside);
        Files.createSymbolicLink(root.resolve("file-link"), kept);

        FileTrees.delete(root);

        assertFalse(Files.exists(root));
        assertTrue(Files.exists(kept), "the link's target survives");
    }

    @Test
    void aSymlinkAsTheRootIsDeletedAsALink() throws Exception {
        Path target = Files.createDirectory(tmp.resolve("target"));
        Files.writeString(target.resolve("kept"), "x");
        Path link = Files.createSymbolicLink(tmp.resolve("link"), target);

        FileTrees.delete(link);

        assertFalse(Files.exists(link, java.nio.file.LinkOption.NOFOLLOW_LINKS));
        assertTrue(Files.exists(target.resolve("kept")));
    }

    @Test
    void deletesASingleFile() throws Exception {
        Path file = Files.writeString(tmp.resolve("file"), "x");

        FileTrees.deleteQuietly(file);

        assertFalse(Files.exists(file));
    }
}
