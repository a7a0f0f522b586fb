package io.qvm.worker;

import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.batik.util.ParsedURL;
import org.apache.batik.util.ParsedURLData;
import org.apache.batik.util.ParsedURLDefaultProtocolHandler;

/**
 * Second line behind {@link LockedDownUserAgent}: replaces Batik's {@link ParsedURL} handlers for
 * every scheme the JRE can open ({@code http}, {@code https}, {@code ftp}, {@code file},
 * {@code jar}, {@code jrt}, {@code mailto}, {@code netdoc}) and for the synthetic document base
 * with handlers whose streams never open. Only {@code data:} keeps Batik's own handler. A scheme
 * the JRE does not know cannot be opened by {@link URL} in the first place.
 *
 * <p>One exception: Batik reads its own built-in resources (the user-agent style sheet) through
 * {@link ParsedURL}, as {@code jar:} (the shaded jar) or {@code file:} (a classes directory) URLs.
 * A URL that names a resource under {@code org/apache/batik/} inside the code source Batik's own
 * classes were loaded from opens; nothing else does. Documents never get that far: the
 * {@link LockedDownUserAgent} refuses every non-{@code data:} URL a document names.
 *
 * <p>The handler table is global to the JVM; {@link #install()} is idempotent.
 */
public final class UrlLockdown {

    /** The base URI the worker gives every document: a scheme nothing can resolve. */
    public static final String DOCUMENT_BASE = "qvm-sandbox:/document";

    /** The scheme of {@link #DOCUMENT_BASE}. */
    static final String DOCUMENT_SCHEME = "qvm-sandbox";

    static final List<String> BLOCKED_SCHEMES =
            List.of("http", "https", "ftp", "file", "jar", "jrt", "mailto", "netdoc", "qvm-sandbox");

    private static volatile boolean installed;
    private static volatile List<String> ownResourcePrefixes = List.of();

    private UrlLockdown() {
    }

    /** Installs the blocking handlers (once per JVM). */
    public static synchronized void install() {
        if (installed) {
            return;
        }
        ownResourcePrefixes = batikResourcePrefixes();
        for (String scheme : BLOCKED_SCHEMES) {
            ParsedURL.registerHandler(DOCUMENT_SCHEME.equals(scheme) ? new DocumentBaseHandler() : new BlockedHandler(scheme));
        }
        installed = true;
    }

    /** {@code jar:<jar>!/org/apache/batik/} or {@code <dir>/org/apache/batik/} for Batik's code sources. */
    private static List<String> batikResourcePrefixes() {
        List<String> prefixes = new ArrayList<>();
        for (Class<?> anchor : List.of(ParsedURL.class, org.apache.batik.anim.dom.SVGDOMImplementation.class,
                org.apache.batik.css.engine.CSSEngine.class, org.apache.batik.bridge.BridgeContext.class)) {
            CodeSource cs = anchor.getProtectionDomain().getCodeSource();
            if (cs == null || cs.getLocation() == null) {
                continue;
            }
            String loc = cs.getLocation().toString();
            prefixes.add(loc.endsWith("/") ? loc + "org/apache/batik/" : "jar:" + loc + "!/org/apache/batik/");
        }
        return List.copyOf(prefixes);
    }

    /** Whether {@code url} names one of Batik's own resources. */
    static boolean isOwnResource(String url) {
        if (url == null || url.contains("..") || url.contains("%")) {
            return false;
        }
        for (String p : ownResourcePrefixes) {
            if (url.startsWith(p)) {
                return true;
            }
        }
        return false;
    }

    /** Parses URLs of one scheme like Batik does, but hands out data whose streams never open. */
    private static class BlockedHandler extends ParsedURLDefaultProtocolHandler {
        BlockedHandler(String scheme) {
            super(scheme);
        }

        @Override
        protected ParsedURLData constructParsedURLData() {
            return new BlockedData();
        }

        @Override
        protected ParsedURLData constructParsedURLData(URL url) {
            return new BlockedData(url);
        }
    }

    /**
     * The handler of the synthetic document base. Batik's default handler first tries
     * {@code new java.net.URL(...)}, which for a scheme the JRE does not know looks for a handler
     * class by name and fails with a {@code ClassNotFoundException} and a
     * {@code MalformedURLException} every time, each filling in a stack trace as long as the
     * stack. Batik resolves every reference a document makes ({@code url(#a)}, {@code href="#a"})
     * against the document base, so a document whose references recurse paid that at every level,
     * quadratic in the depth: 1–2 s to reach a stack overflow on a desktop JVM, past the request
     * deadline under emulation. This handler splits {@code qvm-sandbox:[//host]path[#ref]} itself,
     * without the JRE and without exceptions, and its data never opens.
     */
    private static final class DocumentBaseHandler extends BlockedHandler {
        DocumentBaseHandler() {
            super(DOCUMENT_SCHEME);
        }

        @Override
        public ParsedURLData parseURL(String urlStr) {
            ParsedURLData d = constructParsedURLData();
            if (urlStr == null) {
                return d;
            }
            int hash = urlStr.indexOf('#');
            String rest = hash < 0 ? urlStr : urlStr.substring(0, hash);
            d.ref = hash >= 0 && hash + 1 < urlStr.length() ? urlStr.substring(hash + 1) : null;
            int colon = rest.indexOf(':');
            if (colon > 0) {
                d.protocol = rest.substring(0, colon).toLowerCase(java.util.Locale.ROOT);
                rest = rest.substring(colon + 1);
            }
            d.port = -1;
            if (rest.startsWith("//")) {
                int slash = rest.indexOf('/', 2);
                String host = slash < 0 ? rest.substring(2) : rest.substring(2, slash);
                d.host = host.isEmpty() ? null : host;
                rest = slash < 0 ? "" : rest.substring(slash);
            }
            d.path = rest.isEmpty() ? null : rest;
            return d;
        }
    }

    /** URL data that refuses to open a stream. */
    private static final class BlockedData extends ParsedURLData {
        /** The URL as the JRE parsed it, when it could; null otherwise (then nothing opens). */
        private final String external;

        BlockedData() {
            this.external = null;
        }

        BlockedData(URL url) {
            super(url);
            this.external = url.toExternalForm();
        }

        @Override
        protected InputStream openStreamInternal(String userAgent, Iterator mimeTypes, Iterator encodingTypes)
                throws IOException {
            if (isOwnResource(external)) {
                return super.openStreamInternal(userAgent, mimeTypes, encodingTypes);
            }
            throw new IOException("the worker opens no URLs");
        }

    }
}
