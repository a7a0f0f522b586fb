package io.qvm.image;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * Picks the kernel modules the guest needs out of the extracted kernel package and orders them
 * so each loads after its dependencies. Dependencies are read from each module's own
 * {@code .modinfo} section ({@code depends=}), so no depmod run and no modules.dep are needed:
 * the init loads the list with busybox {@code insmod}, in order.
 *
 * <p>In Debian's cloud kernels (6.1) these are modules (=m), not built in: virtio and
 * virtio_ring, the PCI transport (virtio_pci with its modern/legacy helpers), the MMIO
 * transport (microvm, aarch64 virt), virtio_console (virtio-serial ports), vsock with its virtio
 * transport, and pvpanic for PCI and MMIO (so a guest panic reaches QEMU as GUEST_PANICKED).
 */
public final class KernelModules {
    public static final List<String> WANTED = List.of(
            "virtio", "virtio_ring", "virtio_pci_modern_dev", "virtio_pci_legacy_dev", "virtio_pci",
            "virtio_mmio", "virtio_console", "vsock", "vmw_vsock_virtio_transport_common",
            "vmw_vsock_virtio_transport");

    /** Taken when the kernel has them (the arm64 cloud kernel has no pvpanic at all). */
    public static final List<String> OPTIONAL = List.of("pvpanic_pci", "pvpanic_mmio");

    /** One module: its name and its path relative to {@code lib/modules/<version>/}. */
    public record Module(String name, String path) {
    }

    private KernelModules() {
    }

    /** The kernel version: the single directory under {@code lib/modules}. */
    public static String version(Path kernelRoot) throws IOException {
        Path modules = kernelRoot.resolve("lib/modules");
        try (Stream<Path> s = Files.list(modules)) {
            List<Path> dirs = s.filter(Files::isDirectory).toList();
            if (dirs.size() != 1) {
                throw new ImageException("expected one kernel version under " + modules + ", found "
                        + dirs);
            }
            return dirs.get(0).getFileName().toString();
        }
    }

    /**
     * The wanted modules and their dependencies, dependencies first; optional ones only if the
     * kernel provides them.
     */
    public static List<Module> resolve(Path kernelRoot, String version, List<String> wanted,
            List<String> optional) throws IOException {
        Path base = kernelRoot.resolve("lib/modules").resolve(version);
        Map<String, Path> index = new TreeMap<>();
        try (Stream<Path> s = Files.walk(base.resolve("kernel"))) {
            s.filter(p -> p.getFileName().toString().endsWith(".ko")
                    && Files.isRegularFile(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)).forEach(p ->
                    index.put(norm(p.getFileName().toString().replaceAll("\\.ko$", "")), p));
        }
        Set<String> builtin = new HashSet<>();
        Path builtinFile = base.resolve("modules.builtin");
        if (Files.isRegularFile(builtinFile)) {
            for (String line : Files.readAllLines(builtinFile)) {
                String n = line.substring(line.lastIndexOf('/') + 1).replaceAll("\\.ko$", "");
                builtin.add(norm(n));
            }
        }
        LinkedHashSet<String> order = new LinkedHashSet<>();
        for (String w : wanted) {
            visit(norm(w), index, builtin, order, new HashSet<>(), base);
        }
        for (String w : optional) {
            if (index.containsKey(norm(w))) {
                visit(norm(w), index, builtin, order, new HashSet<>(), base);
            }
        }
        List<Module> out = new ArrayList<>();
        for (String n : order) {
            out.add(new Module(n, base.relativize(index.get(n)).toString()));
        }
        return out;
    }

    private static void visit(String name, Map<String, Path> index, Set<String> builtin,
            LinkedHashSet<String> order, Set<String> path, Path base) throws IOException {
        if (order.contains(name)) {
            return;
        }
        Path ko = index.get(name);
        if (ko == null) {
            if (builtin.contains(name)) {
                return; // built into the kernel: nothing to load
            }
            throw new ImageException("kernel module " + name + " is neither a module nor built in "
                    + "under " + base + ": the kernel package in the lock does not provide it");
        }
        if (!path.add(name)) {
            throw new ImageException("dependency cycle through kernel module " + name);
        }
        for (String info : ElfFile.read(ko).modinfo()) {
            if (info.startsWith("depends=")) {
                for (String dep : info.substring("depends=".length()).split(",")) {
                    if (!dep.isBlank()) {
                        visit(norm(dep.trim()), index, builtin, order, path, base);
                    }
                }
            }
        }
        path.remove(name);
        order.add(name);
    }

    private static String norm(String n) {
        return n.replace('-', '_');
    }
}
