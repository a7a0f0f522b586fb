package io.qvm.release;

import io.qvm.internal.host.QvmEnvironment;
import io.qvm.internal.image.LocalMavenRepository;
import io.qvm.protocol.image.Arch;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import org.eclipse.aether.AbstractRepositoryListener;
import org.eclipse.aether.RepositoryEvent;
import org.eclipse.aether.RepositorySystem;
import org.eclipse.aether.RepositorySystemSession;
import org.eclipse.aether.artifact.Artifact;
import org.eclipse.aether.artifact.DefaultArtifact;
import org.eclipse.aether.deployment.DeployRequest;
import org.eclipse.aether.deployment.DeploymentException;
import org.eclipse.aether.repository.RemoteRepository;
import org.eclipse.aether.spi.connector.transport.http.HttpTransporterException;
import org.eclipse.aether.supplier.RepositorySystemSupplier;
import org.eclipse.aether.util.repository.AuthenticationBuilder;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

/**
 * Deploys a release's artifacts (the image's, and the libraries' of {@link LibraryArtifacts},
 * adr/0013) to a remote Maven repository exactly as {@code mvn deploy}
 * does, through Maven Resolver (already the release's installer, {@link MavenInstaller}; its HTTP
 * transport comes with it, so no dependency is added): the same artifacts the local install
 * holds — the POM, per architecture the zip and the manifest — in the standard layout,
 * <pre>
 * &lt;url&gt;/io/qvm/qvm-image/&lt;v&gt;/qvm-image-&lt;v&gt;.pom            (+ .sha512 .sha256 .sha1 .md5, + .asc)
 * &lt;url&gt;/io/qvm/qvm-image/&lt;v&gt;/qvm-image-&lt;v&gt;-x86_64.zip     (+ checksums, + .asc)   … -x86_64.json
 * &lt;url&gt;/io/qvm/qvm-image/maven-metadata.xml               (+ checksums)
 * </pre>
 * each file with its SHA-512, SHA-256, SHA-1 and MD5 files; with a {@link ReleaseSigner} each
 * artifact also gets its detached armoured OpenPGP signature ({@code .asc}, not itself
 * checksummed, as Maven Central has it). The artifact-level {@code maven-metadata.xml} is
 * fetched, merged with this version and uploaded again, so earlier versions stay listed.
 *
 * <p>Order and failure: Resolver uploads every artifact first and the metadata last, and uploads
 * no metadata once an artifact failed; that is as all-or-nothing as HTTP PUT allows (a
 * repository has no transaction: artifacts that went up before a failure stay there, unlisted).
 * A failure is a {@link ReleaseException} naming the URL, the HTTP status and what to do.
 *
 * <p>Credentials the Maven way: the {@code <server>} of {@code settings.xml} (the user's
 * {@code ~/.m2/settings.xml}, or the file given) whose {@code <id>} is the repository id, its
 * {@code <username>} and {@code <password>} ({@code ${env.NAME}} expanded), sent as HTTP Basic
 * over the PUTs. Maven's encrypted passwords ({@code {…}}, settings-security.xml) are refused
 * with the fix ({@code ${env.NAME}}). Plain {@code http} is refused for a host that is not
 * loopback unless the caller allows it explicitly: Basic credentials and the artifacts would
 * cross the network in clear. The password is never logged or put into a message.
 */
public final class MavenDeployer {

    /** The checksum files written beside every deployed file, strongest first. */
    public static final List<String> CHECKSUMS = List.of("SHA-512", "SHA-256", "SHA-1", "MD5");

    private MavenDeployer() {
    }

