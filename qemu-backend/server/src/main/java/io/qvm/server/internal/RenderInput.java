package io.qvm.server.internal;

import io.netty.buffer.ByteBufUtil;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.codec.http.multipart.DefaultHttpDataFactory;
import io.netty.handler.codec.http.multipart.FileUpload;
import io.netty.handler.codec.http.multipart.HttpPostRequestDecoder;
import io.netty.handler.codec.http.multipart.InterfaceHttpData;
import io.qvm.protocol.RenderRequest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * {@code POST /v1/render} read into a {@link RenderRequest}, with the meaning and limits of
 * {@code qvm render}: the document is the body ({@code image/svg+xml} or {@code application/pdf})
 * or the one part {@code file} of a {@code multipart/form-data} body (its type from the part's
 * {@code Content-Type}, or from the content as {@code qvm render} sniffs it for
 * {@code application/octet-stream}); the query gives {@code width}, {@code height}, {@code dpi},
 * {@code page}, {@code background}, each at most once. Anything else is a {@link ProblemException}.
 */
public final class RenderInput {

    public static final String SVG = "image/svg+xml";
    public static final String PDF = "application/pdf";
    public static final String MULTIPART = "multipart/form-data";
    private static final String OCTETS = "application/octet-stream";
    /** What a multipart envelope may add to the document's size (boundaries, part headers). */
    public static final int MULTIPART_SLACK = 64 * 1024;
    private static final Set<String> PARAMETERS = Set.of("width", "height", "dpi", "page", "background");

    private RenderInput() {
    }

    /** The media type of a {@code Content-Type} value, lower case, without parameters; "" if none. */
    public static String mediaType(String contentType) {
        if (contentType == null) {
            return "";
        }
        int semi = contentType.indexOf(';');
        return (semi < 0 ? contentType : contentType.substring(0, semi)).strip().toLowerCase(Locale.ROOT);
    }

    /** Whether {@code /v1/render} takes a body of this media type at all (checked from the headers). */
    public static boolean accepted(String mediaType) {
        return mediaType.equals(SVG) || mediaType.equals(PDF) || mediaType.equals(MULTIPART);
    }

    /**
     * The render request {@code http} asks for.
     *
     * @param maxDocumentBytes the largest document (the pool config's {@code maxRequestBytes})
     * @throws ProblemException 400, 413 or 415, with what is wrong
     */
    public static RenderRequest parse(FullHttpRequest http, long maxDocumentBytes) {
        String type = mediaType(http.headers().get(HttpHeaderNames.CONTENT_TYPE));
        RenderRequest.Type docType;
        byte[] document;
        if (type.equals(MULTIPART)) {
            Part part = filePart(http);
            document = part.bytes();
            docType = typeOf(part.contentType(), document);
        } else if (type.equals(SVG) || type.equals(PDF)) {
            document = ByteBufUtil.getBytes(http.content());
            docType = type.equals(SVG) ? RenderRequest.Type.SVG : RenderRequest.Type.PDF;
        } else {
            throw new ProblemException(Problem.unsupportedType(type));
        }
        if (document.length > maxDocumentBytes) {
            throw new ProblemException(Problem.tooLarge(document.length, maxDocumentBytes));
        }
        if (document.length == 0) {
            throw new ProblemException(Problem.badRequest("the document is empty"));
        }
        return request(docType, document, new QueryStringDecoder(http.uri()).parameters());
    }

