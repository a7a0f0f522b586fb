package io.qvm.protocol;

import java.util.Random;

/** Shares the fuzz tests' garbage generator with tests in other packages. */
public final class FrameFuzzAccess {
    private FrameFuzzAccess() {
    }

    public static byte[] garbage(Random rnd, int length) {
        return FrameFuzzTest.randomGarbage(rnd, length);
    }
}
