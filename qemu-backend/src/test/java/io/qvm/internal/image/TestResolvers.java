package io.qvm.internal.image;

import java.util.Optional;

/** For tests outside this package: a resolver with given pins instead of its jar's ({@link ImageResolver.Builder}'s package-private seam). */
public final class TestResolvers {

    private TestResolvers() {
    }

    /** {@code b} checking fetched images against {@code pins}. */
    public static ImageResolver.Builder pinned(ImageResolver.Builder b, PinnedImages pins) {
        return b.pins(Optional.of(pins));
    }
}
