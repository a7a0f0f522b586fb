package io.qvm.worker;

import java.util.ArrayList;
import java.util.List;

/**
 * Every case of the hostile corpus, by source: documents that must render although they look
 * unusual ({@link SafeSvgCases}), SVGs and PDFs that ask for work or memory in proportion to
 * something they declare ({@link SvgBombCases}, {@link PdfBombCases}).
 */
final class HostileCorpus {

    private HostileCorpus() {
    }

    static List<HostileCase> all() {
        List<HostileCase> all = new ArrayList<>();
        all.addAll(SafeSvgCases.CASES);
        all.addAll(SvgBombCases.CASES);
        all.addAll(PdfBombCases.CASES);
        return List.copyOf(all);
    }
}
