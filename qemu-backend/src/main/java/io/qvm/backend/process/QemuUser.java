package io.qvm.backend.process;

import io.qvm.HostSetupException;
import io.qvm.backend.QvmEnvironment;
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
    public static final String DEFAULT_USER = "qvm";

    /** The command that creates {@code user}: a system account with no home and no login shell. */
    public static String createCommand(String user) {
        return "useradd --system --no-create-home --shell /usr/sbin/nologin " + user;
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

        /** {@code /etc/passwd}, then {@code getent passwd} (which also asks NSS: LDAP, sssd…). */
        static Accounts system() {
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

    private QemuUser(int hostUid, String wanted, Accounts accounts) {
        this.hostUid = hostUid;
        this.wanted = Objects.requireNonNull(wanted, "wanted");
        this.accounts = Objects.requireNonNull(accounts, "accounts");
    }

    /** This process's uid, {@code QVM_QEMU_USER} (default {@value #DEFAULT_USER}), the system's accounts. */
    public static QemuUser system() {
        return system(QvmEnvironment.system());
    }

    /** As {@link #system()}, with the user from {@code env}. */
    public static QemuUser system(QvmEnvironment env) {
        return new QemuUser(posixUid(), env.qemuUser(), Accounts.system());
    }

    /**
     * A policy for a host process of {@code hostUid} (-1: not a POSIX host) that drops QEMU to
     * {@code wanted} when {@code hostUid} is 0, looked up in {@code accounts}.
     */
    public static QemuUser of(int hostUid, String wanted, Accounts accounts) {
        return new QemuUser(hostUid, wanted, accounts);
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
                    + "), which does not exist on this host. Create it: " + createCommand(wanted)
                    + " (./qvm does this when run as root), or set " + QvmEnvironment.QEMU_USER
                    + " to an existing unprivileged user");
        }
        if (account.get().uid() == 0 || account.get().gid() == 0) {
            throw new HostSetupException(HostSetupException.Problem.HOST_SETUP_NEEDED, QvmEnvironment.QEMU_USER + "='"
                    + wanted + "' has uid " + account.get().uid() + " and gid " + account.get().gid()
                    + ": QEMU must not run as root; use an unprivileged user (" + createCommand(DEFAULT_USER) + ")");
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
