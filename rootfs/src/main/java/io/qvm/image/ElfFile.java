package io.qvm.image;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The few facts the image build needs from an ELF file, read without binutils so one host can
 * inspect binaries of every target architecture: {@code e_machine}, the program interpreter
 * ({@code PT_INTERP}), the {@code DT_NEEDED} entries and, for kernel modules, the
 * {@code .modinfo} section.
 *
 * <pre>
 *  ELF64 little-endian only (x86_64 and aarch64):
 *  0x00 7f 'E' 'L' 'F' | class=2 | data=1 | ...
 *  0x12 e_machine (u16)      0x20 e_phoff (u64)   0x28 e_shoff (u64)
 *  0x36 e_phentsize (u16)    0x38 e_phnum (u16)   0x3a e_shentsize  0x3c e_shnum  0x3e e_shstrndx
 * </pre>
 * Every offset and length read from the file is checked against the file's size before use.
 */
public final class ElfFile {
    private static final int PT_LOAD = 1;
    private static final int PT_DYNAMIC = 2;
    private static final int PT_INTERP = 3;
    private static final long DT_NULL = 0;
    private static final long DT_NEEDED = 1;
    private static final long DT_STRTAB = 5;

    private final Path path;
    private final ByteBuffer buf;

    private ElfFile(Path path, byte[] bytes) {
        this.path = path;
        this.buf = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** True if the file starts with the ELF magic. */
    public static boolean isElf(Path file) throws IOException {
        if (!Files.isRegularFile(file) || Files.size(file) < 64) {
            return false;
        }
        try (var in = Files.newInputStream(file)) {
            byte[] m = in.readNBytes(4);
            return m.length == 4 && m[0] == 0x7f && m[1] == 'E' && m[2] == 'L' && m[3] == 'F';
        }
    }

    /** Reads and checks the header of an ELF64 little-endian file. */
    public static ElfFile read(Path file) throws IOException {
        byte[] bytes = Files.readAllBytes(file);
        ElfFile elf = new ElfFile(file, bytes);
        if (bytes.length < 64 || bytes[0] != 0x7f || bytes[1] != 'E' || bytes[2] != 'L'
                || bytes[3] != 'F') {
            throw elf.bad("not an ELF file");
        }
        if (bytes[4] != 2 || bytes[5] != 1) {
            throw elf.bad("not ELF64 little-endian (class " + bytes[4] + ", data " + bytes[5] + ")");
        }
        return elf;
    }

    public Path path() {
        return path;
    }

    public int machine() {
        return Short.toUnsignedInt(buf.getShort(0x12));
    }

    /** PT_INTERP, e.g. {@code /lib64/ld-linux-x86-64.so.2}, if the file has one. */
    public Optional<String> interpreter() {
        for (long[] ph : programHeaders()) {
            if (ph[0] == PT_INTERP) {
                return Optional.of(cString(checkedOffset(ph[1], ph[2])));
            }
        }
        return Optional.empty();
    }

    /** DT_NEEDED entries in file order. */
    public List<String> needed() {
        List<long[]> phs = programHeaders();
        long[] dyn = null;
        for (long[] ph : phs) {
            if (ph[0] == PT_DYNAMIC) {
                dyn = ph;
            }
        }
        List<String> out = new ArrayList<>();
        if (dyn == null) {
            return out;
        }
        long strtabAddr = -1;
        List<Long> neededOffsets = new ArrayList<>();
        int start = checkedOffset(dyn[1], dyn[2]);
        for (long i = 0; i + 16 <= dyn[2]; i += 16) {
            long tag = buf.getLong(start + (int) i);
            long val = buf.getLong(start + (int) i + 8);
            if (tag == DT_NULL) {
                break;
            } else if (tag == DT_NEEDED) {
                neededOffsets.add(val);
            } else if (tag == DT_STRTAB) {
                strtabAddr = val;
            }
        }
        if (neededOffsets.isEmpty()) {
            return out;
        }
        if (strtabAddr < 0) {
            throw bad("DT_NEEDED without DT_STRTAB");
        }
        long strtabOff = addressToOffset(phs, strtabAddr);
        for (long o : neededOffsets) {
            out.add(cString(checkedOffset(strtabOff + o, 1)));
        }
        return out;
    }

    /** The NUL-separated {@code key=value} strings of the {@code .modinfo} section (kernel modules). */
    public List<String> modinfo() {
        long shoff = buf.getLong(0x28);
        int shentsize = Short.toUnsignedInt(buf.getShort(0x3a));
        int shnum = Short.toUnsignedInt(buf.getShort(0x3c));
        int shstrndx = Short.toUnsignedInt(buf.getShort(0x3e));
        if (shnum == 0 || shstrndx >= shnum) {
            return List.of();
        }
        checkedOffset(shoff, (long) shentsize * shnum);
        int strHdr = (int) shoff + shstrndx * shentsize;
        long strOff = buf.getLong(strHdr + 0x18);
        for (int i = 0; i < shnum; i++) {
            int h = (int) shoff + i * shentsize;
            int nameOff = buf.getInt(h);
            String name = cString(checkedOffset(strOff + Integer.toUnsignedLong(nameOff), 1));
            if (name.equals(".modinfo")) {
                long off = buf.getLong(h + 0x18);
                long size = buf.getLong(h + 0x20);
                int s = checkedOffset(off, size);
                List<String> out = new ArrayList<>();
                int from = s;
                for (int p = s; p < s + size; p++) {
                    if (buf.get(p) == 0) {
                        if (p > from) {
                            out.add(new String(buf.array(), from, p - from, StandardCharsets.UTF_8));
                        }
                        from = p + 1;
                    }
                }
                return out;
            }
        }
        return List.of();
    }

    /** Each program header as {type, offset, filesz, vaddr}. */
    private List<long[]> programHeaders() {
        long phoff = buf.getLong(0x20);
        int phentsize = Short.toUnsignedInt(buf.getShort(0x36));
        int phnum = Short.toUnsignedInt(buf.getShort(0x38));
        List<long[]> out = new ArrayList<>();
        if (phnum == 0) {
            return out;
        }
        if (phentsize < 56) {
            throw bad("e_phentsize " + phentsize + " < 56");
        }
        checkedOffset(phoff, (long) phentsize * phnum);
        for (int i = 0; i < phnum; i++) {
            int h = (int) phoff + i * phentsize;
            long type = Integer.toUnsignedLong(buf.getInt(h));
            long offset = buf.getLong(h + 0x08);
            long vaddr = buf.getLong(h + 0x10);
            long filesz = buf.getLong(h + 0x20);
            out.add(new long[] {type, offset, filesz, vaddr});
        }
        return out;
    }

    private long addressToOffset(List<long[]> phs, long addr) {
        for (long[] ph : phs) {
            if (ph[0] == PT_LOAD && addr >= ph[3] && addr < ph[3] + ph[2]) {
                return ph[1] + (addr - ph[3]);
            }
        }
        throw bad("address 0x" + Long.toHexString(addr) + " is in no PT_LOAD segment");
    }

    private int checkedOffset(long offset, long length) {
        if (offset < 0 || length < 0 || offset + length > buf.capacity()) {
            throw bad("offset " + offset + " + length " + length + " is past the end ("
                    + buf.capacity() + " bytes)");
        }
        return (int) offset;
    }

    private String cString(int at) {
        int end = at;
        while (end < buf.capacity() && buf.get(end) != 0) {
            end++;
        }
        if (end == buf.capacity()) {
            throw bad("unterminated string at " + at);
        }
        return new String(buf.array(), at, end - at, StandardCharsets.UTF_8);
    }

    private ImageException bad(String what) {
        return new ImageException("malformed ELF file " + path + ": " + what);
    }
}
