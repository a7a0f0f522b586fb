package io.qvm.image;

import io.qvm.protocol.image.InitEvents;
import io.qvm.protocol.image.ControlProtocol;
import io.qvm.protocol.image.KernelCommandLine;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Generates the guest's {@code /init} (busybox sh) from {@code init.sh.in}: fills in the kernel
 * version and the module load order. See the script for the boot sequence: mount proc/sys/dev,
 * load modules, copy into a tmpfs and switch_root (runsc cannot pivot_root from the initramfs),
 * read {@code qvm.*} from /proc/cmdline, open the virtio-serial port once, fill config.json,
 * run runsc with the port as the worker's stdin/stdout, power off. Beside the sandbox, if the
 * optional control port exists, a shell loop answers the host's {@code restore} and {@code ping}
 * lines (docs/CONTRACTS.md); the worker never holds that port.
 *
 * <p>The template names every word it shares with the host by a placeholder ({@code @KEY_XMX_MIB@},
 * {@code @PHASE_RUNSC@}, {@code @CONTROL_PING@}, …; see {@link #contractWords()}) filled in from
 * {@link KernelCommandLine}, {@link InitEvents} and {@link ControlProtocol}, so the init and the
 * host cannot drift apart; a placeholder without a value is an error.
 */
public final class InitScript {
    /** The busybox applets the init uses (plus a few for debugging), linked in /bin. */
    public static final List<String> APPLETS = List.of(
            "[", "[[", "cat", "chmod", "chroot", "cp", "date", "dmesg", "echo", "false", "grep", "head", "insmod", "ln", "ls",
            "kill", "lsmod", "mkdir", "mkfifo", "mknod", "mount", "poweroff", "ps", "reboot", "rm", "sed", "sh",
            "sleep", "stat", "switch_root", "sync", "test", "true", "umount", "uname", "usleep", "wc");

    private static final Pattern PLACEHOLDER = Pattern.compile("@([A-Z][A-Z0-9_]*)@");

    private InitScript() {
    }

    /**
     * The placeholders of the template that stand for words of a contract, each with its value:
     * {@code KEY_<key>} and {@code DEFAULT_<key>} for every {@link KernelCommandLine.Key},
     * {@code PHASE_<phase>} for every {@link InitEvents.Phase}, and the constants of
     * {@link KernelCommandLine} as {@code CMDLINE_<name>}, of {@link InitEvents} as
     * {@code EVENT_<name>}, of {@link ControlProtocol} as {@code CONTROL_<name>} and of
     * {@link OciConfig} (the OCI config template's placeholders) as {@code OCI_<name>}.
     */
    public static Map<String, String> contractWords() {
        Map<String, String> w = new LinkedHashMap<>();
        for (KernelCommandLine.Key k : KernelCommandLine.Key.values()) {
            w.put("KEY_" + k.name(), k.key());
            w.put("DEFAULT_" + k.name(), k.initDefault());
        }
        for (InitEvents.Phase p : InitEvents.Phase.values()) {
            w.put("PHASE_" + p.name(), p.id());
        }
        constants(w, "CMDLINE_", KernelCommandLine.class);
        constants(w, "EVENT_", InitEvents.class);
        constants(w, "CONTROL_", ControlProtocol.class);
        constants(w, "OCI_", OciConfig.class);
        return w;
    }

    /** Every public static final String or int of {@code c}, under its name with {@code prefix}. */
    private static void constants(Map<String, String> w, String prefix, Class<?> c) {
        for (Field f : c.getFields()) {
            int m = f.getModifiers();
            if (Modifier.isStatic(m) && Modifier.isFinal(m) && (f.getType() == String.class || f.getType() == int.class)) {
                try {
                    w.put(prefix + f.getName(), String.valueOf(f.get(null)));
                } catch (IllegalAccessException e) {
                    throw new IllegalStateException("a public constant is readable: " + f, e);
                }
            }
        }
    }

    /** The template as on the class path, placeholders unfilled. */
    static String template() {
        try (InputStream in = InitScript.class.getResourceAsStream("init.sh.in")) {
            if (in == null) {
                throw new ImageException("init.sh.in is missing from the class path");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new ImageException("cannot read init.sh.in: " + e, e);
        }
    }

    public static String render(String kernelVersion, List<KernelModules.Module> modules,
            String runscVersion) {
        for (String v : new String[] {kernelVersion, runscVersion}) {
            if (!v.matches("[A-Za-z0-9.+~_-]+")) {
                throw new ImageException("unexpected characters in '" + v + "'");
            }
        }
        String mods = modules.stream().map(KernelModules.Module::path).collect(Collectors.joining(" "));
        Map<String, String> values = contractWords();
        values.put("KVER", kernelVersion);
        values.put("MODULES", mods);
        values.put("RUNSC_VERSION", runscVersion);
        // One pass: a filled-in value is never scanned for placeholders again.
        Matcher m = PLACEHOLDER.matcher(template());
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String v = values.get(m.group(1));
            if (v == null) {
                throw new ImageException("init.sh.in has the placeholder " + m.group() + ", which has no value");
            }
            m.appendReplacement(out, Matcher.quoteReplacement(v));
        }
        return m.appendTail(out).toString();
    }
}
