package io.qvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Type;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The exported API (packages {@code io.qvm} and {@code io.qvm.admin}, adr/0014) is usable on its
 * own: no public or protected signature of it — supertypes, fields, constructors, methods, their
 * generic arguments and declared exceptions — names a type of {@code io.qvm.internal}, so a
 * program that embeds qvm never has to import one. And the API stays the size it is meant to be:
 * a new public type is a decision, recorded here.
 */
@Tag("unit")
class ApiSurfaceTest {

    static final List<String> API_PACKAGES = List.of("io.qvm", "io.qvm.admin");

    @Test
    void noExportedSignatureNamesAnInternalType() throws Exception {
        List<String> leaks = new ArrayList<>();
        for (Class<?> c : exportedTypes()) {
            check(leaks, c.getName() + " extends", c.getGenericSuperclass());
            for (Type t : c.getGenericInterfaces()) {
                check(leaks, c.getName() + " implements", t);
            }
            for (Field f : c.getDeclaredFields()) {
                if (visible(f.getModifiers())) {
                    check(leaks, c.getName() + "." + f.getName(), f.getGenericType());
                }
            }
            for (Constructor<?> k : c.getDeclaredConstructors()) {
                if (visible(k.getModifiers())) {
                    for (Type t : k.getGenericParameterTypes()) {
                        check(leaks, c.getName() + "(…)", t);
                    }
                    for (Type t : k.getGenericExceptionTypes()) {
                        check(leaks, c.getName() + "(…) throws", t);
                    }
                }
            }
            for (Method m : c.getDeclaredMethods()) {
                if (visible(m.getModifiers()) && !m.isSynthetic()) {
                    check(leaks, c.getName() + "." + m.getName() + " returns", m.getGenericReturnType());
                    for (Type t : m.getGenericParameterTypes()) {
                        check(leaks, c.getName() + "." + m.getName() + "(…)", t);
                    }
                    for (Type t : m.getGenericExceptionTypes()) {
                        check(leaks, c.getName() + "." + m.getName() + " throws", t);
                    }
                }
            }
        }
        assertEquals(List.of(), leaks, "the exported API must not make a caller import io.qvm.internal");
    }

    @Test
    void theExportedTypesAreTheOnesDecided() throws Exception {
        TreeSet<String> names = new TreeSet<>();
        for (Class<?> c : exportedTypes()) {
            if (c.getEnclosingClass() == null) {
                names.add(c.getName());
            }
        }
        assertEquals(new TreeSet<>(List.of(
                "io.qvm.Accelerator", "io.qvm.BootFailedException", "io.qvm.BootReport", "io.qvm.HostSetupException",
                "io.qvm.ImageFetchException", "io.qvm.ImageNotFoundException", "io.qvm.InvalidConfigException",
                "io.qvm.PoolClosedException", "io.qvm.PoolTimeoutException", "io.qvm.QemuVmBackend",
                "io.qvm.RenderFailedException", "io.qvm.RunscPlatform", "io.qvm.Sandbox", "io.qvm.SandboxBackend",
                "io.qvm.SandboxConfig", "io.qvm.SandboxException", "io.qvm.SandboxLostException", "io.qvm.SandboxPool",
                "io.qvm.TransportPreference",
                "io.qvm.admin.BackendAdmin", "io.qvm.admin.Directories", "io.qvm.admin.GuestImages",
                "io.qvm.admin.HostReport", "io.qvm.admin.ImageArtifacts", "io.qvm.admin.QvmLibrary",
                "io.qvm.admin.SandboxRecord", "io.qvm.admin.SandboxStates", "io.qvm.admin.Templates")),
                names, "a public type added to (or gone from) the API: update this list, the README and adr/0014");
    }

    private static boolean visible(int modifiers) {
        return Modifier.isPublic(modifiers) || Modifier.isProtected(modifiers);
    }

    private static void check(List<String> leaks, String where, Type t) {
        if (t != null && t.getTypeName().contains("io.qvm.internal.")) {
            leaks.add(where + ": " + t.getTypeName());
        }
    }

    /** Every public type, nested ones included, of the API packages, as compiled into this module. */
    static List<Class<?>> exportedTypes() throws IOException, URISyntaxException, ClassNotFoundException {
        Path classes = Path.of(QemuVmBackend.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<Class<?>> out = new ArrayList<>();
        for (String pkg : API_PACKAGES) {
            Path dir = classes.resolve(pkg.replace('.', '/'));
            try (Stream<Path> files = Files.list(dir)) {
                for (Path f : files.filter(p -> p.toString().endsWith(".class")).sorted().toList()) {
                    String name = f.getFileName().toString();
                    if (name.equals("package-info.class")) {
                        continue;
                    }
                    Class<?> c = Class.forName(pkg + "." + name.substring(0, name.length() - ".class".length()), false,
                            ApiSurfaceTest.class.getClassLoader());
                    if (Modifier.isPublic(c.getModifiers()) && isPubliclyReachable(c)) {
                        out.add(c);
                    }
                }
            }
        }
        assertTrue(out.size() > 10, "found the API's classes in " + classes);
        return out;
    }

    private static boolean isPubliclyReachable(Class<?> c) {
        for (Class<?> e = c; e != null; e = e.getEnclosingClass()) {
            if (!Modifier.isPublic(e.getModifiers()) || e.isAnonymousClass() || e.isLocalClass()) {
                return false;
            }
        }
        return true;
    }
}
