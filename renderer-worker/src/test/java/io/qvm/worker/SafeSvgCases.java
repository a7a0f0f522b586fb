package io.qvm.worker;

import java.util.List;

/** Cases of the hostile corpus ({@link HostileCorpus}). */
final class SafeSvgCases {

    static final List<HostileCase> CASES = List.of();

    private SafeSvgCases() {
    }
}
