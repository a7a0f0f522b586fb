package io.qvm;

import java.time.Duration;
import java.util.Objects;

/**
 * Everything a sandbox is sized and limited by: one immutable, validated value.
 *
 * <pre>{@code
 * SandboxConfig config = SandboxConfig.builder()
 *     .vcpus(2)
 *     .memoryMib(1536)
 *     .bootTimeout(Duration.ofMinutes(3))
 *     .maxPages(200)
 *     .build();
 * SandboxConfig bigger = config.newBuilder().memoryMib(4096).build();
 * }</pre>
 *
 * <p>Every default lives in {@link Builder#Builder()}; {@link #defaults()} is
 * {@code builder().build()}. Each setter checks its value at once and throws
 * {@link InvalidConfigException} naming the field, the value and the allowed range; rules that
 * involve two fields are checked by {@link Builder#build()}.
 *
 * <h2>Fields, ranges, defaults — and where each lands</h2>
 * <table>
 * <caption>SandboxConfig fields</caption>
 * <tr><th>field</th><th>allowed</th><th>default</th><th>lands in</th></tr>
 * <tr><td>{@code vcpus}</td><td>1..64</td><td>2</td><td>QEMU {@code -smp}; {@code qvm.cpus}</td></tr>
 * <tr><td>{@code memoryMib}</td><td>576..65536</td><td>1024</td><td>QEMU {@code -m}</td></tr>
 * <tr><td>{@code bootTimeout}</td><td>1 s..30 min</td><td>180 s</td><td>host deadline from QEMU start to worker READY
 *     (TCG is slow: a cold boot to a JVM took 9.4 s on a quiet 2-core machine, and far longer under load)</td></tr>
 * <tr><td>{@code requestTimeout}</td><td>100 ms..30 min</td><td>60 s</td><td>host deadline per request; an overrun kills and replaces the sandbox</td></tr>
 * <tr><td>{@code accelerator}</td><td>{@link Accelerator}</td><td>AUTO</td><td>QEMU {@code -accel}</td></tr>
 * <tr><td>{@code transport}</td><td>{@link TransportPreference}</td><td>AUTO</td><td>virtio-serial or vsock device; {@code qvm.transport}</td></tr>
 * <tr><td>{@code maxRequestBytes}</td><td>1 KiB..256 MiB</td><td>32 MiB</td><td>frame decoder limit, host → guest</td></tr>
 * <tr><td>{@code maxResponseBytes}</td><td>1 KiB..256 MiB</td><td>64 MiB</td><td>frame decoder limit, guest → host</td></tr>
 * <tr><td>{@code maxPixels}</td><td>1..400 000 000</td><td>50 000 000</td><td>renderer: width × height of one output raster</td></tr>
 * <tr><td>{@code maxSide}</td><td>1..65535</td><td>16384</td><td>renderer: longest side of one output raster</td></tr>
 * <tr><td>{@code maxPages}</td><td>1..100 000</td><td>1000</td><td>renderer: pages of one PDF</td></tr>
 * <tr><td>{@code runscPlatform}</td><td>{@link RunscPlatform}</td><td>SYSTRAP</td><td>{@code qvm.platform}</td></tr>
 * <tr><td>{@code guestTmpMib}</td><td>1..memoryMib/2</td><td>64</td><td>size of the worker's {@code /tmp} tmpfs; {@code qvm.tmp_mib}</td></tr>
 * <tr><td>{@code idlePause}</td><td>0 (never), 100 ms..1 h</td><td>1 s</td><td>QMP {@code stop} after this long
 *     without a request, {@code cont} and the guest clock set again before the next one</td></tr>
 * </table>
 *
 * <h2>Memory budget (checked by {@code build()})</h2>
 * The guest's memory is split as: {@value #GUEST_OVERHEAD_MIB} MiB of fixed overhead (kernel and
 * page tables, the tmpfs root holding the unpacked image — JRE, libraries, fonts, runsc — the
 * runsc sentry and gofer, and the JVM's own non-heap memory: metaspace, code cache, thread
 * stacks), then the worker's {@code /tmp} tmpfs ({@code guestTmpMib}, which can fill up to its
 * size), and the rest is the worker JVM's heap: {@link #workerHeapMib()}. The heap must be at
 * least {@value #MIN_WORKER_HEAP_MIB} MiB, and it must hold one request, one response and one
 * ARGB raster of {@code maxPixels} (4 bytes per pixel) at the same time.
 */
