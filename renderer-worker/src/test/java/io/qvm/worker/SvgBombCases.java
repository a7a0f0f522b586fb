package io.qvm.worker;

import java.util.List;

/**
 * SVGs that ask Batik or Java 2D for memory in proportion to a number they declare, and their
 * cheap neighbours that must still render ({@link HostileCorpus}). Files under
 * {@code src/test/resources/corpus/bombs/}; the bounds are in {@link SvgCost} and
 * {@link MemoryGuard}.
 */
final class SvgBombCases {

    static final List<HostileCase> CASES = List.of(
            // BasicStroke.createStrokedShape: one sub-path per dash.
            refused("svg-dash-count", "dash-tiny"),
            refused("svg-dash-count", "dash-inherited"),
            refused("svg-dash-count", "dash-long-path"),
            renders("svg-dash-count", "dash-ok"),
            // Content painted from a node without being its child.
            refused("svg-dash-count", "dash-in-marker"),
            refused("svg-dash-count", "dash-in-pattern"),
            // Dashes on text are not estimated: the memory guard answers.
            refused("svg-dash-count", "dash-text"),
            // Batik pads the source raster by the radius in device pixels.
            refused("svg-filter-morphology", "morph-huge"),
            refused("svg-filter-morphology", "morph-5000"),
            refused("svg-filter-morphology", "morph-in-mask"),
            // A radius of 50 under scale(100) is 5000 device pixels.
            refused("svg-filter-morphology", "morph-scaled"),
            renders("svg-filter-morphology", "morph-ok"),
            // Tile offsets as long as the displacement.
            refused("svg-filter-displacement", "displace-huge"),
            // Batik fails on it (an index out of bounds), typed.
            refused("svg-filter-displacement", "displace-2000", "PARSE_ERROR"),
            // Held by Batik itself: the deviation is capped at 10 device pixels.
            renders("svg-filter-blur", "blur-huge"),
            // Regions are clipped to the output.
            renders("svg-filter-region", "filter-region-huge"),
            renders("svg-filter-region", "filterres-huge"),
            renders("svg-filter-offset", "offset-huge"),
            // Batik refuses a raster of 0 or too many pixels itself (IllegalArgumentException).
            refused("svg-filter-tile", "tile-huge", "PARSE_ERROR"),
            renders("svg-filter-turbulence", "turbulence-octaves"),
            renders("svg-filter-lighting", "light-kul"),
            refused("svg-pattern-tile", "pattern-tiny", "PARSE_ERROR"),
            renders("svg-pattern-tile", "pattern-huge"),
            renders("svg-pattern-tile", "pattern-scaled"),
            renders("svg-mask-region", "mask-huge"),
            renders("svg-clip-region", "clip-huge"),
            renders("svg-marker-size", "marker-many"),
            renders("svg-gradient-stops", "gradient-stops"),
            renders("svg-text-size", "text-huge"),
            renders("svg-image-scale", "image-huge-scale"),
            renders("svg-stroke-width", "stroke-huge-width"));

    private SvgBombCases() {
    }

    private static HostileCase refused(String attackClass, String file) {
        return refused(attackClass, file, "LIMIT_EXCEEDED");
    }

    private static HostileCase refused(String attackClass, String file, String code) {
        return HostileCase.refused(attackClass, file, HostileCase.svgFile("bombs/" + file + ".svg"), code);
    }

    private static HostileCase renders(String attackClass, String file) {
        return HostileCase.renders(attackClass, file, HostileCase.svgFile("bombs/" + file + ".svg"), 200, 200);
    }
}
