package io.qvm.internal.probe;

import io.qvm.protocol.image.Arch;
import io.qvm.internal.qemu.MachineProfile;
import io.qvm.internal.qemu.QemuCommand;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * What the functional probe boots, and what it waits for on the serial console.
 *
 * <p>{@link KernelGuest} boots a real Linux kernel — the image's {@code vmlinuz} — on the same
 * machine and CPU the sandbox will use. It is the reliable probe: on this project's build
 * machines (nested virtualization) KVM hangs a Linux guest right after "Probing EDD", every
 * time, while a boot sector printing to the serial port passed under KVM in 2 of 7 runs (and
 * hung in the others). {@link BootSectorGuest} needs no image and is kept for hosts where no
 * kernel is at hand; its verdict says it is the weaker probe.
 */
public sealed interface ProbeGuest permits ProbeGuest.KernelGuest, ProbeGuest.BootSectorGuest {

    /** The QEMU arguments after the binary, with {@code workDir} for any files it needs to write. */
    List<String> qemuArgs(MachineProfile profile, Arch guest, Path workDir);

    /** Console text any of which proves the guest ran far enough. */
    List<String> markers();

    /** Identity of the guest for the probe cache, e.g. {@code kernel-sha256:…}. */
    String cacheKey();

    /** One line for logs and verdicts. */
    String describe();

    /**
     * A Linux kernel booted directly ({@code -kernel}), optionally with an initramfs.
     *
     * <p>Without an initramfs the kernel runs every initcall and then panics with "VFS: Unable to
     * mount root fs" — which is the marker: the CPU ran the decompressor, switched to long mode,
     * took timer interrupts and brought up its devices. With {@code panic=-1} and
     * {@code -no-reboot} QEMU then exits by itself. With an initramfs, "Run /init as init
     * process" or "Freeing unused kernel" count too.
     *
     * @param kernel the kernel ({@code vmlinuz} / {@code Image})
     * @param initrd optional initramfs
     */
    record KernelGuest(Path kernel, Optional<Path> initrd) implements ProbeGuest {
        public KernelGuest {
            Objects.requireNonNull(kernel, "kernel");
            Objects.requireNonNull(initrd, "initrd");
        }

        @Override
        public List<String> qemuArgs(MachineProfile profile, Arch guest, Path workDir) {
            List<String> a = new ArrayList<>(List.of("-M", profile.machine(), "-accel", profile.accel(),
                    "-cpu", profile.cpu(), "-smp", "1", "-m", "256",
                    "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot", "-serial", "stdio",
                    "-kernel", kernel.toString()));
            initrd.ifPresent(i -> {
                a.add("-initrd");
                a.add(i.toString());
            });
            a.add("-append");
            a.add(QemuCommand.kernelBase(profile));
            return a;
        }

        @Override
        public List<String> markers() {
            return List.of("Run /init as init process", "Freeing unused kernel", "VFS: Unable to mount root fs");
        }

        @Override
        public String cacheKey() {
            String k = "kernel-sha256:" + sha256(kernel);
            return initrd.map(i -> k + "+initrd-sha256:" + sha256(i)).orElse(k);
        }

        @Override
        public String describe() {
            return "Linux kernel " + kernel + initrd.map(i -> " with initrd " + i).orElse("");
        }
    }

    /**
     * A program of a few dozen bytes, built here, that writes {@link #MARKER} to the first serial
     * port and stops. x86_64: a 512-byte real-mode boot sector on a floppy, started by SeaBIOS on
     * {@code -M pc}, writing to port 0x3f8. aarch64: a raw image started by {@code -kernel} on
     * {@code -M virt}, storing to the PL011 data register at 0x0900_0000, then PSCI SYSTEM_OFF.
     */
    record BootSectorGuest() implements ProbeGuest {
        /** What the program prints. */
        public static final String MARKER = "QVM-PROBE-OK";