public final class SandboxConfig {

    /** Guest memory (MiB) not available to the worker heap: kernel, tmpfs root, runsc, JVM non-heap. */
    public static final int GUEST_OVERHEAD_MIB = 384;
    /** The smallest worker heap (MiB) {@code build()} accepts. */
    public static final int MIN_WORKER_HEAP_MIB = 128;
    /** Bytes per pixel of the renderer's raster (ARGB, 8 bits per channel). */
    public static final int BYTES_PER_PIXEL = 4;

    static final int MIN_VCPUS = 1;
    static final int MAX_VCPUS = 64;
    /** The smallest guest: overhead + minimum heap + the default 64 MiB /tmp = 576 MiB. */
    static final int MIN_MEMORY_MIB = GUEST_OVERHEAD_MIB + MIN_WORKER_HEAP_MIB + 64;
    static final int MAX_MEMORY_MIB = 65536;
    static final Duration MIN_BOOT_TIMEOUT = Duration.ofSeconds(1);
    static final Duration MAX_BOOT_TIMEOUT = Duration.ofMinutes(30);
    static final Duration MIN_REQUEST_TIMEOUT = Duration.ofMillis(100);
    static final Duration MAX_REQUEST_TIMEOUT = Duration.ofMinutes(30);
    static final long KIB = 1024L;
    static final long MIB = 1024L * 1024L;
    static final long MIN_MESSAGE_BYTES = KIB;
    static final long MAX_MESSAGE_BYTES = 256 * MIB;
    static final long MIN_PIXELS = 1;
    static final long MAX_PIXELS = 400_000_000L;
    static final int MIN_SIDE = 1;
    static final int MAX_SIDE = 65535;
    static final int MIN_PAGES = 1;
    static final int MAX_PAGES = 100_000;
    static final int MIN_TMP_MIB = 1;
    static final Duration MIN_IDLE_PAUSE = Duration.ofMillis(100);
    static final Duration MAX_IDLE_PAUSE = Duration.ofHours(1);
    static final Duration MIN_FRAME_STALL = Duration.ofSeconds(1);
    static final Duration MAX_FRAME_STALL = Duration.ofMinutes(30);

    private final int vcpus;
    private final int memoryMib;
    private final Duration bootTimeout;
    private final Duration requestTimeout;
    private final Accelerator accelerator;
    private final TransportPreference transport;
    private final long maxRequestBytes;
    private final long maxResponseBytes;
    private final long maxPixels;
    private final int maxSide;
    private final int maxPages;
    private final RunscPlatform runscPlatform;
    private final int guestTmpMib;
    private final Duration idlePause;
    private final Duration frameStallTimeout;

    private SandboxConfig(Builder b) {
        this.vcpus = b.vcpus;
        this.memoryMib = b.memoryMib;
        this.bootTimeout = b.bootTimeout;
        this.requestTimeout = b.requestTimeout;
        this.accelerator = b.accelerator;
        this.transport = b.transport;
        this.maxRequestBytes = b.maxRequestBytes;
        this.maxResponseBytes = b.maxResponseBytes;
        this.maxPixels = b.maxPixels;
        this.maxSide = b.maxSide;
        this.maxPages = b.maxPages;
        this.runscPlatform = b.runscPlatform;
        this.guestTmpMib = b.guestTmpMib;
        this.idlePause = b.idlePause;
        this.frameStallTimeout = b.frameStallTimeout;
    }

    /** A builder holding every default. */
    public static Builder builder() {
        return new Builder();
    }

    /** The configuration with every default (a 2-vCPU, 1 GiB guest; see the class table). */
    public static SandboxConfig defaults() {
        return builder().build();
    }