    /**
     * Where to deploy, and as whom.
     *
     * @param url the repository's base URL
     * @param repositoryId the id its {@code <server>} credentials are found by
     * @param username the user, if a {@code <server>} had one
     * @param credentialsFrom where the credentials came from, or why there are none (for the evidence)
     */
    public record Target(URI url, String repositoryId, Optional<String> username, String credentialsFrom,
            char[] password) {
        public Target {
            Objects.requireNonNull(url, "url");
            Objects.requireNonNull(repositoryId, "repositoryId");
            Objects.requireNonNull(username, "username");
            Objects.requireNonNull(credentialsFrom, "credentialsFrom");
            password = password == null ? null : password.clone();
        }

        /** Never shows the password. */
        @Override
        public String toString() {
            return repositoryId + " " + url + " (" + username.map(u -> "user " + u).orElse("anonymous") + ", "
                    + credentialsFrom + ")";
        }

        @Override
        public boolean equals(Object o) {
            return o == this;
        }

        @Override
        public int hashCode() {
            return System.identityHashCode(this);
        }
    }

    /**
     * A deploy target, checked before anything is built: an {@code http(s)} URL without user info,
     * plain {@code http} only to a loopback host unless {@code allowInsecureHttp}, and the
     * credentials of the {@code <server>} whose id is {@code repositoryId}.
     *
     * @param settings the settings file ({@code -s}); null: {@code ~/.m2/settings.xml} if it exists
     * @throws IllegalArgumentException a URL or id that cannot be used, plain http to another
     *     host, or a settings file that is missing (when named), unreadable, or has an encrypted
     *     or incomplete {@code <server>} for the id
     */
    public static Target target(String url, String repositoryId, Path settings, boolean allowInsecureHttp,
            java.util.Map<String, String> env) {
        return target(url, repositoryId, settings, allowInsecureHttp, QvmEnvironment.of(env));
    }

