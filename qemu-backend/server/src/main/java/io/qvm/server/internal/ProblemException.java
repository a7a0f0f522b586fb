package io.qvm.server.internal;

import java.util.Objects;

/** A request refused with {@link #problem()}: thrown where the refusal is found, answered by the router. */
public final class ProblemException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final transient Problem problem;

    public ProblemException(Problem problem) {
        super(problem.status() + " " + problem.code() + ": " + problem.detail(), null, false, false);
        this.problem = Objects.requireNonNull(problem, "problem");
    }

    public Problem problem() {
        return problem;
    }
}
