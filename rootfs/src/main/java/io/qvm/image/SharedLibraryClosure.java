package io.qvm.image;

import io.qvm.protocol.image.Arch;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * Copies the shared-library closure of the ELF files under a directory (the linked JRE) into a
 * root filesystem, taking every library from the extracted Debian packages it is given.
 *
 * <p>Libraries land as regular files named by their soname in {@code /usr/lib/<triplet>/} (a
 * directory glibc's loader searches without an ld.so.cache); the program interpreter lands
 * there too, with a symlink at its PT_INTERP path. A DT_NEEDED that no package provides is an
 * error naming the library and who needs it.
 */
public final class SharedLibraryClosure {
    private final Arch arch;
    private final List<Path> packageRoots;

    /** One resolved library: where it came from and where it landed (rootfs-absolute). */
    public record Library(String soname, Path source, String target) {
    }

    /**
     * @param packageRoots directories each holding one extracted .deb (searched in this order)
     */
    public SharedLibraryClosure(Arch arch, List<Path> packageRoots) {
        this.arch = arch;
        this.packageRoots = List.copyOf(packageRoots);
    }

    /**
     * Walks every ELF file under {@code scanDir} (inside {@code rootfs}), and copies what they
     * need into {@code rootfs}. Returns the libraries copied, by soname.
     */
    public Map<String, Library> copyClosure(Path rootfs, Path scanDir) throws IOException {
        String libDir = "/usr/lib/" + arch.multiarch();
        Path libOut = rootfs.resolve(libDir.substring(1));
        Files.createDirectories(libOut);

        Set<String> provided = new TreeSet<>();
        List<Path> elves = new ArrayList<>();
        try (Stream<Path> s = Files.walk(scanDir)) {
            for (Path p : (Iterable<Path>) s.sorted()::iterator) {
                if (!Files.isSymbolicLink(p) && ElfFile.isElf(p)) {
                    elves.add(p);
                    provided.add(p.getFileName().toString());
                }
            }
        }
        Map<String, Library> copied = new TreeMap<>();
        Deque<Path> queue = new ArrayDeque<>(elves);
        String interpreter = null;
        while (!queue.isEmpty()) {
            Path file = queue.removeFirst();
            ElfFile elf = ElfFile.read(file);
            if (elf.machine() != arch.elfMachine()) {
                throw new ImageException(file + " is for ELF machine " + elf.machine()
                        + ", not " + arch + " (" + arch.elfMachine() + "): the jmods or a library "
                        + "package is of the wrong architecture");
            }
            Optional<String> interp = elf.interpreter();
            if (interp.isPresent() && interpreter == null) {
                interpreter = interp.get();
            }
            for (String soname : elf.needed()) {
                if (provided.contains(soname) || copied.containsKey(soname)) {
                    continue;
                }
                Path src = find(soname).orElseThrow(() -> new ImageException("no pinned package "
                        + "provides " + soname + " (needed by " + rootfs.relativize(file)
                        + "): add the Debian package that ships it to the lock "
                        + "(LockSpec) and refresh the lock"));
                Path dst = libOut.resolve(soname);
                Files.copy(src, dst);
                dst.toFile().setExecutable(true, false);
                copied.put(soname, new Library(soname, src, libDir + "/" + soname));
                queue.addLast(dst);
            }
        }
        if (interpreter != null) {
            installInterpreter(rootfs, interpreter, libDir, copied);
        }
        return copied;
    }

    private void installInterpreter(Path rootfs, String interp, String libDir,
            Map<String, Library> copied) throws IOException {
        String name = Path.of(interp).getFileName().toString();
        if (!copied.containsKey(name)) {
            Path src = find(name).orElseThrow(() -> new ImageException("no pinned package provides "
                    + "the program interpreter " + interp + ": libc6 must be in the lock"));
            Files.copy(src, rootfs.resolve(libDir.substring(1)).resolve(name));
            copied.put(name, new Library(name, src, libDir + "/" + name));
        }
        // usr-merged layout: /lib -> usr/lib, /lib64 -> usr/lib64; the interpreter's PT_INTERP
        // path then resolves to a symlink in /usr/lib[64] that points at the real file.
        String top = interp.substring(1, interp.indexOf('/', 1)); // "lib" or "lib64"
        Path topLink = rootfs.resolve(top);
        if (!Files.exists(topLink, LinkOption.NOFOLLOW_LINKS)) {
            Files.createSymbolicLink(topLink, Path.of("usr/" + top));
        }
        Path merged = rootfs.resolve("usr" + interp);
        Files.createDirectories(merged.getParent());
        if (!merged.toString().equals(rootfs.resolve(libDir.substring(1)).resolve(name).toString())) {
            Files.createSymbolicLink(merged, Path.of(libDir + "/" + name));
        }
    }

    /** Finds a library by file name in the package roots' library directories. */
    Optional<Path> find(String soname) {
        String[] dirs = {
            "lib/" + arch.multiarch(), "usr/lib/" + arch.multiarch(), "lib", "usr/lib", "lib64"
        };
        for (Path root : packageRoots) {
            for (String d : dirs) {
                Path candidate = root.resolve(d).resolve(soname);
                Optional<Path> resolved = resolveInRoot(root, candidate, 0);
                if (resolved.isPresent()) {
                    return resolved;
                }
            }
        }
        return Optional.empty();
    }

    /** Follows symlinks, interpreting absolute targets relative to the package root. */
    private static Optional<Path> resolveInRoot(Path root, Path p, int depth) {
        if (depth > 16) {
            throw new ImageException("symlink loop at " + p);
        }
        try {
            if (Files.isSymbolicLink(p)) {
                Path target = Files.readSymbolicLink(p);
                Path next = target.isAbsolute()
                        ? root.resolve(target.toString().substring(1))
                        : p.getParent().resolve(target).normalize();
                return resolveInRoot(root, next, depth + 1);
            }
            return Files.isRegularFile(p) ? Optional.of(p) : Optional.empty();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
