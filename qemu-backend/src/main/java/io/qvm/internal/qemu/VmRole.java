package io.qvm.internal.qemu;

import java.nio.file.Path;
import java.util.Objects;
import java.util.Optional;

/**
 * What a VM is for, which decides how its RAM is backed and whether it boots or restores.
 *
 * <table>
 * <caption>roles</caption>
 * <tr><th>role</th><th>RAM</th><th>boot</th><th>extra devices</th></tr>
 * <tr><td>{@link Cold}</td><td>anonymous</td><td>{@code -kernel -initrd -append}</td><td>—</td></tr>
 * <tr><td>{@link Template}</td><td>{@code memory-backend-file,share=on} on the template's RAM file
 *     (or anonymous in {@code full} mode: the RAM then travels in the migration stream)</td>
 *     <td>{@code -kernel -initrd -append}</td><td>{@code vmgenid}</td></tr>
 * <tr><td>{@link Clone}</td><td>the same file {@code share=off}: copy-on-write, every clone shares
 *     the template's pages until it writes them (anonymous in {@code full} mode)</td>
 *     <td>none: {@code -S -incoming defer}; the host restores the state, then {@code cont}</td>
 *     <td>{@code vmgenid} (a fresh GUID per QEMU process: the guest kernel reseeds its CRNG)</td></tr>
 * </table>
 *
 * A clone has no {@code -kernel}/{@code -initrd}: the guest never boots again (QEMU runs with
 * {@code -no-reboot}), and QEMU would otherwise read and hold the 60 MB initramfs in every clone.
 * The template and its clones must have the same devices in the same order (migration matches
 * device state by name), which {@link QemuCommand} guarantees by building both from one input.
 */
public sealed interface VmRole permits VmRole.Cold, VmRole.Template, VmRole.Clone {

    /** The memory backend's id (also the migration stream's name for the RAM block). */
    String RAM_ID = "qvm.ram";

    /** The RAM file, when RAM is file-backed. */
    default Optional<Path> ramFile() {
        return Optional.empty();
    }

    /** A VM booted from the kernel, used as it is. */
    record Cold() implements VmRole {
    }

    /**
     * A VM booted once to be saved as a template.
     *
     * @param ram the RAM file ({@code share=on}); empty in full mode
     */
    record Template(Optional<Path> ram) implements VmRole {
        public Template {
            Objects.requireNonNull(ram, "ram");
        }

        @Override
        public Optional<Path> ramFile() {
            return ram;
        }
    }

    /**
     * A VM restored from a template.
     *
     * @param ram the template's RAM file, mapped {@code share=off}; empty in full mode
     */
    record Clone(Optional<Path> ram) implements VmRole {
        public Clone {
            Objects.requireNonNull(ram, "ram");
        }

        @Override
        public Optional<Path> ramFile() {
            return ram;
        }
    }

    static VmRole cold() {
        return new Cold();
    }
}