    /** A builder starting from this configuration's values. */
    public Builder newBuilder() {
        return new Builder(this);
    }

    /** Virtual CPUs (QEMU {@code -smp}). */
    public int vcpus() {
        return vcpus;
    }

    /** Guest memory in MiB (QEMU {@code -m}). */
    public int memoryMib() {
        return memoryMib;
    }

    /** Deadline from QEMU start to the worker's READY. */
    public Duration bootTimeout() {
        return bootTimeout;
    }

    /** Deadline for one request's answer. */
    public Duration requestTimeout() {
        return requestTimeout;
    }

    /** Accelerator preference. */
    public Accelerator accelerator() {
        return accelerator;
    }

    /** Transport preference. */
    public TransportPreference transport() {
        return transport;
    }

    /** Largest request frame body, host → guest (bytes). */
    public long maxRequestBytes() {
        return maxRequestBytes;
    }

    /** Largest response frame body, guest → host (bytes). */
    public long maxResponseBytes() {
        return maxResponseBytes;
    }

    /** Largest output raster, width × height. */
    public long maxPixels() {
        return maxPixels;
    }

    /** Longest side of an output raster (pixels). */
    public int maxSide() {
        return maxSide;
    }

    /** Most pages of one document. */
    public int maxPages() {
        return maxPages;
    }

    /** runsc platform inside the guest. */
    public RunscPlatform runscPlatform() {
        return runscPlatform;
    }

    /** Size of the worker's {@code /tmp} tmpfs (MiB). */
    public int guestTmpMib() {
        return guestTmpMib;
    }

    /**
     * How long a sandbox waits without a request before its VM is paused (QMP {@code stop}): a
     * paused VM takes no CPU, where an idle one under TCG took a third of a host core. The next
     * request resumes it ({@code cont}) and has the guest init set the wall clock, which stood
     * still while the VM was paused, before the request is sent. {@link Duration#ZERO}: never
     * paused.
     */
    public Duration idlePause() {
        return idlePause;
    }

    /**
     * How long a frame from the worker may stop arriving part-way (no byte of it for this long)
     * before the sandbox is lost as a {@code PROTOCOL_VIOLATION}: a worker that sends a header and
     * then nothing would otherwise hold its caller until the request's deadline, and one sandbox's
     * connection for good between requests.
     */
    public Duration frameStallTimeout() {
        return frameStallTimeout;
    }

    /**
     * The worker JVM's {@code -Xmx} in MiB ({@code qvm.xmx_mib}):
     * {@code memoryMib − }{@value #GUEST_OVERHEAD_MIB}{@code  − guestTmpMib}; {@code build()}
     * guarantees it is at least {@value #MIN_WORKER_HEAP_MIB}.
     */
    public int workerHeapMib() {
        return heapMib(memoryMib, guestTmpMib);
    }

    /**
     * The worker JVM's {@code -XX:ActiveProcessorCount} ({@code qvm.cpus}): every vCPU. The
     * worker is the only workload in the guest; runsc's sentry shares the same vCPUs, so the JVM
     * sizing its GC and compiler threads to the vCPU count is right, not more.
     */
    public int workerCpus() {
        return vcpus;
    }

