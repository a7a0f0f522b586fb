package io.qvm.internal.process;

import io.qvm.internal.host.Posix;
import io.qvm.HostSetupException;
import io.qvm.internal.host.QvmEnvironment;
import io.qvm.internal.host.CommandRunner;
import io.qvm.internal.host.HostOs;
import io.qvm.internal.host.MacOsTools;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * Who QEMU runs as: never root. A backend that runs as an unprivileged user starts QEMU as that
 * same user; a backend that runs as root (e.g. {@code ./qvm} with {@code sudo}) has QEMU drop to
 * the unprivileged user {@value #DEFAULT_USER} ({@code QVM_QEMU_USER}) with QEMU's own option
 * ({@code -runas}, {@code -run-with user=} from 9.1), once QEMU has opened what it needs as root
 * ({@code /dev/kvm}, the image, the RAM file, the console file, pidfile and sockets). If that
 * user does not exist, nothing starts: {@link #dropTo()} throws with the command that creates it.
 *
 * <pre>{@code
 * QemuUser.system().dropTo()   // empty: not root; else the account, or HostSetupException
 * }</pre>
 *
 * <p>Tests choose the host's uid and the account lookup ({@link #of}), so the policy is the same
 * code whoever runs them.
 */
public final class QemuUser {

    /** The user QEMU drops to when qvm runs as root and {@code QVM_QEMU_USER} is unset. */
    public static final String DEFAULT_USER = QvmEnvironment.DEFAULT_QEMU_USER;

    /** The command that creates {@code user} on Linux: a system account with no home and no login shell. */
    public static String createCommand(String user) {
        return "useradd --system --no-create-home --shell /usr/sbin/nologin " + user;
    }

    /**
     * What creates {@code user} on {@code os}. On macOS ({@code useradd} does not exist there) a
     * hidden local account with no shell and no home, through Directory Services ({@code dscl}),
     * and first the advice not to run qvm as root at all: HVF needs no privileges. Untested on a
     * real Mac.
     */
    public static String createCommand(HostOs os, String user) {
        if (os != HostOs.MACOS) {
            return createCommand(user);
        }
        String u = "/Users/" + user;
        return "run qvm as your own user instead (HVF needs no root on macOS); or create a hidden account for QEMU "
                + "with a free UniqueID below 500 (list the used ones: dscl . -list /Users UniqueID), e.g. 499: "
                + "sudo dscl . -create " + u + " UniqueID 499 && sudo dscl . -create " + u + " PrimaryGroupID -2"
                + " && sudo dscl . -create " + u + " UserShell /usr/bin/false && sudo dscl . -create " + u
                + " NFSHomeDirectory /var/empty && sudo dscl . -create " + u + " IsHidden 1";
    }

    /** A POSIX user name QEMU's option parser and {@code getpwnam} both take as it is. */
    private static final Pattern NAME = Pattern.compile("[a-z_][a-z0-9_-]{0,31}");

    /** One account of the host's user database. */
    public record Account(String name, int uid, int gid) {
        public Account {
            Objects.requireNonNull(name, "name");
        }
    }

    /** Looks up accounts by name. */
    @FunctionalInterface
    public interface Accounts {
        Optional<Account> find(String name);

        /** This host's accounts ({@link #system(HostOs, CommandRunner)} for this JVM's OS). */
        static Accounts system() {
            return system(HostOs.fromOsName(System.getProperty("os.name", "")), CommandRunner.system());
        }

        /**
         * Linux and other POSIX hosts: {@code /etc/passwd}, then {@code getent passwd} (which also
         * asks NSS: LDAP, sssd…). macOS: {@code /etc/passwd} holds only a few system accounts and
         * there is no {@code getent}; accounts live in Directory Services, so {@code /usr/bin/id -u}
         * and {@code -g} (every directory node the Mac is bound to), then {@code /usr/bin/dscl .
         * -read /Users/<name>} (the local node), by absolute path. The macOS path is untested on a
         * real Mac: proven with a runner replaying those tools' outputs.
         */
        static Accounts system(HostOs os, CommandRunner runner) {
            if (os == HostOs.MACOS) {
                return name -> fromId(runner, name).or(() -> fromDscl(runner, name));
            }
            return name -> {
                Optional<Account> local = fromPasswd(Path.of("/etc/passwd"), name);
                return local.isPresent() ? local : fromGetent(name);
            };
        }
    }

    /** The current process's uid, or -1 where the OS has no POSIX uids (Windows). */
    private final int hostUid;
    private final String wanted;
    private final Accounts accounts;
    /** Decides the fix text ({@link #createCommand(HostOs, String)}). */
    private final HostOs os;

    private QemuUser(int hostUid, String wanted, Accounts accounts, HostOs os) {
        this.hostUid = hostUid;
        this.wanted = Objects.requireNonNull(wanted, "wanted");
        this.accounts = Objects.requireNonNull(accounts, "accounts");
        this.os = Objects.requireNonNull(os, "os");
    }

    /** This process's uid, {@code QVM_QEMU_USER} (default {@value #DEFAULT_USER}), the system's accounts. */
    public static QemuUser system() {
        return system(QvmEnvironment.system());
    }

    /** As {@link #system()}, with the user from {@code env}. */
    public static QemuUser system(QvmEnvironment env) {
        return new QemuUser(posixUid(), env.qemuUser(), Accounts.system(),
                HostOs.fromOsName(System.getProperty("os.name", "")));
    }

    /**
     * A policy for a host process of {@code hostUid} (-1: not a POSIX host) that drops QEMU to
     * {@code wanted} when {@code hostUid} is 0, looked up in {@code accounts}.
     */
    public static QemuUser of(int hostUid, String wanted, Accounts accounts) {
        return new QemuUser(hostUid, wanted, accounts, HostOs.LINUX);
    }

    /** As {@link #of(int, String, Accounts)} on {@code os} (whose fix text the errors give). */
    public static QemuUser of(int hostUid, String wanted, Accounts accounts, HostOs os) {
        return new QemuUser(hostUid, wanted, accounts, os);
    }

    /** What creates the {@linkplain #wantedUser() wanted} user on this host's OS. */
    public String createCommand() {
        return createCommand(os, wanted);
    }

    /** Whether the host process is root (so QEMU must drop privileges). */
    public boolean hostIsRoot() {
        return hostUid == 0;
    }

    /** The user QEMU drops to when the host is root ({@code QVM_QEMU_USER}). */
    public String wantedUser() {
        return wanted;
    }

    /**
     * The account QEMU drops to: empty when this process is not root (QEMU then runs as this same
     * unprivileged user), else the {@linkplain #wantedUser() wanted} user's account.
     *
     * @throws HostSetupException ({@link HostSetupException.Problem#HOST_SETUP_NEEDED}) when this
     *     process is root and the user does not exist, is not a valid name, or is itself root
     */
    public Optional<Account> dropTo() {
        if (!hostIsRoot()) {
            return Optional.empty();
        }
        if (!NAME.matcher(wanted).matches()) {
            throw new HostSetupException(HostSetupException.Problem.HOST_SETUP_NEEDED, QvmEnvironment.QEMU_USER + "='"
                    + wanted + "' is not a user name (lowercase letters, digits, '_' and '-', at most 32): set it to "
                    + "the unprivileged user QEMU should run as");
        }
        Optional<Account> account = accounts.find(wanted);
        if (account.isEmpty()) {
            throw new HostSetupException(HostSetupException.Problem.HOST_SETUP_NEEDED, "qvm runs as root, and QEMU "
                    + "never does: it drops to the unprivileged user '" + wanted + "' (" + QvmEnvironment.QEMU_USER
                    + "), which does not exist on this host. " + (os == HostOs.MACOS ? "On macOS: " : "Create it: ")
                    + createCommand(os, wanted)
                    + (os == HostOs.MACOS ? "" : " (./qvm does this when run as root)") + "; or set " + QvmEnvironment.QEMU_USER
                    + " to an existing unprivileged user");
        }
        if (account.get().uid() == 0 || account.get().gid() == 0) {
            throw new HostSetupException(HostSetupException.Problem.HOST_SETUP_NEEDED, QvmEnvironment.QEMU_USER + "='"
                    + wanted + "' has uid " + account.get().uid() + " and gid " + account.get().gid()
                    + ": QEMU must not run as root; use an unprivileged user (" + createCommand(os, DEFAULT_USER) + ")");
        }
        return account;
    }

    /** One line for {@code qvm doctor}: who QEMU runs as here, or why it cannot start. */
    public String describe() {
        if (hostUid < 0) {
            return "no POSIX users on this OS: QEMU runs as the user that runs qvm";
        }
        if (!hostIsRoot()) {
            return "qvm runs as uid " + hostUid + ", not root: QEMU runs as that same unprivileged user";
        }
        Account a = dropTo().orElseThrow();
        return "qvm runs as root: QEMU drops to user " + a.name() + " (uid " + a.uid() + ", gid " + a.gid()
                + ") once it has opened its devices and files";
    }

    /** The account {@code name} in a passwd-format file, if it is there. */
    static Optional<Account> fromPasswd(Path passwd, String name) {
        try {
            for (String line : Files.readAllLines(passwd, StandardCharsets.UTF_8)) {
                Optional<Account> a = parse(line, name);
                if (a.isPresent()) {
                    return a;
                }
            }
        } catch (IOException | RuntimeException e) {
            // unreadable or malformed: not there, as far as this file says
        }
        return Optional.empty();
    }

    /** {@code id -u name} and {@code id -g name}: each prints one number, or exits 1 ("no such user"). */
    static Optional<Account> fromId(CommandRunner runner, String name) {
        Optional<String> uid = runFor(runner, List.of(MacOsTools.ID, "-u", name));
        Optional<String> gid = runFor(runner, List.of(MacOsTools.ID, "-g", name));
        try {
            return uid.isPresent() && gid.isPresent()
                    ? Optional.of(new Account(name, Integer.parseInt(uid.get().strip()), Integer.parseInt(gid.get().strip())))
                    : Optional.empty();
        } catch (NumberFormatException e) {
            return Optional.empty();
        }
    }

    /** {@code dscl . -read /Users/name UniqueID PrimaryGroupID}: lines {@code UniqueID: 499}. */
    static Optional<Account> fromDscl(CommandRunner runner, String name) {
        Optional<String> out = runFor(runner, List.of(MacOsTools.DSCL, ".", "-read", "/Users/" + name, "UniqueID",
                "PrimaryGroupID"));
        if (out.isEmpty()) {
            return Optional.empty();
        }
        Integer uid = null;
        Integer gid = null;
        for (String line : out.get().split("\\R")) {
            String[] kv = line.split(":\\s*", 2);
            try {
                if (kv.length == 2 && kv[0].strip().equals("UniqueID")) {
                    uid = Integer.parseInt(kv[1].strip());
                } else if (kv.length == 2 && kv[0].strip().equals("PrimaryGroupID")) {
                    gid = Integer.parseInt(kv[1].strip());
                }
            } catch (NumberFormatException e) {
                return Optional.empty();
            }
        }
        return uid != null && gid != null ? Optional.of(new Account(name, uid, gid)) : Optional.empty();
    }

    private static Optional<String> runFor(CommandRunner runner, List<String> argv) {
        try {
            CommandRunner.Result r = runner.run(argv, java.time.Duration.ofSeconds(10));
            return r.ok() ? Optional.of(r.stdout()) : Optional.empty();
        } catch (java.io.UncheckedIOException e) {
            return Optional.empty();
        }
    }

    private static Optional<Account> fromGetent(String name) {
        try {
            Process p = new ProcessBuilder(List.of("getent", "passwd", name)).redirectErrorStream(true).start();
            p.getOutputStream().close();
            byte[] out = p.getInputStream().readNBytes(4096);
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return Optional.empty();
            }
            return p.exitValue() == 0 ? parse(new String(out, StandardCharsets.UTF_8).strip(), name) : Optional.empty();
        } catch (IOException e) {
            return Optional.empty(); // no getent on this host
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }

    /** {@code name:password:uid:gid:gecos:home:shell}, if the line is {@code name}'s. */
    private static Optional<Account> parse(String line, String name) {
        String[] f = line.split(":", -1);
        if (f.length < 4 || !f[0].equals(name)) {
            return Optional.empty();
        }
        try {
            return Optional.of(new Account(name, Integer.parseInt(f[2]), Integer.parseInt(f[3])));
        } catch (NumberFormatException e) {
            return Optional.empty();
        }
    }

    private static int posixUid() {
        if (!Posix.supported(Path.of(System.getProperty("java.io.tmpdir", "/tmp")))) {
            return -1;
        }
        return Posix.currentUid();
    }
}
