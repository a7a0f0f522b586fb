package io.qvm.protocol;

import java.util.List;
import java.util.Objects;

/** The worker's answer to {@link Hello}: the same nonce, its version and what it can do. */
public record Ready(String nonce, String version, List<String> capabilities) {

    public Ready {
        Objects.requireNonNull(nonce, "nonce");
        Objects.requireNonNull(version, "version");
        capabilities = List.copyOf(capabilities);
    }


}
