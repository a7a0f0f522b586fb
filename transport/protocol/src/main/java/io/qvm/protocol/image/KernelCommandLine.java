package io.qvm.protocol.image;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The {@code qvm.*} keys of the kernel command line: what the host puts there ({@code QemuCommand})
 * and what the guest init reads (its {@code /init} is generated from these names, see
 * {@code io.qvm.image.InitScript}). docs/CONTRACTS.md lists them with their meaning.
 */
public final class KernelCommandLine {

    /** The prefix of every key the init reads. */
    public static final String PREFIX = "qvm.";
    /** The virtio-serial port of the worker's stdio. */
    public static final String WORKER_PORT = "qvm.worker";
    /** The virtio-serial port of the init's control channel ({@link ControlProtocol}). */
    public static final String CONTROL_PORT = "qvm.control";
    /** The virtio-serial port of the init's events ({@link InitEvents}), which only the init writes. */
    public static final String EVENTS_PORT = "qvm.events";
    /** The guest vsock port the worker listens on by default ({@link Key#VSOCK_PORT}). */
    public static final int DEFAULT_VSOCK_PORT = 5000;
    /** {@link Key#TRANSPORT}: the worker's stdio over the virtio-serial port {@link #WORKER_PORT}. */
    public static final String TRANSPORT_SERIAL = "serial";
    /** {@link Key#TRANSPORT}: the worker's stdio over vsock. */
    public static final String TRANSPORT_VSOCK = "vsock";
    /** {@link Key#ROOTFS}: copy the initramfs into a tmpfs instead of bind-mounting it. */
    public static final String ROOTFS_COPY = "copy";
    /** {@link Key#DEBUG}: runsc logs and straces to the console. */
    public static final String DEBUG_ON = "1";
    /**
     * The port the init writes the worker's class archive to when the host asks it to make one
     * ({@link Key#CLASS_ARCHIVE} = {@link #CLASS_ARCHIVE_MAKE}; adr/0018).
     */
    public static final String ARCHIVE_PORT = "qvm.archive";
    /** {@link Key#CLASS_ARCHIVE}: make the class archive before starting runsc, and send it to the host. */
    public static final String CLASS_ARCHIVE_MAKE = "make";
    /** {@link Key#CLASS_ARCHIVE}: use the class archive if the initramfs holds one (the default). */
    public static final String CLASS_ARCHIVE_USE = "use";

    /** {@link Key#JIT}: the worker JVM compiles with C1 and then C2, HotSpot's default. */
    public static final String JIT_TIERED = "tiered";
    /**
     * {@link Key#JIT}: the worker JVM compiles with C1 only ({@code -XX:TieredStopAtLevel=1}), for
     * guests under TCG, where C2's compiles and the profiling code before them cost more, in every
     * fresh clone, than C2's code gives back (adr/0019).
     */
    public static final String JIT_C1 = "c1";

    /** One key, with the value the init assumes when the command line lacks it. */
    public enum Key {
        TRANSPORT("transport", TRANSPORT_SERIAL),
        PORT("port", WORKER_PORT),
        CONTROL_PORT("control_port", KernelCommandLine.CONTROL_PORT),
        EVENTS_PORT("events_port", KernelCommandLine.EVENTS_PORT),
        VSOCK_PORT("vsock_port", Integer.toString(DEFAULT_VSOCK_PORT)),
        XMX_MIB("xmx_mib", "256"),
        CPUS("cpus", "1"),
        TMP_MIB("tmp_mib", "64"),
        PLATFORM("platform", "systrap"),
        /** The worker JVM's compilers: {@link #JIT_TIERED} or {@link #JIT_C1}. */
        JIT("jit", JIT_TIERED),
        STDIO("stdio", "pipe"),
        ROOTFS("rootfs", "bind"),
        DEBUG("debug", "0"),
        CLASS_ARCHIVE("class_archive", CLASS_ARCHIVE_USE),
        /** How long the init may spend making the class archive, in seconds; past it, the boot goes on without. */
        CLASS_ARCHIVE_SECONDS("class_archive_seconds", "120");

        private final String key;
        private final String initDefault;

        Key(String name, String initDefault) {
            this.key = PREFIX + name;
            this.initDefault = initDefault;
        }

        /** The key as written on the command line, e.g. {@code qvm.xmx_mib}. */
        public String key() {
            return key;
        }

        /** The value the init uses when the key is absent. */
        public String initDefault() {
            return initDefault;
        }

        /** {@code key=value}, one word of the command line. */
        public String word(Object value) {
            return key + "=" + value;
        }
    }

    private KernelCommandLine() {
    }

    /**
     * The {@code qvm.*} words of a command line as the init reads them: split on blanks, a later
     * word overriding an earlier one. Words without {@code =} or outside {@code qvm.} are skipped.
     */
    public static Map<String, String> parse(String commandLine) {
        Map<String, String> out = new LinkedHashMap<>();
        for (String word : commandLine.trim().split("\\s+")) {
            int eq = word.indexOf('=');
            if (word.startsWith(PREFIX) && eq > 0) {
                out.put(word.substring(0, eq), word.substring(eq + 1));
            }
        }
        return out;
    }
}