    /** The query's options on a document of {@code type}. */
    static RenderRequest request(RenderRequest.Type type, byte[] document, Map<String, List<String>> query) {
        for (Map.Entry<String, List<String>> e : query.entrySet()) {
            if (!PARAMETERS.contains(e.getKey())) {
                throw new ProblemException(Problem.badRequest("unknown query parameter '" + printable(e.getKey())
                        + "' (known: width, height, dpi, page, background)"));
            }
            if (e.getValue().size() != 1) {
                throw new ProblemException(Problem.badRequest("query parameter '" + e.getKey() + "' given "
                        + e.getValue().size() + " times"));
            }
        }
        int width = number(query, "width", 0);
        int height = number(query, "height", 0);
        int dpi = number(query, "dpi", 0);
        int page = number(query, "page", 1);
        int background = RenderRequest.WHITE;
        Optional<String> bg = one(query, "background");
        if (bg.isPresent()) {
            try {
                background = RenderRequest.parseBackground(bg.get());
            } catch (IllegalArgumentException e) {
                throw new ProblemException(Problem.badRequest("background: " + e.getMessage()
                        + " (write # as %23 in a URL)"));
            }
        }
        try {
            return new RenderRequest(type, document, width, height, dpi, page, background);
        } catch (IllegalArgumentException e) {
            throw new ProblemException(Problem.badRequest("invalid render options: " + e.getMessage()));
        }
    }

    private static Optional<String> one(Map<String, List<String>> query, String name) {
        List<String> v = query.get(name);
        return v == null ? Optional.empty() : Optional.of(v.get(0));
    }

    private static int number(Map<String, List<String>> query, String name, int absent) {
        Optional<String> v = one(query, name);
        if (v.isEmpty()) {
            return absent;
        }
        String s = v.get();
        if (s.isEmpty() || s.length() > 10 || !s.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw new ProblemException(Problem.badRequest(name + " must be a non-negative whole number"));
        }
        long n = Long.parseLong(s);
        if (n > Integer.MAX_VALUE) {
            throw new ProblemException(Problem.badRequest(name + " is out of range"));
        }
        return (int) n;
    }

    private record Part(byte[] bytes, String contentType) {
    }

    /** The one file part named {@code file}; any other part, or none, or a malformed body, is 400. */
    private static Part filePart(FullHttpRequest http) {
        HttpPostRequestDecoder decoder;
        try {
            decoder = new HttpPostRequestDecoder(new DefaultHttpDataFactory(false), http, StandardCharsets.UTF_8);
        } catch (HttpPostRequestDecoder.ErrorDataDecoderException e) {
            throw new ProblemException(Problem.badRequest("malformed multipart body: " + Problem.firstLine(
                    e.getMessage())));
        }
        try {
            List<InterfaceHttpData> parts = decoder.getBodyHttpDatas();
            Part found = null;
            for (InterfaceHttpData d : parts) {
                if (!(d instanceof FileUpload f) || !"file".equals(d.getName()) || found != null) {
                    throw new ProblemException(Problem.badRequest("a multipart body carries exactly one part, a file "
                            + "named 'file' (found " + (d instanceof FileUpload ? "a file" : "a field") + " named '"
                            + printable(d.getName()) + "'" + (found != null ? " after it" : "") + ")"));
                }
                found = new Part(f.get(), mediaType(f.getContentType()));
            }
            if (found == null) {
                throw new ProblemException(Problem.badRequest("the multipart body has no part named 'file'"));
            }
            return found;
        } catch (HttpPostRequestDecoder.ErrorDataDecoderException | HttpPostRequestDecoder.NotEnoughDataDecoderException e) {
            throw new ProblemException(Problem.badRequest("malformed multipart body: " + Problem.firstLine(
                    e.getMessage())));
        } catch (IOException e) {
            throw new ProblemException(Problem.badRequest("unreadable multipart part: " + Problem.firstLine(
                    e.getMessage())));
        } finally {
            decoder.destroy();
        }
    }

    private static RenderRequest.Type typeOf(String partType, byte[] document) {
        return switch (partType) {
            case SVG -> RenderRequest.Type.SVG;
            case PDF -> RenderRequest.Type.PDF;
            case OCTETS, "" -> RenderRequest.Type.sniff(document);
            default -> throw new ProblemException(Problem.unsupportedType(partType + " (the 'file' part)"));
        };
    }

    /** A client's string as it may appear in an answer: printable ASCII, at most 64 characters. */
    static String printable(String s) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length() && b.length() < 64; i++) {
            char c = s.charAt(i);
            b.append(c >= 0x20 && c < 0x7f ? c : '?');
        }
        return b.toString();
    }
}
