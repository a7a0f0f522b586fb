package io.qvm.image;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * Reads the host's own apt sources ({@code /etc/apt/sources.list}, {@code sources.list.d/*.list}
 * and deb822 {@code *.sources}) to learn which mirror URIs this machine may use for the Debian
 * archive and for the security archive. qvm never writes a mirror's host name itself: the private
 * apt configurations of {@link AptRepo} reuse these URIs with the suites the image needs.
 */
public final class HostAptSources {
    /** One "deb" source: URI, suites, components, keyring. */
    public record Source(String uri, List<String> suites, List<String> components,
            Optional<String> signedBy) {
        boolean isSecurity() {
            return suites.stream().anyMatch(s -> s.endsWith("-security") || s.endsWith("/updates"));
        }
    }

    /** The two URIs the image build uses. */
    public record Mirrors(String archiveUri, String securityUri, Optional<String> signedBy) {
    }

    private HostAptSources() {
    }

    public static Mirrors mirrors() {
        return mirrors(Path.of("/etc/apt"));
    }

    /** Picks the archive and security URIs among the sources that carry component main. */
    public static Mirrors mirrors(Path etcApt) {
        List<Source> sources = read(etcApt);
        String archive = null;
        String security = null;
        Optional<String> signedBy = Optional.empty();
        for (Source s : sources) {
            if (!s.components().contains("main")) {
                continue;
            }
            if (s.isSecurity()) {
                if (security == null) {
                    security = s.uri();
                }
            } else if (archive == null) {
                archive = s.uri();
                signedBy = s.signedBy();
            }
        }
        if (archive == null) {
            throw new ImageException("no Debian archive source (a 'deb' entry with component main) "
                    + "in " + etcApt + "/sources.list or sources.list.d: the image build fetches "
                    + "pinned Debian packages through the mirror this host's apt uses; configure one "
                    + "(e.g. /etc/apt/sources.list.d/debian.sources) and retry");
        }
        if (security == null) {
            // Debian's security archive lives beside the main archive on every official mirror
            // layout ("debian" -> "debian-security").
            security = archive.replaceAll("/debian/?$", "/debian-security");
        }
        return new Mirrors(strip(archive), strip(security), signedBy);
    }

    private static String strip(String uri) {
        return uri.endsWith("/") ? uri.substring(0, uri.length() - 1) : uri;
    }

    static List<Source> read(Path etcApt) {
        List<Source> out = new ArrayList<>();
        try {
            Path list = etcApt.resolve("sources.list");
            if (Files.isRegularFile(list)) {
                out.addAll(parseOneLine(Files.readString(list)));
            }
            Path d = etcApt.resolve("sources.list.d");
            if (Files.isDirectory(d)) {
                List<Path> files = new ArrayList<>();
                try (DirectoryStream<Path> ds = Files.newDirectoryStream(d)) {
                    ds.forEach(files::add);
                }
                files.sort(null);
                for (Path f : files) {
                    String n = f.getFileName().toString();
                    if (n.endsWith(".list")) {
                        out.addAll(parseOneLine(Files.readString(f)));
                    } else if (n.endsWith(".sources")) {
                        out.addAll(parseDeb822(Files.readString(f)));
                    }
                }
            }
        } catch (IOException e) {
            throw new ImageException("cannot read the host's apt sources under " + etcApt + ": " + e, e);
        }
        return out;
    }

    static List<Source> parseOneLine(String text) {
        List<Source> out = new ArrayList<>();
        for (String raw : text.split("\n")) {
            String line = raw.replaceAll("#.*", "").trim();
            if (!line.startsWith("deb ") && !line.startsWith("deb\t")) {
                continue;
            }
            String rest = line.substring(3).trim();
            Optional<String> signed = Optional.empty();
            if (rest.startsWith("[")) {
                int end = rest.indexOf(']');
                String opts = rest.substring(1, end);
                for (String o : opts.trim().split("\\s+")) {
                    if (o.startsWith("signed-by=")) {
                        signed = Optional.of(o.substring("signed-by=".length()));
                    }
                }
                rest = rest.substring(end + 1).trim();
            }
            String[] f = rest.split("\\s+");
            if (f.length < 3) {
                continue;
            }
            out.add(new Source(f[0], List.of(f[1]), List.of(f).subList(2, f.length), signed));
        }
        return out;
    }

    static List<Source> parseDeb822(String text) {
        List<Source> out = new ArrayList<>();
        for (String stanza : text.split("\n\\s*\n")) {
            String types = null;
            String uris = null;
            String suites = null;
            String comps = null;
            String signed = null;
            String enabled = "yes";
            for (String raw : stanza.split("\n")) {
                if (raw.startsWith("#") || raw.isBlank() || Character.isWhitespace(raw.charAt(0))) {
                    continue;
                }
                int c = raw.indexOf(':');
                if (c < 0) {
                    continue;
                }
                String k = raw.substring(0, c).trim().toLowerCase(Locale.ROOT);
                String v = raw.substring(c + 1).trim();
                switch (k) {
                    case "types" -> types = v;
                    case "uris" -> uris = v;
                    case "suites" -> suites = v;
                    case "components" -> comps = v;
                    case "signed-by" -> signed = v;
                    case "enabled" -> enabled = v;
                    default -> { }
                }
            }
            if (types == null || uris == null || suites == null || comps == null
                    || !List.of(types.split("\\s+")).contains("deb") || enabled.equals("no")) {
                continue;
            }
            for (String uri : uris.split("\\s+")) {
                out.add(new Source(uri, List.of(suites.split("\\s+")), List.of(comps.split("\\s+")),
                        Optional.ofNullable(signed).filter(s -> s.startsWith("/"))));
            }
        }
        return out;
    }
}
