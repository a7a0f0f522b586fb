package io.qvm.worker;

import io.qvm.protocol.RenderRequest;
import java.util.List;
import java.util.function.Supplier;

/**
 * Cases of the hostile corpus ({@link HostileCorpus}): documents that carry everything they need
 * inside themselves — SVG images as {@code data:} URLs (base64, percent-encoded, svgz, nested),
 * internal DTD entities (Adobe Illustrator's namespace entities, an entity that is markup, a
 * parameter entity that declares entities) — and must render as plain Batik renders them; and
 * the refusals that bound them (nesting depth, inflated size, entity expansion, the shared element
 * budget), plus the external entities that stay refused.
 */
final class SafeSvgCases {

    static final List<HostileCase> CASES = List.of(
            HostileCase.renders("svg-data-svg-image", "base64", HostileCase.svgFile("safe/data-svg-image.svg"), 60, 60),
            HostileCase.renders("svg-data-svg-image", "utf8-percent", HostileCase.svgFile("safe/data-svg-utf8.svg"),
                    60, 60),
            HostileCase.renders("svg-data-svg-image", "svgz", HostileCase.svgFile("safe/data-svgz-image.svg"), 60, 60),
            HostileCase.renders("svg-data-svg-image", "local-use", HostileCase.svgFile("safe/data-svg-local-use.svg"),
                    60, 60),
            HostileCase.renders("svg-data-svg-image", "nested-twice", HostileCase.svgFile("safe/nested-twice.svg"),
                    60, 60),
            HostileCase.renders("svg-data-svg-image", "nested-at-limit",
                    svg(() -> EmbeddedSvgs.nested(LimitChecker.MAX_SVG_IMAGE_NESTING)), 20, 20),
            HostileCase.refused("svg-data-svg-image", "nested-too-deep",
                    svg(() -> EmbeddedSvgs.nested(LimitChecker.MAX_SVG_IMAGE_NESTING + 1)), "LIMIT_EXCEEDED"),
            HostileCase.refused("svg-data-svg-image", "svgz-bomb", svg(() -> EmbeddedSvgs.svgzBomb(64 << 20)),
                    "LIMIT_EXCEEDED"),
            // The outer document and its embedded image spend one budget; refused as the image loads.
            HostileCase.refused("svg-data-svg-image", "shared-element-budget",
                    svg(() -> EmbeddedSvgs.embeddedAfterUseFanOut(1000)), "LIMIT_EXCEEDED"),
            HostileCase.renders("svg-data-svg-image", "deep-inside", svg(() -> EmbeddedSvgs.deepEmbedded(1,
                    LimitChecker.MAX_SVG_DEPTH - 2)), 20, 20),
            HostileCase.refused("svg-data-svg-image", "depth-along-the-chain", svg(() -> EmbeddedSvgs.deepEmbedded(1,
                    LimitChecker.MAX_SVG_DEPTH - 1)), "LIMIT_EXCEEDED"),
            // 20 × 1 M characters: past the tree's cap (16 MiB) whatever maxRequestBytes is.
            HostileCase.refused("svg-data-svg-image", "entities-across-the-tree",
                    svg(() -> EmbeddedSvgs.entityExpandingImages(20, 1_000_000)), "LIMIT_EXCEEDED"),
            HostileCase.renders("svg-data-svg-image", "entities-inside", svg(() -> EmbeddedSvgs.entityExpandingImages(2,
                    1_000_000)), 20, 20),
            HostileCase.refused("svg-data-svg-image", "links-out", HostileCase.svgFile("hostile/data-svg-image.svg"),
                    "UNSUPPORTED"),
            HostileCase.refused("svg-data-svg-image", "not-svg",
                    svg(() -> EmbeddedSvgs.utf8(EmbeddedSvgs.embedding("data:text/plain,hello"))), "UNSUPPORTED"),
            HostileCase.renders("svg-internal-entity", "illustrator",
                    HostileCase.svgFile("safe/illustrator-entities.svg"), 80, 40),
            HostileCase.renders("svg-internal-entity", "entity-rect", HostileCase.svgFile("safe/entity-rect.svg"),
                    40, 80),
            HostileCase.renders("svg-internal-entity", "parameter-entity",
                    HostileCase.svgFile("safe/parameter-entity.svg"), 50, 50),
            HostileCase.refused("svg-internal-entity", "billion-laughs",
                    HostileCase.svgFile("hostile/billion-laughs.svg"), "LIMIT_EXCEEDED"),
            HostileCase.refused("svg-internal-entity", "expansion-count",
                    svg(() -> EmbeddedSvgs.entityExpansions(LimitChecker.MAX_SVG_ENTITY_EXPANSIONS + 1)), "LIMIT_EXCEEDED"),
            HostileCase.refused("svg-internal-entity", "entity-size",
                    svg(() -> EmbeddedSvgs.bigEntity(LimitChecker.MAX_SVG_ENTITY_CHARS + 1)), "LIMIT_EXCEEDED"),
            HostileCase.refused("svg-internal-entity", "total-size",
                    svg(() -> EmbeddedSvgs.entityTotal(LimitChecker.MAX_SVG_ENTITY_CHARS / 2,
                            (int) (2 * LimitChecker.MAX_SVG_ENTITY_TOTAL_CHARS / LimitChecker.MAX_SVG_ENTITY_CHARS) + 1)),
                    "LIMIT_EXCEEDED"),
            HostileCase.refused("svg-internal-entity", "entity-nodes", svg(() -> EmbeddedSvgs.entityNodes(100, 5_000)),
                    "LIMIT_EXCEEDED"),
            HostileCase.refused("svg-external-entity", "xxe-file", HostileCase.svgFile("hostile/xxe-file.svg"),
                    "UNSUPPORTED"),
            HostileCase.refused("svg-external-entity", "unparsed",
                    svg(() -> EmbeddedSvgs.withEntities("<!NOTATION png SYSTEM 'image/png'>"
                            + "<!ENTITY logo SYSTEM 'logo.png' NDATA png>", "")), "UNSUPPORTED"),
            HostileCase.refused("svg-external-entity", "nested-xxe",
                    svg(() -> EmbeddedSvgs.utf8(EmbeddedSvgs.embedding(EmbeddedSvgs.dataUrl(Corpus.bytes("hostile/xxe-file.svg"))))),
                    "UNSUPPORTED"));

    private SafeSvgCases() {
    }

    /** A request for bytes made when the case runs, not when the list is built. */
    private static Supplier<RenderRequest> svg(Supplier<byte[]> bytes) {
        return () -> RenderRequest.svg(bytes.get());
    }
}
