package io.qvm.internal.probe;

import io.qvm.protocol.image.Arch;
import io.qvm.Accelerator;

/** One probe layer: a small strategy answering one question about one accelerator. */
@FunctionalInterface
public interface AcceleratorCheck {

    /**
     * @param accelerator a concrete accelerator (never AUTO)
     * @param host        what {@link HostProbe} found
     * @param guest       the guest architecture to run
     * @return the verdict, with its reason; never throws for an unusable accelerator
     */
    LayerVerdict check(Accelerator accelerator, HostInfo host, Arch guest);
}
