package io.qvm.probe;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A worker that makes the JIT patch code other threads are running, as fast as it can: each round
 * defines a fresh hidden copy of {@link JitStressHot} and has two threads call its method until both
 * compilers have compiled it, so every round makes a C1 method not entrant (HotSpot patches its
 * entry with a jump) while the other thread may be executing it. It tests whether the worker
 * JVM's intermittent native crash in the guest (a SIGSEGV at a freshly patched compiled-method
 * entry) comes from how the emulator shows one vCPU code that another vCPU just rewrote.
 *
 * <p>Protocol on its stdio: writes {@code qvm-jitstress: ready}; reads {@code stress <seconds>};
 * writes {@code qvm-jitstress: rounds=<n> sum=<s>} and exits. A crash ends the JVM with HotSpot's
 * report on stderr instead.
 */
public final class JitStress {

    private JitStress() {
    }

    public static void main(String[] args) throws Throwable {
        OutputStream out = System.out;
        out.write("qvm-jitstress: ready\n".getBytes(StandardCharsets.US_ASCII));
        out.flush();
        String line = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII)).readLine();
        long seconds = line != null && line.startsWith("stress ") ? Long.parseLong(line.substring(7).strip()) : 30;
        byte[] hot;
        try (InputStream in = JitStress.class.getResourceAsStream("JitStressHot.class")) {
            hot = in.readAllBytes();
        }
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        AtomicLong sum = new AtomicLong();
        long rounds = 0;
        MethodHandles.Lookup lookup = MethodHandles.lookup();
        while (System.nanoTime() < end) {
            Class<?> c = lookup.defineHiddenClass(hot, true).lookupClass();
            MethodHandle work = lookup.findStatic(c, "work", MethodType.methodType(int.class, int.class));
            CyclicBarrier start = new CyclicBarrier(2);
            Runnable caller = () -> {
                try {
                    start.await();
                    int acc = 0;
                    for (int i = 0; i < 60_000; i++) {
                        acc += (int) work.invokeExact(i);
                    }
                    sum.addAndGet(acc);
                } catch (Throwable t) {
                    throw new IllegalStateException(t);
                }
            };
            Thread a = new Thread(caller);
            Thread b = new Thread(caller);
            a.start();
            b.start();
            a.join();
            b.join();
            rounds++;
        }
        out.write(("qvm-jitstress: rounds=" + rounds + " sum=" + sum.get() + "\n").getBytes(StandardCharsets.US_ASCII));
        out.flush();
    }
}
