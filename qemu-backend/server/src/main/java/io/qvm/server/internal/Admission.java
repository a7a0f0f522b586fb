package io.qvm.server.internal;

import java.time.Duration;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Which render requests run, and which wait: one render thread per sandbox the pool may hold,
 * a bounded queue in front of them, and a cap on the requests of one tenant rendering or queued
 * at once. A request past either bound is refused at once ({@link Problem#queueFull},
 * {@link Problem#tenantBusy}: 429 with {@code Retry-After}), never parked without bound.
 */
public final class Admission {

    private final ThreadPoolExecutor renders;
    private final int maxQueue;
    private final int tenantCap;
    private final ConcurrentMap<String, Integer> perTenant = new ConcurrentHashMap<>();
    private final AtomicInteger admitted = new AtomicInteger();
    private final AtomicInteger running = new AtomicInteger();
    private final Object idle = new Object();

    public Admission(int threads, int maxQueue, int tenantCap) {
        if (threads < 1 || maxQueue < 0 || tenantCap < 1) {
            throw new IllegalArgumentException("threads " + threads + ", maxQueue " + maxQueue + ", tenantCap "
                    + tenantCap + ": need threads >= 1, maxQueue >= 0, tenantCap >= 1");
        }
        this.maxQueue = maxQueue;
        this.tenantCap = tenantCap;
        AtomicInteger n = new AtomicInteger();
        this.renders = new ThreadPoolExecutor(threads, threads, 0, TimeUnit.MILLISECONDS,
                maxQueue == 0 ? new java.util.concurrent.SynchronousQueue<>() : new ArrayBlockingQueue<>(maxQueue),
                r -> {
                    Thread t = new Thread(r, "qvm-serve-render-" + n.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                });
        renders.prestartAllCoreThreads(); // a SynchronousQueue hands work only to a waiting thread
    }

    /**
     * Runs {@code job} for {@code tenant} when a render thread is free, or refuses it.
     *
     * @return empty when admitted; else why not
     */
    public java.util.Optional<Problem> admit(String tenant, Runnable job) {
        boolean[] over = {false};
        perTenant.compute(tenant, (k, v) -> {
            int now = v == null ? 0 : v;
            if (now >= tenantCap) {
                over[0] = true;
                return v;
            }
            return now + 1;
        });
        if (over[0]) {
            return java.util.Optional.of(Problem.tenantBusy(tenant, tenantCap));
        }
        admitted.incrementAndGet();
        try {
            renders.execute(() -> {
                running.incrementAndGet();
                try {
                    job.run();
                } finally {
                    running.decrementAndGet();
                    release(tenant);
                }
            });
        } catch (RejectedExecutionException e) {
            release(tenant);
            return java.util.Optional.of(Problem.queueFull(maxQueue));
        }
        return java.util.Optional.empty();
    }

    private void release(String tenant) {
        perTenant.computeIfPresent(tenant, (k, v) -> v <= 1 ? null : v - 1);
        if (admitted.decrementAndGet() == 0) {
            synchronized (idle) {
                idle.notifyAll();
            }
        }
    }

    /** Requests admitted and waiting for a render thread. */
    public int queued() {
        return renders.getQueue().size();
    }

    /** Requests rendering now. */
    public int running() {
        return running.get();
    }

    /** Requests admitted and not finished (queued or rendering). */
    public int admitted() {
        return admitted.get();
    }

    public int tenantCap() {
        return tenantCap;
    }

    public int maxQueue() {
        return maxQueue;
    }

    /** Waits until no admitted request is left, at most {@code timeout}; whether none is. */
    public boolean awaitIdle(Duration timeout) throws InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        synchronized (idle) {
            while (admitted.get() > 0) {
                long left = end - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(idle, left);
            }
        }
        return true;
    }

    /** Stops the render threads (interrupting any still running) and waits for them briefly. */
    public void shutdown() throws InterruptedException {
        renders.shutdownNow();
        renders.awaitTermination(10, TimeUnit.SECONDS);
    }
}
