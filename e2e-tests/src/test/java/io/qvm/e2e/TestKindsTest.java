package io.qvm.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Every test class in the repository says what it is, so that each kind can be selected (README,
 * "Testing"): exactly one level, {@code unit} or {@code e2e} (boots real QEMU with the real
 * image), as a class-level {@code @Tag}; any of the concerns {@code security}, {@code fault},
 * {@code performance}; and {@code qemu} on every test that starts a qemu-system process (on the
 * class, or on the methods that do), so the pure unit tests run without QEMU installed.
 *
 * <p>Fuzz tests (adr/0008) run in their own surefire execution, which picks them by name and tag:
 * a class with a Jazzer {@code @FuzzTest} is named {@code *FuzzTest}, carries {@code fuzz} on the
 * class and has exactly one {@code @FuzzTest} (Jazzer fuzzes one per JVM); a {@code *FuzzTest}
 * class without one would run nowhere, and {@code fuzz} belongs to nothing else.
 *
 * <p>The check reads the test sources of every module from the repository root, so one run covers
 * the whole tree, including the modules Maven built before this one. A class counts as a test
 * class when its file declares a JUnit test method.
 */
@Tag("unit")
class TestKindsTest {

    static final Set<String> LEVELS = Set.of("unit", "e2e");
    static final Set<String> KNOWN = Set.of("unit", "e2e", "security", "fault", "performance", "qemu", "fuzz");

    private static final Pattern TEST_METHOD = Pattern.compile(
            "@(?:org\\.junit\\.jupiter\\.(?:api|params)\\.)?"
            + "(?:Test|ParameterizedTest|RepeatedTest|TestFactory|TestTemplate|FuzzTest)\\b");
    private static final Pattern FUZZ_TEST =
            Pattern.compile("@(?:com\\.code_intelligence\\.jazzer\\.junit\\.)?FuzzTest\\b");
    private static final Pattern TAG_OPEN = Pattern.compile("@(?:org\\.junit\\.jupiter\\.api\\.)?Tag\\s*\\(\\s*\"$");
    private static final Pattern TAG = Pattern.compile("@(?:org\\.junit\\.jupiter\\.api\\.)?Tag\\s*\\(\\s*\"([^\"]*)\"\\s*\\)");

    @Test
    void everyTestClassInTheRepositoryHasItsKind() throws IOException {
        Path root = repositoryRoot();
        List<Path> sources = testSources(root);
        assertTrue(sources.contains(root.resolve("e2e-tests/src/test/java/io/qvm/e2e/TestKindsTest.java")),
                "the scan must see this file; it saw " + sources.size() + " under " + root);
        assertTrue(sources.stream().anyMatch(p -> p.startsWith(root.resolve("transport"))),
                "the scan must see the other modules");
        List<String> problems = new ArrayList<>();
        for (Path f : sources) {
            problems.addAll(problems(root.relativize(f).toString(), Files.readString(f)));
        }
        assertEquals(List.of(), problems, "test classes that do not say what they are:\n  "
                + String.join("\n  ", problems) + "\n");
    }

