package io.qvm.worker;

import java.awt.geom.Dimension2D;
import org.apache.batik.bridge.EmbededExternalResourceSecurity;
import org.apache.batik.bridge.ExternalResourceSecurity;
import org.apache.batik.bridge.NoLoadScriptSecurity;
import org.apache.batik.bridge.ScriptSecurity;
import org.apache.batik.bridge.UserAgentAdapter;
import org.apache.batik.gvt.event.EventDispatcher;
import org.apache.batik.util.ParsedURL;
import org.w3c.dom.Element;
import org.w3c.dom.svg.SVGAElement;

/**
 * Batik's view of the outside world for one render, with every door shut:
 * <ul>
 *   <li>scripts of every type are refused ({@link NoLoadScriptSecurity}), and the render is
 *       static anyway (no interpreter, no {@code onload}, no animation);</li>
 *   <li>external resources of every scheme are refused; {@code data:} URIs, which carry their
 *       content inline, are the only ones allowed ({@link EmbededExternalResourceSecurity}), and
 *       the embedded raster images of the whole tree (the document and the SVG images it embeds,
 *       which share this user agent) must together declare no more pixels than the
 *       {@link SvgBudget} holds ({@link EmbeddedImageProbe});</li>
 *   <li>no validating parser, no user style sheet, no links, no alerts or prompts;</li>
 *   <li>the viewport is the document's own size, so percentages resolve against it.</li>
 * </ul>
 * The refusal is a {@link SecurityException} that Batik turns into a {@code BridgeException} with
 * code {@code uri.unsecure} (the worker answers UNSUPPORTED), or, for fonts, into a fallback.
 */
final class LockedDownUserAgent extends UserAgentAdapter {

    private final Dimension2D viewport;
    private final SvgBudget budget;
    private boolean imageTooLarge;

    /**
     * @param viewport the document's own size, CSS px
     * @param budget the render's budget, whose pixels embedded raster images spend
     */
    LockedDownUserAgent(Dimension2D viewport, SvgBudget budget) {
        this.viewport = viewport;
        this.budget = budget;
    }

    /** Whether an embedded image was refused for its size (Batik does not keep the cause). */
    boolean refusedOversizeImage() {
        return imageTooLarge;
    }

    @Override
    public Dimension2D getViewportSize() {
        return viewport;
    }

    @Override
    public EventDispatcher getEventDispatcher() {
        return null;
    }

    @Override
    public ScriptSecurity getScriptSecurity(String scriptType, ParsedURL scriptURL, ParsedURL docURL) {
        return new NoLoadScriptSecurity(scriptType);
    }

    @Override
    public void checkLoadScript(String scriptType, ParsedURL scriptURL, ParsedURL docURL) {
        throw new SecurityException("scripts are not allowed");
    }

    @Override
    public ExternalResourceSecurity getExternalResourceSecurity(ParsedURL resourceURL, ParsedURL docURL) {
        return new EmbededExternalResourceSecurity(resourceURL);
    }

    @Override
    public void checkLoadExternalResource(ParsedURL resourceURL, ParsedURL docURL) {
        if (resourceURL == null || !"data".equals(resourceURL.getProtocol())) {
            throw new SecurityException("external resources are not allowed");
        }
        long pixels = EmbeddedImageProbe.declaredPixels(resourceURL);
        if (pixels > 0 && !budget.chargeImage(resourceURL.toString(), pixels)) {
            imageTooLarge = true;
            throw new EmbeddedImageProbe.ImageTooLarge();
        }
    }

    @Override
    public boolean isXMLParserValidating() {
        return false;
    }

    @Override
    public String getUserStyleSheetURI() {
        return null;
    }

    @Override
    public void openLink(SVGAElement elt) {
    }

    @Override
    public void loadDocument(String url) {
    }

    @Override
    public void showAlert(String message) {
    }

    @Override
    public String showPrompt(String message) {
        return null;
    }

    @Override
    public String showPrompt(String message, String defaultValue) {
        return null;
    }

    @Override
    public boolean showConfirm(String message) {
        return false;
    }

    @Override
    public void displayMessage(String message) {
    }

    @Override
    public void displayError(String message) {
    }

    @Override
    public void displayError(Exception e) {
    }

    @Override
    public void handleElement(Element elt, Object data) {
    }
}