    /** {@link #target(String, String, Path, boolean, java.util.Map)} with the library's view of the environment. */
    static Target target(String url, String repositoryId, Path settings, boolean allowInsecureHttp,
            QvmEnvironment env) {
        URI uri;
        try {
            uri = new URI(Objects.requireNonNull(url, "url").strip());
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("--deploy-url is not a URL: " + e.getMessage(), e);
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        if (!(scheme.equals("https") || scheme.equals("http")) || uri.getHost() == null) {
            throw new IllegalArgumentException("--deploy-url must be an http(s) URL with a host (the repository's "
                    + "base, e.g. https://repo.example/releases), got '" + url + "'");
        }
        if (uri.getRawUserInfo() != null || uri.getRawQuery() != null || uri.getRawFragment() != null) {
            throw new IllegalArgumentException("--deploy-url takes no user info, query or fragment (credentials come "
                    + "from the <server> of settings.xml whose id is --deploy-repository-id)");
        }
        if (scheme.equals("http") && !loopback(uri.getHost()) && !allowInsecureHttp) {
            throw new IllegalArgumentException("--deploy-url " + uri + " is plain http to " + uri.getHost() + ", not "
                    + "loopback: the credentials (HTTP Basic) and the images would cross the network unencrypted and "
                    + "unauthenticated. Use https, or add --allow-insecure-http if this network is trusted");
        }
        if (repositoryId == null || !repositoryId.matches("[A-Za-z0-9][A-Za-z0-9._-]{0,99}")) {
            throw new IllegalArgumentException("--deploy-repository-id names the <server> of settings.xml holding "
                    + "the credentials: letters, digits, '.', '_', '-'; got '" + repositoryId + "'");
        }
        Path file = settings != null ? settings.toAbsolutePath().normalize()
                : env.home().resolve(".m2").resolve("settings.xml");
        if (!Files.isRegularFile(file)) {
            if (settings != null) {
                throw new IllegalArgumentException("the settings file " + file + " does not exist");
            }
            return new Target(uri, repositoryId, Optional.empty(), "no " + file + ": deploying without credentials",
                    null);
        }
        Element root;
        try {
            root = LocalMavenRepository.readSettings(file);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read the settings file " + file + ": " + e.getMessage(), e);
        }
        for (Element server : children(children(root, "servers").stream().findFirst().orElse(null), "server")) {
            if (!repositoryId.equals(text(server, "id"))) {
                continue;
            }
            String user = text(server, "username");
            String password = text(server, "password");
            if (user == null || password == null) {
                throw new IllegalArgumentException("the <server> " + repositoryId + " of " + file + " lacks a "
                        + (user == null ? "<username>" : "<password>") + ": give both (HTTP Basic)");
            }
            if (password.startsWith("{") && password.endsWith("}")) {
                throw new IllegalArgumentException("the <server> " + repositoryId + " of " + file + " has an encrypted "
                        + "password (settings-security.xml), which qvm does not decrypt: write <password>${env.NAME}"
                        + "</password> and export NAME, or give another settings file with -s");
            }
            char[] secret = LocalMavenRepository.expand(password, env).toCharArray();
            return new Target(uri, repositoryId, Optional.of(LocalMavenRepository.expand(user, env)),
                    "the <server> " + repositoryId + " of " + file, secret);
        }
        return new Target(uri, repositoryId, Optional.empty(), "no <server> " + repositoryId + " in " + file
                + ": deploying without credentials", null);
    }

    /**
     * What a deploy uploaded.
     *
     * @param url the repository
     * @param files the repository paths uploaded, artifacts then metadata (checksum files not listed)
     */
    public record Deployed(URI url, List<String> files) {
        public Deployed {
            files = List.copyOf(files);
        }
    }

    /**
     * Deploys the POM, per architecture the zip and the manifest, and (with a signer) their
     * {@code .asc} signatures, then the merged {@code maven-metadata.xml}.
     *
     * @param work a private scratch directory (Resolver's local repository for the deploy, the signatures)
     * @throws ReleaseException any upload failed (the message names the URL, the status and the fix)
     */
    public static Deployed deploy(Target target, String version, Path pom, Map<Arch, Path> zips,
            Map<Arch, Path> manifests, ReleaseSigner signer, Path work) {
        return deploy(target, MavenInstaller.imageArtifacts(version, pom, zips, manifests), signer, work);
    }

    /**
     * Deploys {@code artifacts} (the image's, the libraries' of {@link LibraryArtifacts}) and, with a
     * signer, each one's {@code .asc} signature, then each artifact's merged {@code maven-metadata.xml}.
     *
     * @param work a private scratch directory (Resolver's local repository for the deploy, the signatures)
     * @throws ReleaseException any upload failed (the message names the URL, the status and the fix)
     */
    public static Deployed deploy(Target target, List<Artifact> artifacts, ReleaseSigner signer, Path work) {
        DeployRequest request = new DeployRequest();
        MavenInstaller.signed(artifacts, signer, work.resolve("signatures")).forEach(request::addArtifact);
        String what = MavenInstaller.coordinates(artifacts);
        RemoteRepository.Builder repo = new RemoteRepository.Builder(target.repositoryId(), "default",
                target.url().toString());
        if (target.username().isPresent()) {
            repo.setAuthentication(new AuthenticationBuilder().addUsername(target.username().get())
                    .addPassword(target.password()).build());
        }
        request.setRepository(repo.build());
        List<String> uploaded = Collections.synchronizedList(new ArrayList<>());
        AbstractRepositoryListener listener = new AbstractRepositoryListener() {
            @Override
            public void artifactDeployed(RepositoryEvent event) {
                if (event.getException() == null) {
                    uploaded.add(path(event.getArtifact()));
                }
            }

            @Override
            public void metadataDeployed(RepositoryEvent event) {
                if (event.getException() == null) {
                    uploaded.add(event.getMetadata().getGroupId().replace('.', '/') + "/"
                            + event.getMetadata().getArtifactId() + "/" + event.getMetadata().getType());
                }
            }
        };
        RepositorySystem system = new RepositorySystemSupplier().get();
        try (RepositorySystemSession.CloseableSession session = system.createSessionBuilder()
                .withLocalRepositoryBaseDirectories(work.resolve("local"))
                .setSystemProperties(System.getProperties())
                .setConfigProperty("aether.checksums.algorithms", String.join(",", CHECKSUMS))
                .setRepositoryListener(listener).build()) {
            system.deploy(session, request);
            return new Deployed(target.url(), uploaded);
        } catch (DeploymentException e) {
            throw failed(target, what, e, uploaded);
        } finally {
            system.shutdown();
        }
    }

    /** The typed failure: the URL, the status (or the connection problem) and what to do. */
    static ReleaseException failed(Target target, String what, DeploymentException e, List<String> uploaded) {
        Integer status = null;
        Throwable connection = null;
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        for (Throwable t = e; t != null && seen.add(t); t = t.getCause()) {
            if (t instanceof HttpTransporterException h) {
                status = h.getStatusCode();
            } else if (t instanceof ConnectException || t instanceof UnknownHostException
                    || t instanceof java.net.SocketException || t instanceof java.net.http.HttpTimeoutException
                    || t instanceof java.net.SocketTimeoutException) {
                connection = t;
            }
        }
        String answer;
        if (status == null) {
            answer = connection != null ? "could not connect (" + connection + "): check the URL and that the repository "
                    + "is reachable from this host"
                    : "failed: check the URL and the repository's log";
        } else if (status == 401) {
            answer = "answered HTTP 401 (unauthorized) as " + target.username().orElse("an anonymous user") + ": give the "
                    + "deploy user's <username> and <password> in the <server> whose <id> is " + target.repositoryId()
                    + " (credentials: " + target.credentialsFrom() + ")";
        } else if (status == 403) {
            answer = "answered HTTP 403 (forbidden) to " + target.username().orElse("an anonymous user") + ": that user "
                    + "may not deploy there, or the repository refuses to overwrite a released version (release another "
                    + "--version)";
        } else if (status >= 500) {
            answer = "answered HTTP " + status + " (a server error): the repository is failing; try the deploy again "
                    + "later";
        } else {
            answer = "answered HTTP " + status + ": check that the URL is the repository's base (the deploy writes "
                    + "io/qvm/<artifact>/<version>/ under it)";
        }
        String partial = uploaded.isEmpty() ? "nothing was uploaded"
                : "uploaded before the failure (without metadata, so no version list names them): " + uploaded
                        + "; remove them from the repository, or deploy another --version";
        return new ReleaseException("the deploy of " + what
                + " to " + target.url() + " (repository " + target.repositoryId() + ") " + answer + "; " + partial
                + ". Resolver said: " + e.getMessage(), e);
    }

    /** Whether {@code host} is loopback by its name or literal address alone (no DNS lookup). */
    static boolean loopback(String host) {
        String h = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
        if (h.equalsIgnoreCase("localhost")) {
            return true;
        }
        if (!(h.matches("[0-9.]+") || h.contains(":"))) {
            return false; // a name: only "localhost" is taken as loopback without asking DNS
        }
        try {
            return InetAddress.getByName(h).isLoopbackAddress(); // a literal: parsed, not looked up
        } catch (UnknownHostException e) {
            return false;
        }
    }

    private static String path(Artifact a) {
        return a.getGroupId().replace('.', '/') + "/" + a.getArtifactId() + "/" + a.getBaseVersion() + "/"
                + a.getArtifactId() + "-" + a.getVersion() + (a.getClassifier().isEmpty() ? "" : "-" + a.getClassifier())
                + "." + a.getExtension();
    }

    private static List<Element> children(Element parent, String name) {
        List<Element> out = new ArrayList<>();
        if (parent == null) {
            return out;
        }
        for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element e && name.equals(e.getLocalName() != null ? e.getLocalName() : e.getTagName())) {
                out.add(e);
            }
        }
        return out;
    }

    private static String text(Element parent, String name) {
        List<Element> c = children(parent, name);
        if (c.isEmpty()) {
            return null;
        }
        String t = c.get(0).getTextContent().strip();
        return t.isEmpty() ? null : t;
    }

    /** Wipes a target's password from memory once the release is done with it. */
    public static void forget(Target target) {
        if (target != null && target.password() != null) {
            Arrays.fill(target.password(), '\0');
        }
    }
}