    private static int heapMib(int memoryMib, int tmpMib) {
        return memoryMib - GUEST_OVERHEAD_MIB - tmpMib;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof SandboxConfig)) {
            return false;
        }
        SandboxConfig c = (SandboxConfig) o;
        return vcpus == c.vcpus && memoryMib == c.memoryMib && bootTimeout.equals(c.bootTimeout)
                && requestTimeout.equals(c.requestTimeout) && accelerator == c.accelerator
                && transport == c.transport && maxRequestBytes == c.maxRequestBytes
                && maxResponseBytes == c.maxResponseBytes && maxPixels == c.maxPixels
                && maxSide == c.maxSide && maxPages == c.maxPages && runscPlatform == c.runscPlatform
                && guestTmpMib == c.guestTmpMib && idlePause.equals(c.idlePause)
                && frameStallTimeout.equals(c.frameStallTimeout);
    }

    @Override
    public int hashCode() {
        return Objects.hash(vcpus, memoryMib, bootTimeout, requestTimeout, accelerator, transport,
                maxRequestBytes, maxResponseBytes, maxPixels, maxSide, maxPages, runscPlatform, guestTmpMib, idlePause,
                frameStallTimeout);
    }

    @Override
    public String toString() {
        return "SandboxConfig{vcpus=" + vcpus + ", memoryMib=" + memoryMib + ", bootTimeout=" + bootTimeout
                + ", requestTimeout=" + requestTimeout + ", accelerator=" + accelerator + ", transport=" + transport
                + ", maxRequestBytes=" + maxRequestBytes + ", maxResponseBytes=" + maxResponseBytes
                + ", maxPixels=" + maxPixels + ", maxSide=" + maxSide + ", maxPages=" + maxPages
                + ", runscPlatform=" + runscPlatform + ", guestTmpMib=" + guestTmpMib + ", idlePause=" + idlePause
                + ", frameStallTimeout=" + frameStallTimeout + ", workerHeapMib=" + workerHeapMib() + "}";
    }

    /**
     * Builds a {@link SandboxConfig}. Not thread-safe. Every setter validates its argument at
     * once and throws {@link InvalidConfigException}; {@link #build()} checks the rules between
     * fields.
     */
    public static final class Builder {
        private int vcpus;
        private int memoryMib;
        private Duration bootTimeout;
        private Duration requestTimeout;
        private Accelerator accelerator;
        private TransportPreference transport;
        private long maxRequestBytes;
        private long maxResponseBytes;
        private long maxPixels;
        private int maxSide;
        private int maxPages;
        private RunscPlatform runscPlatform;
        private int guestTmpMib;
        private Duration idlePause;
        private Duration frameStallTimeout;

        /** The one home of every default. */
        public Builder() {
            vcpus = 2;
            memoryMib = 1024;
            bootTimeout = Duration.ofSeconds(180);
            requestTimeout = Duration.ofSeconds(60);
            accelerator = Accelerator.AUTO;
            transport = TransportPreference.AUTO;
            maxRequestBytes = 32 * MIB;
            maxResponseBytes = 64 * MIB;
            maxPixels = 50_000_000L;
            maxSide = 16384;
            maxPages = 1000;
            runscPlatform = RunscPlatform.SYSTRAP;
            guestTmpMib = 64;
            idlePause = Duration.ofSeconds(1);
            frameStallTimeout = io.qvm.transport.netty.FrameDecoder.DEFAULT_STALL_TIMEOUT; // one home: the decoder's
        }

        Builder(SandboxConfig c) {
            vcpus = c.vcpus;
            memoryMib = c.memoryMib;
            bootTimeout = c.bootTimeout;
            requestTimeout = c.requestTimeout;
            accelerator = c.accelerator;
            transport = c.transport;
            maxRequestBytes = c.maxRequestBytes;
            maxResponseBytes = c.maxResponseBytes;
            maxPixels = c.maxPixels;
            maxSide = c.maxSide;
            maxPages = c.maxPages;
            runscPlatform = c.runscPlatform;
            guestTmpMib = c.guestTmpMib;
            idlePause = c.idlePause;
            frameStallTimeout = c.frameStallTimeout;
        }

        /** Virtual CPUs, 1..64. */
        public Builder vcpus(int vcpus) {
            this.vcpus = (int) checkRange("vcpus", vcpus, MIN_VCPUS, MAX_VCPUS, "");
            return this;
        }

        /**
         * Guest memory in MiB, 576..65536: 576 is the {@value SandboxConfig#GUEST_OVERHEAD_MIB} MiB overhead +
         * the {@value SandboxConfig#MIN_WORKER_HEAP_MIB} MiB minimum heap + the default 64 MiB {@code /tmp}
         * (see the memory budget checked by {@link #build()}).
         */
        public Builder memoryMib(int memoryMib) {
            this.memoryMib = (int) checkRange("memoryMib", memoryMib, MIN_MEMORY_MIB, MAX_MEMORY_MIB, " MiB");
            return this;
        }

        /** Deadline from QEMU start to the worker's READY, 1 s..30 min. */
        public Builder bootTimeout(Duration bootTimeout) {
            this.bootTimeout = checkDuration("bootTimeout", bootTimeout, MIN_BOOT_TIMEOUT, MAX_BOOT_TIMEOUT);
            return this;
        }

        /** Deadline for one request, 100 ms..30 min. */
        public Builder requestTimeout(Duration requestTimeout) {
            this.requestTimeout = checkDuration("requestTimeout", requestTimeout, MIN_REQUEST_TIMEOUT,
                    MAX_REQUEST_TIMEOUT);
            return this;
        }

        /** Accelerator preference; not null. */
        public Builder accelerator(Accelerator accelerator) {
            this.accelerator = checkNotNull("accelerator", accelerator, "one of AUTO, KVM, HVF, WHPX, TCG");
            return this;
        }

        /** Transport preference; not null. */
        public Builder transport(TransportPreference transport) {
            this.transport = checkNotNull("transport", transport, "one of AUTO, SERIAL, VSOCK");
            return this;
        }

        /** Largest request body in bytes, 1 KiB..256 MiB. */
        public Builder maxRequestBytes(long maxRequestBytes) {
            this.maxRequestBytes = checkRange("maxRequestBytes", maxRequestBytes, MIN_MESSAGE_BYTES,
                    MAX_MESSAGE_BYTES, " bytes (1 KiB..256 MiB)");
            return this;
        }

        /** Largest response body in bytes, 1 KiB..256 MiB. */
        public Builder maxResponseBytes(long maxResponseBytes) {
            this.maxResponseBytes = checkRange("maxResponseBytes", maxResponseBytes, MIN_MESSAGE_BYTES,
                    MAX_MESSAGE_BYTES, " bytes (1 KiB..256 MiB)");
            return this;
        }

        /** Largest raster (width × height), 1..400 000 000. */
        public Builder maxPixels(long maxPixels) {
            this.maxPixels = checkRange("maxPixels", maxPixels, MIN_PIXELS, MAX_PIXELS, " pixels");
            return this;
        }

        /** Longest raster side in pixels, 1..65535. */
        public Builder maxSide(int maxSide) {
            this.maxSide = (int) checkRange("maxSide", maxSide, MIN_SIDE, MAX_SIDE, " pixels");
            return this;
        }

        /** Most pages per document, 1..100 000. */
        public Builder maxPages(int maxPages) {
            this.maxPages = (int) checkRange("maxPages", maxPages, MIN_PAGES, MAX_PAGES, "");
            return this;
        }

        /** runsc platform; not null. */
        public Builder runscPlatform(RunscPlatform runscPlatform) {
            this.runscPlatform = checkNotNull("runscPlatform", runscPlatform, "one of SYSTRAP, PTRACE");
            return this;
        }

        /**
         * Size of the worker's {@code /tmp} tmpfs in MiB: at least 1 and at most half the largest
         * guest (32768) here; {@link #build()} checks it against half of {@code memoryMib}.
         */
        public Builder guestTmpMib(int guestTmpMib) {
            this.guestTmpMib = (int) checkRange("guestTmpMib", guestTmpMib, MIN_TMP_MIB, MAX_MEMORY_MIB / 2,
                    " MiB (and at most memoryMib/2)");
            return this;
        }

        /**
         * How long a sandbox may sit without a request before its VM is paused:
         * {@link Duration#ZERO} (never) or 100 ms..1 h; see {@link SandboxConfig#idlePause()}.
         */
        public Builder idlePause(Duration idlePause) {
            if (idlePause != null && idlePause.isZero()) {
                this.idlePause = Duration.ZERO;
                return this;
            }
            if (idlePause == null || idlePause.compareTo(MIN_IDLE_PAUSE) < 0 || idlePause.compareTo(MAX_IDLE_PAUSE) > 0) {
                throw new InvalidConfigException("idlePause", idlePause, "0 (never) or " + human(MIN_IDLE_PAUSE)
                        + ".." + human(MAX_IDLE_PAUSE));
            }
            this.idlePause = idlePause;
            return this;
        }

        /** 1 s..30 min; see {@link SandboxConfig#frameStallTimeout()}. Default 30 s. */
        public Builder frameStallTimeout(Duration frameStallTimeout) {
            this.frameStallTimeout = checkDuration("frameStallTimeout", frameStallTimeout, MIN_FRAME_STALL,
                    MAX_FRAME_STALL);
            return this;
        }

        /**
         * Checks the rules between fields and returns the configuration.
         *
         * @throws InvalidConfigException when {@code guestTmpMib} exceeds half the memory, when
         *     the worker heap would be smaller than {@value SandboxConfig#MIN_WORKER_HEAP_MIB} MiB,
         *     or when one request, one response and one {@code maxPixels} raster do not fit in it
         */
        public SandboxConfig build() {
            if (guestTmpMib > memoryMib / 2) {
                throw new InvalidConfigException("guestTmpMib", guestTmpMib, "1.." + memoryMib / 2,
                        "guestTmpMib = " + guestTmpMib + " MiB is invalid: allowed 1.." + memoryMib / 2
                                + " MiB (at most half of memoryMib = " + memoryMib + ")");
            }
            int heap = heapMib(memoryMib, guestTmpMib);
            if (heap < MIN_WORKER_HEAP_MIB) {
                int neededMemory = MIN_WORKER_HEAP_MIB + GUEST_OVERHEAD_MIB + guestTmpMib;
                throw new InvalidConfigException("memoryMib", memoryMib, ">= " + neededMemory,
                        "memoryMib = " + memoryMib + " is invalid with guestTmpMib = " + guestTmpMib
                                + ": the worker heap would be " + heap + " MiB (memoryMib - " + GUEST_OVERHEAD_MIB
                                + " MiB guest overhead - guestTmpMib), allowed >= " + MIN_WORKER_HEAP_MIB
                                + " MiB; raise memoryMib to at least " + neededMemory + " or lower guestTmpMib");
            }
            long heapBytes = heap * MIB;
            long rasterBytes = maxPixels * BYTES_PER_PIXEL;
            long needed = rasterBytes + maxRequestBytes + maxResponseBytes;
            if (needed > heapBytes) {
                throw new InvalidConfigException("maxPixels", maxPixels, "a working set within the worker heap",
                        "maxPixels = " + maxPixels + " is invalid with the other limits: one raster ("
                                + mib(rasterBytes) + " MiB at " + BYTES_PER_PIXEL + " bytes/pixel) + maxRequestBytes ("
                                + mib(maxRequestBytes) + " MiB) + maxResponseBytes (" + mib(maxResponseBytes)
                                + " MiB) = " + mib(needed) + " MiB does not fit in the worker heap of " + heap
                                + " MiB (memoryMib " + memoryMib + " - " + GUEST_OVERHEAD_MIB + " - guestTmpMib "
                                + guestTmpMib + "); raise memoryMib or lower maxPixels / the message limits");
            }
            return new SandboxConfig(this);
        }

        private static long mib(long bytes) {
            return (bytes + MIB - 1) / MIB;
        }

        private static long checkRange(String field, long value, long min, long max, String unit) {
            if (value < min || value > max) {
                throw new InvalidConfigException(field, value, min + ".." + max + unit);
            }
            return value;
        }

        private static Duration checkDuration(String field, Duration value, Duration min, Duration max) {
            String allowed = human(min) + ".." + human(max);
            if (value == null || value.compareTo(min) < 0 || value.compareTo(max) > 0) {
                throw new InvalidConfigException(field, value, allowed);
            }
            return value;
        }

        private static <T> T checkNotNull(String field, T value, String allowed) {
            if (value == null) {
                throw new InvalidConfigException(field, null, allowed);
            }
            return value;
        }

        private static String human(Duration d) {
            if (d.toMillis() < 1000) {
                return d.toMillis() + " ms";
            }
            if (d.toSeconds() < 60 || d.toSeconds() % 60 != 0) {
                return d.toSeconds() + " s";
            }
            return d.toMinutes() + " min";
        }
    }
}