        @Override
        public List<String> qemuArgs(MachineProfile profile, Arch guest, Path workDir) {
            try {
                if (guest == Arch.X86_64) {
                    Path img = workDir.resolve("qvm-probe-x86.img");
                    Files.write(img, x86BootSector());
                    return List.of("-M", "pc", "-accel", profile.accel(), "-cpu", profile.cpu(), "-m", "16",
                            "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot", "-serial", "stdio",
                            "-drive", "file=" + img.toString().replace(",", ",,") + ",format=raw,if=floppy,readonly=on");
                }
                Path img = workDir.resolve("qvm-probe-aarch64.bin");
                Files.write(img, aarch64Program());
                return List.of("-M", "virt", "-accel", profile.accel(), "-cpu", profile.cpu(), "-m", "64",
                        "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot", "-serial", "stdio",
                        "-kernel", img.toString());
            } catch (IOException e) {
                throw new UncheckedIOException("cannot write the probe guest into " + workDir, e);
            }
        }

        @Override
        public List<String> markers() {
            return List.of(MARKER);
        }

        @Override
        public String cacheKey() {
            return "bootsector-v1";
        }

        @Override
        public String describe() {
            return "built-in boot sector (weaker than a kernel probe: it can pass where Linux hangs)";
        }

        /**
         * The x86 boot sector, hand-assembled (16-bit real mode, loaded at 0000:7C00):
         * <pre>
         * FA          cli
         * 31 C0       xor  ax, ax
         * 8E D8       mov  ds, ax
         * FC          cld
         * BA F8 03    mov  dx, 0x3F8        ; COM1 data port
         * BE xx xx    mov  si, msg
         * loop:
         * AC          lodsb
         * 84 C0       test al, al
         * 74 03       jz   done
         * EE          out  dx, al
         * EB F8       jmp  loop
         * done:
         * F4          hlt
         * EB FD       jmp  done
         * msg: "QVM-PROBE-OK\r\n\0" … zero padding … 55 AA
         * </pre>
         */
        public static byte[] x86BootSector() {
            ByteBuffer b = ByteBuffer.allocate(512).order(ByteOrder.LITTLE_ENDIAN);
            b.put(new byte[] {(byte) 0xFA, 0x31, (byte) 0xC0, (byte) 0x8E, (byte) 0xD8, (byte) 0xFC});
            b.put(new byte[] {(byte) 0xBA, (byte) 0xF8, 0x03});
            int siImmediate = b.position() + 1;
            b.put(new byte[] {(byte) 0xBE, 0, 0});
            b.put(new byte[] {(byte) 0xAC, (byte) 0x84, (byte) 0xC0, 0x74, 0x03, (byte) 0xEE, (byte) 0xEB, (byte) 0xF8});
            b.put(new byte[] {(byte) 0xF4, (byte) 0xEB, (byte) 0xFD});
            b.putShort(siImmediate, (short) (0x7C00 + b.position()));
            b.put((MARKER + "\r\n").getBytes(StandardCharsets.US_ASCII)).put((byte) 0);
            b.put(510, (byte) 0x55).put(511, (byte) 0xAA);
            return b.array();
        }

        /**
         * The aarch64 program (A64, little-endian words):
         * <pre>
         * movz x0, #0x0900, lsl #16     ; PL011 UART0 on -M virt
         * { movz w1, #ch ; strb w1, [x0] } for each character
         * movz x0, #0x0008
         * movk x0, #0x8400, lsl #16     ; PSCI SYSTEM_OFF (0x84000008)
         * hvc  #0
         * wfi ; b .-4
         * </pre>
         */
        public static byte[] aarch64Program() {
            List<Integer> ins = new ArrayList<>();
            ins.add(0xD2800000 | (1 << 21) | (0x0900 << 5));
            for (byte ch : (MARKER + "\r\n").getBytes(StandardCharsets.US_ASCII)) {
                ins.add(0x52800000 | ((ch & 0xFF) << 5) | 1);
                ins.add(0x39000000 | 1);
            }
            ins.add(0xD2800000 | (0x0008 << 5));
            ins.add(0xF2800000 | (1 << 21) | (0x8400 << 5));
            ins.add(0xD4000002);
            ins.add(0xD503207F);
            ins.add(0x17FFFFFF);
            ByteBuffer b = ByteBuffer.allocate(ins.size() * 4).order(ByteOrder.LITTLE_ENDIAN);
            ins.forEach(b::putInt);
            return b.array();
        }
    }

    /** Hex SHA-256 of a file. */
    static String sha256(Path file) {
        try {
            return io.qvm.protocol.util.Sha256.of(file);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + " for the probe", e);
        }
    }
}
