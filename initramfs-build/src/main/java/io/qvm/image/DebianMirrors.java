package io.qvm.image;

import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The two base URLs the image build downloads pinned packages from: the Debian archive (suites
 * bookworm, bookworm-updates, trixie) and the security archive (bookworm-security). A lock entry's
 * {@code filename} ({@code pool/...}, apt's {@code Filename:} field, recorded by the lock) is
 * appended to one of them.
 *
 * <p>Where they come from, first match wins, for each of the two:
 * <ol>
 *   <li>{@value #ARCHIVE_ENV} and {@value #SECURITY_ENV};</li>
 *   <li>the host's apt sources ({@link HostAptSources}, {@code /etc/apt}) as on Debian;</li>
 *   <li>for the security archive only: the archive URL with its last path segment
 *       {@code debian} replaced by {@code debian-security} (the layout of every official
 *       mirror);</li>
 *   <li>otherwise a {@link MirrorConfigurationException} naming both variables. qvm names no
 *       mirror host.</li>
 * </ol>
 * Only {@code http}, {@code https} and {@code file} URLs are accepted (apt's {@code mirror+},
 * {@code tor+} or {@code cdrom:} methods are not: set the variables instead).
 *
 * @param archive  base URL of the Debian archive, no trailing slash
 * @param security base URL of the security archive, no trailing slash
 * @param origin   where they were read from, for messages
 */
public record DebianMirrors(URI archive, URI security, String origin) {
    public static final String ARCHIVE_ENV = "QVM_DEBIAN_MIRROR";
    public static final String SECURITY_ENV = "QVM_DEBIAN_SECURITY_MIRROR";

    /** The base URL a package of {@code suite} is fetched from. */
    public URI base(String suite) {
        return suite.endsWith("-security") ? security : archive;
    }

    /** Resolves the mirrors from the process environment and {@code /etc/apt}. */
    public static DebianMirrors resolve() {
        return resolve(System.getenv(), Path.of("/etc/apt"));
    }

    /**
     * @param env    the environment to read the two variables from
     * @param etcApt the host's apt configuration directory (need not exist)
     */
    public static DebianMirrors resolve(Map<String, String> env, Path etcApt) {
        Optional<String> archiveEnv = nonBlank(env.get(ARCHIVE_ENV));
        Optional<String> securityEnv = nonBlank(env.get(SECURITY_ENV));
        Optional<HostAptSources.Mirrors> host = Optional.empty();
        if (archiveEnv.isEmpty() || securityEnv.isEmpty()) {
            host = hostSources(etcApt);
        }
        String archive;
        String origin;
        if (archiveEnv.isPresent()) {
            archive = archiveEnv.get();
            origin = ARCHIVE_ENV;
        } else if (host.isPresent()) {
            archive = host.get().archiveUri();
            origin = "apt sources in " + etcApt;
        } else {
            throw missing(etcApt, securityEnv.isPresent());
        }
        String security;
        if (securityEnv.isPresent()) {
            security = securityEnv.get();
            origin += ", " + SECURITY_ENV;
        } else if (archiveEnv.isEmpty() && host.isPresent()) {
            security = host.get().securityUri();
        } else {
            String a = strip(archive);
            if (!a.endsWith("/debian")) {
                throw new MirrorConfigurationException(ARCHIVE_ENV + " is " + archive + " but "
                        + SECURITY_ENV + " is not set, and the security archive cannot be derived "
                        + "from it (it does not end in /debian): set " + SECURITY_ENV + " to the "
                        + "mirror of Debian's security archive (the one carrying bookworm-security)");
            }
            security = a + "-security";
            origin += " (security archive derived from it)";
        }
        return new DebianMirrors(url(ARCHIVE_ENV, archive), url(SECURITY_ENV, security), origin);
    }

    private static Optional<HostAptSources.Mirrors> hostSources(Path etcApt) {
        List<HostAptSources.Source> sources = HostAptSources.read(etcApt);
        if (sources.stream().noneMatch(s -> s.components().contains("main"))) {
            return Optional.empty();
        }
        return Optional.of(HostAptSources.mirrors(etcApt));
    }

    private static MirrorConfigurationException missing(Path etcApt, boolean securitySet) {
        return new MirrorConfigurationException("no Debian mirror to fetch the pinned packages from: "
                + (securitySet ? SECURITY_ENV + " is set but " + ARCHIVE_ENV + " is not"
                        : "neither " + ARCHIVE_ENV + " nor " + SECURITY_ENV + " is set")
                + ", and this host has no apt sources (" + etcApt + ") to take one from. Set "
                + ARCHIVE_ENV + " to a Debian archive mirror (the URL that holds dists/ and pool/, "
                + "e.g. https://<mirror>/debian) and " + SECURITY_ENV + " to its security "
                + "archive (https://<mirror>/debian-security); the lock's SHA-256 pins decide "
                + "what is accepted, whatever the mirror serves");
    }

    private static URI url(String variable, String s) {
        String v = strip(s.trim());
        URI u;
        try {
            u = new URI(v);
        } catch (URISyntaxException e) {
            throw new MirrorConfigurationException("mirror URL '" + s + "' (" + variable + ") is not a "
                    + "URL: " + e.getMessage());
        }
        String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT);
        if (!scheme.equals("http") && !scheme.equals("https") && !scheme.equals("file")) {
            throw new MirrorConfigurationException("mirror URL '" + s + "' (" + variable + ") has "
                    + "scheme '" + scheme + "'; the image build downloads over http, https or from "
                    + "file: URLs only. Set " + variable + " to a plain mirror URL");
        }
        return u;
    }

    private static String strip(String uri) {
        String u = uri;
        while (u.endsWith("/")) {
            u = u.substring(0, u.length() - 1);
        }
        return u;
    }

    private static Optional<String> nonBlank(String s) {
        return s == null || s.isBlank() ? Optional.empty() : Optional.of(s.trim());
    }
}
