package io.qvm.server;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Who may use a {@link QvmServer}: tenants, each known by the SHA-256 of its bearer token, so the
 * file that lists them holds no secret. One line per tenant:
 *
 * <pre>
 * # comments and blank lines are ignored
 * billing:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
 * uploads:60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752
 * </pre>
 *
 * <p>A tenant name is 1..64 of {@code [A-Za-z0-9._-]}; the hash is 64 hex digits
 * ({@code printf %s "$TOKEN" | sha256sum}). Two lines with one name, or one hash, are refused: a
 * token must name one tenant. A request's token is hashed and compared with every tenant's hash in
 * constant time ({@link MessageDigest#isEqual}), all of them every time, so how long the check
 * takes says nothing of which tenant, or how much of a hash, matched.
 *
 * <p>The tenant a token names is the {@link io.qvm.SandboxPool pool's} caller key for that request:
 * whatever the pool's recycle policy, two tenants never share a VM. Nothing a client sends besides
 * its token (a header, a query parameter) can choose a tenant.
 */
public final class Tenants {

    /** The caller key of every request of a server without tenants ({@link #none()}). */
    public static final String ANONYMOUS = "anonymous";

    /** The longest bearer token read (a longer one is refused before it is hashed). */
    public static final int MAX_TOKEN_CHARS = 512;

    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]{1,64}");
    private static final Pattern HASH = Pattern.compile("[0-9A-Fa-f]{64}");
    /** RFC 6750's b64token. */
    private static final Pattern TOKEN = Pattern.compile("[A-Za-z0-9._~+/-]+=*");

    private final List<String> names;
    private final List<byte[]> hashes;

    private Tenants(List<String> names, List<byte[]> hashes) {
        this.names = List.copyOf(names);
        this.hashes = List.copyOf(hashes);
    }

    /** No tenants: every request is {@link #ANONYMOUS}, and no token is asked for. */
    public static Tenants none() {
        return new Tenants(List.of(), List.of());
    }

    /**
     * The tenants listed in {@code file}.
     *
     * @throws IllegalArgumentException a line is not {@code tenant:<sha256 hex>}, a name or hash
     *     repeats, or there is no tenant at all (the message names the file and line)
     */
    public static Tenants load(Path file) throws IOException {
        return parse(Files.readAllLines(file, StandardCharsets.UTF_8), file.toString());
    }

    /** The tenants in {@code lines} (see {@link #load}); {@code source} names them in errors. */
    public static Tenants parse(List<String> lines, String source) {
        List<String> names = new ArrayList<>();
        List<byte[]> hashes = new ArrayList<>();
        Map<String, Integer> seenName = new HashMap<>();
        Map<String, Integer> seenHash = new HashMap<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            int no = i + 1;
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            int colon = line.indexOf(':');
            String name = colon < 0 ? line : line.substring(0, colon);
            String hash = colon < 0 ? "" : line.substring(colon + 1).toLowerCase(Locale.ROOT);
            if (colon < 0 || !NAME.matcher(name).matches() || !HASH.matcher(hash).matches()) {
                throw new IllegalArgumentException(source + ":" + no + ": not tenant:<sha256 hex of the token> (a name of"
                        + " 1..64 of A-Za-z0-9._- and 64 hex digits; make the hash with: printf %s \"$TOKEN\" |"
                        + " sha256sum)");
            }
            Integer before = seenName.putIfAbsent(name, no);
            if (before != null) {
                throw new IllegalArgumentException(source + ":" + no + ": tenant '" + name + "' is listed again (first on"
                        + " line " + before + ")");
            }
            before = seenHash.putIfAbsent(hash, no);
            if (before != null) {
                throw new IllegalArgumentException(source + ":" + no + ": the same token hash as line " + before
                        + ": a token must name one tenant");
            }
            names.add(name);
            hashes.add(HexFormat.of().parseHex(hash));
        }
        if (names.isEmpty()) {
            throw new IllegalArgumentException(source + ": no tenant is listed (one line per tenant: "
                    + "tenant:<sha256 hex of the token>)");
        }
        return new Tenants(names, hashes);
    }

    /** Whether requests must carry a token (there are tenants). */
    public boolean required() {
        return !names.isEmpty();
    }

    /** The tenants' names, in file order. */
    public List<String> names() {
        return names;
    }

    /**
     * The tenant {@code token} belongs to; empty for an unknown or malformed token. Every tenant's
     * hash is compared, in constant time, whatever matched.
     */
    public Optional<String> authenticate(String token) {
        if (token == null || token.isEmpty() || token.length() > MAX_TOKEN_CHARS || !TOKEN.matcher(token).matches()) {
            return Optional.empty();
        }
        byte[] h = sha256(token);
        int found = -1;
        for (int i = 0; i < hashes.size(); i++) {
            if (MessageDigest.isEqual(h, hashes.get(i))) {
                found = i;
            }
        }
        return found < 0 ? Optional.empty() : Optional.of(names.get(found));
    }

    /** The hex SHA-256 of {@code token}, as a tenants file lists it. */
    public static String sha256Hex(String token) {
        return HexFormat.of().formatHex(sha256(token));
    }

    private static byte[] sha256(String token) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("this JDK has no SHA-256", e);
        }
    }

    @Override
    public String toString() {
        return names.isEmpty() ? "Tenants[none]" : "Tenants" + names;
    }
}
