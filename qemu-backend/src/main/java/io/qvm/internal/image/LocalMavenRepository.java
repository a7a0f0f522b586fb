package io.qvm.internal.image;

import io.qvm.internal.host.QvmEnvironment;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.xml.XMLConstants;
import javax.xml.parsers.DocumentBuilder;
import javax.xml.parsers.DocumentBuilderFactory;
import javax.xml.parsers.ParserConfigurationException;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.xml.sax.ErrorHandler;
import org.xml.sax.SAXException;
import org.xml.sax.SAXParseException;

/**
 * The local Maven repository on this machine, found the way Maven finds it, without Maven: the
 * system property {@value #PROPERTY}, else {@value QvmEnvironment#MAVEN_REPO}, else
 * {@code <localRepository>} of {@code ~/.m2/settings.xml}, else {@code ~/.m2/repository}. The
 * global settings ({@code $MAVEN_HOME/conf/settings.xml}) and {@code mvn -s} are not read: a
 * server that uses them sets {@value #PROPERTY} or {@value QvmEnvironment#MAVEN_REPO}.
 *
 * <p>{@code settings.xml} is parsed with the JDK's parser under secure processing, with no DOCTYPE,
 * no external entities and no XInclude, and at most {@value #MAX_SETTINGS_BYTES} bytes of it;
 * {@code ${user.home}} and {@code ${env.NAME}} in its value are expanded as Maven does. A
 * settings file that cannot be read falls back to the default, and {@link #how()} says why.
 *
 * @param root the repository's root directory
 * @param how where that came from, for messages ("-Dmaven.repo.local", "the default", …)
 */
public record LocalMavenRepository(Path root, String how) {

    /** The system property Maven takes the local repository from. */
    public static final String PROPERTY = "maven.repo.local";
    static final int MAX_SETTINGS_BYTES = 1 << 20;

    private static final Pattern EXPRESSION = Pattern.compile("\\$\\{(user\\.home|env\\.([A-Za-z_][A-Za-z0-9_]*))}");

    public LocalMavenRepository {
        Objects.requireNonNull(root, "root");
        Objects.requireNonNull(how, "how");
    }

    /** This process's repository: its {@value #PROPERTY} and its environment. */
    public static LocalMavenRepository system() {
        return locate(Optional.ofNullable(System.getProperty(PROPERTY)), QvmEnvironment.system());
    }

    /** The repository for {@code property} (the value of {@value #PROPERTY}, if set) and {@code env}. */
    public static LocalMavenRepository locate(Optional<String> property, QvmEnvironment env) {
        Optional<String> p = property.filter(v -> !v.isBlank());
        if (p.isPresent()) {
            return new LocalMavenRepository(absolute(p.get()), "-D" + PROPERTY);
        }
        Optional<String> v = env.get(QvmEnvironment.MAVEN_REPO);
        if (v.isPresent()) {
            return new LocalMavenRepository(absolute(v.get()), "$" + QvmEnvironment.MAVEN_REPO);
        }
        Path m2 = env.home().resolve(".m2");
        Path settings = m2.resolve("settings.xml");
        Path fallback = m2.resolve("repository");
        if (!Files.isRegularFile(settings)) {
            return new LocalMavenRepository(fallback, "the default");
        }
        try {
            return localRepositoryOf(settings).map(s -> expand(s, env))
                    .map(s -> new LocalMavenRepository(absolute(s), "<localRepository> of " + settings))
                    .orElseGet(() -> new LocalMavenRepository(fallback, "the default"));
        } catch (IOException e) {
            return new LocalMavenRepository(fallback, "the default, as " + settings + " cannot be read: "
                    + e.getMessage());
        }
    }

    /** Where Maven keeps {@code groupId:artifactId:version[:classifier]} with {@code extension}. */
    public Path artifact(String groupId, String artifactId, String version, String classifier, String extension) {
        Path dir = root;
        for (String part : groupId.split("\\.")) {
            dir = dir.resolve(part);
        }
        String name = artifactId + "-" + version + (classifier == null || classifier.isEmpty() ? "" : "-" + classifier)
                + "." + extension;
        return dir.resolve(artifactId).resolve(version).resolve(name);
    }

    /**
     * The {@code <localRepository>} element's text of a {@code settings.xml}, if it has one.
     *
     * @throws IOException the file is too large, unreadable, not well-formed, or has a DOCTYPE
     */
    static Optional<String> localRepositoryOf(Path settings) throws IOException {
        Element root = readSettings(settings);
        for (Node n = root.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element e && "localRepository".equals(e.getLocalName() != null ? e.getLocalName()
                    : e.getTagName())) {
                String text = e.getTextContent().strip();
                return text.isEmpty() ? Optional.empty() : Optional.of(text);
            }
        }
        return Optional.empty();
    }

    /**
     * The root element of a {@code settings.xml}, parsed as the class comment says (secure
     * processing, no DOCTYPE, at most {@value #MAX_SETTINGS_BYTES} bytes): the one way qvm reads
     * Maven's settings, also for the release's {@code <server>} credentials.
     *
     * @throws IOException the file is too large, unreadable, not well-formed, or has a DOCTYPE
     */
    public static Element readSettings(Path settings) throws IOException {
        if (Files.size(settings) > MAX_SETTINGS_BYTES) {
            throw new IOException("larger than " + MAX_SETTINGS_BYTES + " bytes");
        }
        try (InputStream in = Files.newInputStream(settings)) {
            return parser().parse(in).getDocumentElement();
        } catch (SAXException e) {
            throw new IOException("not well-formed XML: " + e.getMessage(), e);
        }
    }

    private static DocumentBuilder parser() throws IOException {
        try {
            DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
            f.setNamespaceAware(true);
            f.setFeature(XMLConstants.FEATURE_SECURE_PROCESSING, true);
            f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
            f.setFeature("http://xml.org/sax/features/external-general-entities", false);
            f.setFeature("http://xml.org/sax/features/external-parameter-entities", false);
            f.setFeature("http://apache.org/xml/features/nonvalidating/load-external-dtd", false);
            f.setAttribute(XMLConstants.ACCESS_EXTERNAL_DTD, "");
            f.setAttribute(XMLConstants.ACCESS_EXTERNAL_SCHEMA, "");
            f.setXIncludeAware(false);
            f.setExpandEntityReferences(false);
            DocumentBuilder b = f.newDocumentBuilder();
            b.setErrorHandler(new ErrorHandler() { // thrown, never printed to stderr
                @Override
                public void warning(SAXParseException e) {
                }

                @Override
                public void error(SAXParseException e) throws SAXException {
                    throw e;
                }

                @Override
                public void fatalError(SAXParseException e) throws SAXException {
                    throw e;
                }
            });
            return b;
        } catch (ParserConfigurationException e) {
            throw new IOException("the JDK's XML parser lacks a secure-processing feature: " + e.getMessage(), e);
        }
    }

    /** {@code ${user.home}} and {@code ${env.NAME}} as Maven expands them; anything else stays as written. */
    public static String expand(String value, QvmEnvironment env) {
        Matcher m = EXPRESSION.matcher(value);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String with = m.group(2) == null ? env.home().toString()
                    : env.variables().getOrDefault(m.group(2), m.group());
            m.appendReplacement(out, Matcher.quoteReplacement(with));
        }
        m.appendTail(out);
        return out.toString();
    }

    private static Path absolute(String path) {
        return Path.of(path).toAbsolutePath().normalize();
    }
}
