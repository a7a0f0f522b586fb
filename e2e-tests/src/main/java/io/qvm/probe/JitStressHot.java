package io.qvm.probe;

/** The method each {@link JitStress} round compiles afresh: small, with a loop, so both compilers take it. */
public final class JitStressHot {
    private JitStressHot() {
    }

    public static int work(int x) {
        int r = x;
        for (int i = 0; i < 8; i++) {
            r = r * 31 + (i ^ x);
        }
        return r;
    }
}
