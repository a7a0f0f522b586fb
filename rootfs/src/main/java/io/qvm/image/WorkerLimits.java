package io.qvm.image;

/**
 * The limits the guest applies to the worker process. The first three come from the kernel
 * command line at boot ({@code qvm.xmx_mib}, {@code qvm.cpus}, {@code qvm.tmp_mib}, see
 * docs/CONTRACTS.md); the rlimits are fixed in the image.
 *
 * @param xmxMib  the worker JVM's {@code -Xmx}, MiB
 * @param cpus    the worker JVM's {@code -XX:ActiveProcessorCount}
 * @param tmpMib  size of the worker's {@code /tmp} tmpfs, MiB
 * @param nofile  RLIMIT_NOFILE (soft = hard)
 * @param nproc   RLIMIT_NPROC (soft = hard)
 */
public record WorkerLimits(int xmxMib, int cpus, int tmpMib, int nofile, int nproc) {

    /** Defaults of docs/CONTRACTS.md: 256 MiB heap, 1 CPU, 64 MiB /tmp. */
    public static final WorkerLimits DEFAULTS = new WorkerLimits(256, 1, 64, 1024, 256);

    public WorkerLimits {
        check("xmxMib", xmxMib, 16, 1 << 20);
        check("cpus", cpus, 1, 1024);
        check("tmpMib", tmpMib, 1, 1 << 20);
        check("nofile", nofile, 64, 1 << 20);
        check("nproc", nproc, 16, 1 << 20);
    }

    private static void check(String name, int value, int min, int max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(
                    name + " must be in [" + min + ", " + max + "], got " + value);
        }
    }

    public WorkerLimits withXmxMib(int v) {
        return new WorkerLimits(v, cpus, tmpMib, nofile, nproc);
    }

    public WorkerLimits withCpus(int v) {
        return new WorkerLimits(xmxMib, v, tmpMib, nofile, nproc);
    }

    public WorkerLimits withTmpMib(int v) {
        return new WorkerLimits(xmxMib, cpus, v, nofile, nproc);
    }
}
