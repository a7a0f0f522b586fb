package io.qvm.image;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/** A tree described for comparison: per path its type, mode, mtime, content hash, link target, hard-link group. */
final class TreeDescription {
    private TreeDescription() {
    }

    static Map<String, String> of(Path root) throws IOException {
        Map<String, String> out = new TreeMap<>();
        Map<Object, List<String>> inodes = new TreeMap<>((a, b) -> a.toString().compareTo(b.toString()));
        List<Path> all;
        try (Stream<Path> s = Files.walk(root)) {
            all = s.toList();
        }
        for (Path p : all) {
            String rel = root.relativize(p).toString();
            Map<String, Object> a = Files.readAttributes(p, "unix:mode,ino,nlink,size,lastModifiedTime",
                    LinkOption.NOFOLLOW_LINKS);
            int mode = (Integer) a.get("mode");
            String d;
            if (Files.isSymbolicLink(p)) {
                d = "link -> " + Files.readSymbolicLink(p);
            } else if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                // not its mtime: dpkg-deb's tar leaves some directories at extraction time
                d = String.format("dir %04o", mode & 07777);
            } else {
                d = String.format("file %04o %d %s %s", mode & 07777, (Long) a.get("size"),
                        ((FileTime) a.get("lastModifiedTime")).toInstant(), Sha256.of(p));
                if ((Integer) a.get("nlink") > 1) {
                    inodes.computeIfAbsent(a.get("ino"), k -> new ArrayList<>()).add(rel);
                }
            }
            out.put(rel, d);
        }
        for (List<String> group : inodes.values()) {
            List<String> sorted = group.stream().sorted().toList();
            for (String rel : sorted) {
                out.put(rel, out.get(rel) + " hardlinked " + sorted);
            }
        }
        return out;
    }
}
