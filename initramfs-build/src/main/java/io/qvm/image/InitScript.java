package io.qvm.image;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.stream.Collectors;

/**
 * Generates the guest's {@code /init} (busybox sh) from {@code init.sh.in}: fills in the kernel
 * version and the module load order. See the script for the boot sequence: mount proc/sys/dev,
 * load modules, copy into a tmpfs and switch_root (runsc cannot pivot_root from the initramfs),
 * read {@code qvm.*} from /proc/cmdline, open the virtio-serial port once, fill config.json,
 * run runsc with the port as the worker's stdin/stdout, power off. Beside the sandbox, if the
 * optional control port exists, a shell loop answers the host's {@code restore} and {@code ping}
 * lines (docs/CONTRACTS.md); the worker never holds that port.
 */
public final class InitScript {
    /** The busybox applets the init uses (plus a few for debugging), linked in /bin. */
    public static final List<String> APPLETS = List.of(
            "[", "[[", "cat", "chroot", "cp", "date", "dmesg", "echo", "false", "grep", "head", "insmod", "ln", "ls",
            "kill", "lsmod", "mkdir", "mkfifo", "mknod", "mount", "poweroff", "ps", "reboot", "rm", "sed", "sh",
            "sleep", "stat", "switch_root", "sync", "test", "true", "umount", "uname", "usleep");

    private InitScript() {
    }

    public static String render(String kernelVersion, List<KernelModules.Module> modules,
            String runscVersion) {
        String template;
        try (InputStream in = InitScript.class.getResourceAsStream("init.sh.in")) {
            if (in == null) {
                throw new ImageException("init.sh.in is missing from the class path");
            }
            template = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new ImageException("cannot read init.sh.in: " + e, e);
        }
        for (String v : new String[] {kernelVersion, runscVersion}) {
            if (!v.matches("[A-Za-z0-9.+~_-]+")) {
                throw new ImageException("unexpected characters in '" + v + "'");
            }
        }
        String mods = modules.stream().map(KernelModules.Module::path).collect(Collectors.joining(" "));
        return template.replace("@KVER@", kernelVersion).replace("@MODULES@", mods)
                .replace("@RUNSC_VERSION@", runscVersion);
    }
}
