package io.qvm.internal.probe;

/** The three questions asked about an accelerator, cheapest first. */
public enum Layer {
    /** Is it compiled into this QEMU binary? ({@code qemu-system-* -accel help}) */
    COMPILED_IN("compiled-in"),
    /** Does this host offer it to this user? ({@code /dev/kvm} rw, {@code kern.hv_support}, Windows Hypervisor Platform) */
    HOST_SUPPORT("host-support"),
    /** Does a guest actually boot with it, to a marker, within a deadline? */
    FUNCTIONAL("functional");

    private final String label;

    Layer(String label) {
        this.label = label;
    }

    /** Short name used in messages and the probe cache. */
    public String label() {
        return label;
    }
}