    /** The check itself: what it accepts and what it refuses, on small sources. */
    @Test
    void theCheckAcceptsTaggedClassesAndNamesWhatIsMissing() {
        assertEquals(List.of(), problems("A.java", "import x;\n@Tag(\"unit\")\nclass A { @Test void t() { } }"));
        assertEquals(List.of(), problems("A.java", "/** Not a test: {@code @Test}. */ final class A { }"),
                "a helper without test methods needs no tag");
        assertEquals(List.of(), problems("A.java", "@Tag(\"e2e\") @Tag(\"qemu\") @Tag(\"fault\")\n"
                + "@Timeout(value = 20, unit = TimeUnit.MINUTES)\nclass A { @ParameterizedTest void t() { } }"));
        assertEquals(List.of(), problems("A.java", "@Tag(\"unit\") class A {\n"
                + "  @Test @Tag(\"qemu\") void bootsQemu() { }\n  @Test void pure() { String s = \"// @Tag(\\\"x\\\")\"; } }"),
                "qemu on a method; string contents are not tags");

        assertEquals(List.of("A.java: no kind on the class: add @Tag(\"unit\") or @Tag(\"e2e\")"),
                problems("A.java", "// @Tag(\"unit\")\nclass A { @Test void t() { } }"),
                "a commented-out tag is no tag");
        assertEquals(List.of("A.java: no kind on the class: add @Tag(\"unit\") or @Tag(\"e2e\")"),
                problems("A.java", "@Tag(\"security\")\nclass A { @RepeatedTest(3) void t() { } }"));
        assertEquals(List.of("A.java: both unit and e2e on the class: pick one"),
                problems("A.java", "@Tag(\"unit\") @Tag(\"e2e\") @Tag(\"qemu\") class A { @Test void t() { } }"));
        assertEquals(List.of("A.java: an e2e test starts QEMU: add @Tag(\"qemu\") to the class"),
                problems("A.java", "@Tag(\"e2e\") class A { @Test void t() { } }"));
        assertEquals(List.of("A.java: unknown tag \"slow\" (known: " + String.join(", ", KNOWN.stream().sorted().toList())
                + ")"), problems("A.java", "@Tag(\"unit\") class A { @Test @Tag(\"slow\") void t() { } }"));
        assertEquals(List.of("A.java: the kind \"e2e\" is on a method: it goes on the class (move the method to an "
                + "e2e test class)"), problems("A.java", "@Tag(\"unit\") class A { @Test @Tag(\"e2e\") void t() { } }"));

        assertEquals(List.of(), problems("AFuzzTest.java", "@Tag(\"unit\") @Tag(\"fuzz\")\n"
                + "class AFuzzTest { @FuzzTest(maxDuration = \"10s\") void f(byte[] b) { } }"));
        assertEquals(List.of("A.java: a @FuzzTest class is named *FuzzTest (the fuzz execution runs only those)"),
                problems("A.java", "@Tag(\"unit\") @Tag(\"fuzz\") class A { @FuzzTest void f(byte[] b) { } }"));
        assertEquals(List.of("AFuzzTest.java: a @FuzzTest class has @Tag(\"fuzz\") on the class",
                "AFuzzTest.java: 2 @FuzzTest methods: one per class (Jazzer fuzzes one per JVM)"),
                problems("AFuzzTest.java", "@Tag(\"unit\") class AFuzzTest { @FuzzTest void f(byte[] b) { }\n"
                        + "  @com.code_intelligence.jazzer.junit.FuzzTest void g(byte[] b) { } }"));
        assertEquals(List.of("AFuzzTest.java: a *FuzzTest class without a @FuzzTest runs nowhere (the ordinary tests "
                + "leave *FuzzTest out): add one or rename the class"),
                problems("AFuzzTest.java", "@Tag(\"unit\") class AFuzzTest { @Test void t() { } }"));
        assertEquals(List.of("A.java: \"fuzz\" is for a class with a @FuzzTest"),
                problems("A.java", "@Tag(\"unit\") @Tag(\"fuzz\") class A { @Test void t() { } }"));
    }

    /** What is wrong with the test class in {@code file} (named like {@code Foo.java}); empty if nothing. */
    static List<String> problems(String file, String source) {
        String code = withoutComments(source);
        if (!TEST_METHOD.matcher(code).find()) {
            return List.of();
        }
        String name = Path.of(file).getFileName().toString().replaceFirst("\\.java$", "");
        Matcher decl = Pattern.compile("\\b(?:class|record|enum|interface)\\s+" + Pattern.quote(name) + "\\b").matcher(code);
        int at = decl.find() ? decl.start() : 0;
        int headerStart = code.lastIndexOf(';', at) + 1;
        Set<String> onClass = tags(code.substring(headerStart, at));
        Set<String> onMembers = tags(code.substring(at));
        List<String> problems = new ArrayList<>();
        Set<String> all = new LinkedHashSet<>(onClass);
        all.addAll(onMembers);
        for (String t : all) {
            if (!KNOWN.contains(t)) {
                problems.add(file + ": unknown tag \"" + t + "\" (known: "
                        + String.join(", ", KNOWN.stream().sorted().toList()) + ")");
            }
        }
        List<String> levels = onClass.stream().filter(LEVELS::contains).toList();
        if (levels.isEmpty()) {
            problems.add(file + ": no kind on the class: add @Tag(\"unit\") or @Tag(\"e2e\")");
        } else if (levels.size() > 1) {
            problems.add(file + ": both unit and e2e on the class: pick one");
        } else if (levels.contains("e2e") && !onClass.contains("qemu")) {
            problems.add(file + ": an e2e test starts QEMU: add @Tag(\"qemu\") to the class");
        }
        onMembers.stream().filter(LEVELS::contains).forEach(t -> problems.add(file + ": the kind \"" + t
                + "\" is on a method: it goes on the class (move the method to an " + t + " test class)"));
        problems.addAll(fuzzProblems(file, name, code, onClass, all));
        return problems;
    }

