package io.qvm.image;

import io.qvm.protocol.image.Arch;
import io.qvm.image.PackageLock.Entry;
import io.qvm.image.PackageLock.Role;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;

/** Resolves {@link LockSpec} against the registry (through {@link AptRepo}) into a lock. */
public final class Locker {
    private final Path cache;
    private final HostAptSources.Mirrors mirrors;
    private final Consumer<String> progress;

    public Locker(Path cache, HostAptSources.Mirrors mirrors, Consumer<String> progress) {
        this.cache = cache;
        this.mirrors = mirrors;
        this.progress = progress;
    }

    /** A fresh lock for the given architectures; others are kept from {@code previous}. */
    public PackageLock refresh(List<Arch> arches, PackageLock previous) {
        Map<Arch, List<Entry>> m = new EnumMap<>(Arch.class);
        if (previous != null) {
            m.putAll(previous.all());
        }
        for (Arch arch : arches) {
            m.put(arch, resolve(arch));
        }
        return new PackageLock(m);
    }

    List<Entry> resolve(Arch arch) {
        AptRepo bookworm = new AptRepo(cache, LockSpec.BOOKWORM, arch, mirrors);
        AptRepo trixie = new AptRepo(cache, LockSpec.TRIXIE, arch, mirrors);
        progress.accept("updating the package lists for " + arch.debian() + " (bookworm, trixie)");
        bookworm.update();
        trixie.update();
        List<Entry> out = new ArrayList<>();

        AptRepo.Record meta = bookworm.candidate(LockSpec.kernelMetapackage(arch));
        String kernel = meta.depends().stream().filter(d -> d.startsWith("linux-image-6"))
                .findFirst().orElseThrow(() -> new ImageException(meta.name() + " " + meta.version()
                        + " depends on no linux-image-6.* package: " + meta.depends()));
        out.add(entry(bookworm.candidate(kernel), Role.KERNEL));

        for (LockSpec.Root r : LockSpec.roots()) {
            AptRepo repo = r.release().equals(LockSpec.TRIXIE) ? trixie : bookworm;
            out.add(entry(repo.candidate(r.name()), r.role()));
        }

        Set<String> seen = new TreeSet<>();
        Deque<String> queue = new ArrayDeque<>(LockSpec.LIBRARIES);
        while (!queue.isEmpty()) {
            String name = queue.removeFirst();
            if (!seen.add(name) || LockSpec.NOT_FOLLOWED.contains(name)) {
                continue;
            }
            AptRepo.Record rec = bookworm.candidate(name);
            out.add(entry(rec, Role.LIBRARY));
            queue.addAll(rec.depends());
        }
        for (Entry e : out) {
            progress.accept("locked " + e.label() + " from " + e.suite());
        }
        return out;
    }

    private static Entry entry(AptRepo.Record r, Role role) {
        return new Entry(r.name(), role, r.suite(), r.version(), r.architecture(), r.filename(),
                r.size(), r.sha256());
    }
}
