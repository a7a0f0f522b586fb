package io.qvm.worker;

/** The worker's version as READY reports it: the jar manifest's {@code Implementation-Version}. */
public final class WorkerVersion {

    /** Reported when the classes do not come from the shaded jar (tests, an IDE). */
    public static final String UNKNOWN = "dev";

    private WorkerVersion() {
    }

    /** {@code Implementation-Version} of the jar holding this class, or {@value #UNKNOWN}. */
    public static String current() {
        String v = WorkerVersion.class.getPackage().getImplementationVersion();
        return v == null || v.isBlank() ? UNKNOWN : v;
    }
}
