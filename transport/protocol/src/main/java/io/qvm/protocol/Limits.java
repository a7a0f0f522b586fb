package io.qvm.protocol;


/**
 * The limits the host gives the worker in {@link Hello}; the worker enforces every one of them
 * before it does the work, and the host enforces the byte limits on its side too.
 *
 * @param maxRequestBytes largest request body the worker accepts (its frame reader's body limit)
 * @param maxResponseBytes largest response body the worker may send (the host's frame reader limit)
 * @param maxPixels largest output image, width × height
 * @param maxSide largest output width or height
 * @param maxPages largest page count of a document the worker opens
 * @param requestTimeoutMillis the host's deadline for one request; the worker may stop earlier
 */
public record Limits(int maxRequestBytes, int maxResponseBytes, long maxPixels, int maxSide, int maxPages,
        long requestTimeoutMillis) {

    public Limits {
        positive("maxRequestBytes", maxRequestBytes);
        positive("maxResponseBytes", maxResponseBytes);
        positive("maxPixels", maxPixels);
        positive("maxSide", maxSide);
        positive("maxPages", maxPages);
        positive("requestTimeoutMillis", requestTimeoutMillis);
    }

    private static void positive(String name, long value) {
        if (value <= 0) {
            throw new IllegalArgumentException(name + " must be positive, was " + value);
        }
    }



}