    /** The fuzz execution finds a fuzz test by its name and tag, and fuzzes one per JVM (adr/0008). */
    private static List<String> fuzzProblems(String file, String name, String code, Set<String> onClass,
            Set<String> all) {
        List<String> problems = new ArrayList<>();
        long fuzzTests = FUZZ_TEST.matcher(code).results().count();
        if (fuzzTests > 0) {
            if (!name.endsWith("FuzzTest")) {
                problems.add(file + ": a @FuzzTest class is named *FuzzTest (the fuzz execution runs only those)");
            }
            if (!onClass.contains("fuzz")) {
                problems.add(file + ": a @FuzzTest class has @Tag(\"fuzz\") on the class");
            }
            if (fuzzTests > 1) {
                problems.add(file + ": " + fuzzTests + " @FuzzTest methods: one per class (Jazzer fuzzes one per JVM)");
            }
        } else {
            if (name.endsWith("FuzzTest")) {
                problems.add(file + ": a *FuzzTest class without a @FuzzTest runs nowhere (the ordinary tests leave "
                        + "*FuzzTest out): add one or rename the class");
            }
            if (all.contains("fuzz")) {
                problems.add(file + ": \"fuzz\" is for a class with a @FuzzTest");
            }
        }
        return problems;
    }

    private static Set<String> tags(String code) {
        Set<String> out = new LinkedHashSet<>();
        Matcher m = TAG.matcher(code);
        while (m.find()) {
            out.add(m.group(1));
        }
        return out;
    }

    /**
     * The source with its comments blanked out and every string literal emptied except the value
     * of a {@code @Tag}, so neither a commented-out tag nor text that looks like one counts.
     */
    static String withoutComments(String s) {
        StringBuilder out = new StringBuilder(s.length());
        int i = 0;
        while (i < s.length()) {
            char c = s.charAt(i);
            if (s.startsWith("//", i)) {
                while (i < s.length() && s.charAt(i) != '\n') {
                    out.append(' ');
                    i++;
                }
            } else if (s.startsWith("/*", i)) {
                int end = s.indexOf("*/", i + 2);
                end = end < 0 ? s.length() : end + 2;
                for (; i < end; i++) {
                    out.append(s.charAt(i) == '\n' ? '\n' : ' ');
                }
            } else if (c == '"' || c == '\'') {
                String quote = s.startsWith("\"\"\"", i) ? "\"\"\"" : String.valueOf(c);
                int from = i + quote.length();
                int to = from;
                while (to < s.length() && !s.startsWith(quote, to)) {
                    to += s.charAt(to) == '\\' ? 2 : 1;
                }
                to = Math.min(to, s.length());
                out.append(quote);
                if (TAG_OPEN.matcher(out.subSequence(Math.max(0, out.length() - 64), out.length())).find()) {
                    out.append(s, from, to);
                }
                out.append(quote);
                i = Math.min(s.length(), to + quote.length());
            } else {
                out.append(c);
                i++;
            }
        }
        return out.toString();
    }

    /** The checkout's root: the nearest directory up from here whose pom.xml is the qvm parent (it lists the modules). */
    static Path repositoryRoot() throws IOException {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            Path pom = p.resolve("pom.xml");
            if (Files.isRegularFile(pom) && Files.readString(pom).contains("<modules>")
                    && Files.readString(pom).contains("<artifactId>qvm-parent</artifactId>")) {
                return p;
            }
        }
        throw new IllegalStateException("no qvm-parent pom.xml above " + Path.of("").toAbsolutePath());
    }

    /** Every {@code *.java} under a {@code src/test/java} of the tree, skipping build output. */
    static List<Path> testSources(Path root) throws IOException {
        try (Stream<Path> walk = Files.walk(root)) {
            return walk.filter(p -> p.toString().endsWith(".java") && Files.isRegularFile(p))
                    .filter(p -> {
                        Path rel = root.relativize(p);
                        for (Path part : rel) {
                            String s = part.toString();
                            if (s.equals("target") || s.equals("out") || s.startsWith(".")) {
                                return false;
                            }
                        }
                        return rel.toString().replace('\\', '/').contains("src/test/java/");
                    })
                    .sorted().toList();
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
    }
}
