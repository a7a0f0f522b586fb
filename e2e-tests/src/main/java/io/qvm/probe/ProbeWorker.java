package io.qvm.probe;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A worker that reports what a compromised worker could see and reach from inside the sandbox.
 * Tests build an image with it in place of the renderer (the image build takes any worker jar)
 * and boot it with the real QEMU command line, the real init and runsc.
 *
 * <p>Protocol, one line each way on its stdio (the worker port): it writes {@code qvm-probe:
 * ready}; the host answers {@code probe <port>}, the port of a server the test runs on the host's
 * loopback; the probe writes one JSON object and exits. It reports:
 * <ul>
 * <li>{@code interfaces}: every network interface with its addresses (or why it could not list
 * them: the worker's seccomp profile denies an {@code AF_INET} socket); {@code proc_net_dev}: the
 * interface names the kernel lists; {@code routes}: the IPv4 and IPv6 routing tables from
 * {@code /proc/net};</li>
 * <li>{@code connect}: a TCP connect (2 s) to {@code 127.0.0.1:<port>} (the sandbox's own
 * loopback) and to {@code 10.0.2.2:<port>} (where QEMU's user networking would put the host's
 * loopback); it never sends to any other address;</li>
 * <li>{@code kernel}: {@code os.version} and {@code /proc/version} as the worker sees them;</li>
 * <li>{@code read}: what of {@code /proc}, {@code /sys} and {@code /dev} it can read or list;</li>
 * <li>{@code write}: for each directory of the root, whether it can create a file there.</li>
 * </ul>
 * JDK only, so it runs on the image's trimmed JRE; the JSON is written by hand for the same reason.
 */
public final class ProbeWorker {

    /** Paths whose reading (or listing, for directories) the probe reports. */
    static final List<String> READ = List.of("/proc/version", "/proc/cmdline", "/proc/cpuinfo", "/proc/meminfo",
            "/proc/kcore", "/proc/keys", "/proc/sysrq-trigger", "/proc/1/cmdline", "/proc/1/environ",
            "/proc/self/mountinfo", "/proc/net/dev", "/sys/firmware", "/sys/class/net", "/sys/class/virtio-ports",
            "/sys/kernel", "/dev", "/dev/mem", "/dev/kmsg", "/dev/vport0p1", "/dev/vport0p2", "/dev/vport0p3",
            "/dev/hvc0", "/dev/ttyS0", "/dev/console", "/dev/kvm", "/bundle", "/run/runsc", "/init", "/etc/passwd");

    /** Directories in which the probe tries to create a file. */
    static final List<String> WRITE = List.of("/", "/bin", "/dev", "/etc", "/opt", "/opt/qvm", "/proc", "/root",
            "/run", "/sys", "/tmp", "/usr", "/var");

    private ProbeWorker() {
    }

    public static void main(String[] args) throws IOException {
        OutputStream out = System.out;
        out.write("qvm-probe: ready\n".getBytes(StandardCharsets.US_ASCII));
        out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        String line = in.readLine();
        int port = line != null && line.startsWith("probe ") ? Integer.parseInt(line.substring(6).strip()) : 9;
        Map<String, Object> report = new LinkedHashMap<>();
        report.put("interfaces", interfaces());
        report.put("proc_net_dev", procNetDev());
        Map<String, Object> routes = new LinkedHashMap<>();
        routes.put("ipv4", tableRows("/proc/net/route", true));
        routes.put("ipv6", tableRows("/proc/net/ipv6_route", false));
        report.put("routes", routes);
        Map<String, Object> connect = new LinkedHashMap<>();
        for (String host : new String[] {"127.0.0.1", "10.0.2.2"}) {
            connect.put(host + ":" + port, connect(host, port));
        }
        report.put("connect", connect);
        Map<String, Object> kernel = new LinkedHashMap<>();
        kernel.put("os.version", System.getProperty("os.version"));
        kernel.put("proc_version", readText("/proc/version").strip());
        report.put("kernel", kernel);
        Map<String, Object> read = new LinkedHashMap<>();
        for (String p : READ) {
            read.put(p, read(p));
        }
        report.put("read", read);
        Map<String, Object> write = new LinkedHashMap<>();
        for (String d : WRITE) {
            write.put(d, write(d));
        }
        report.put("write", write);
        out.write((json(report) + "\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    private static List<Object> interfaces() {
        List<Object> all = new ArrayList<>();
        try {
            for (NetworkInterface ni : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("name", ni.getName());
                m.put("up", ni.isUp());
                m.put("loopback", ni.isLoopback());
                List<Object> addrs = new ArrayList<>();
                for (InetAddress a : Collections.list(ni.getInetAddresses())) {
                    addrs.add(a.getHostAddress());
                }
                m.put("addresses", addrs);
                all.add(m);
            }
        } catch (IOException | RuntimeException e) {
            all.add("error: " + e);
        }
        return all;
    }

    /** The interface names of /proc/net/dev (readable even where the seccomp profile denies an AF_INET socket). */
    private static List<Object> procNetDev() {
        List<Object> names = new ArrayList<>();
        try {
            for (String l : Files.readAllLines(Path.of("/proc/net/dev"))) {
                int colon = l.indexOf(':');
                if (colon > 0) {
                    names.add(l.substring(0, colon).strip());
                }
            }
        } catch (IOException | RuntimeException e) {
            names.add("error: " + e);
        }
        return names;
    }

    /** The rows of a /proc/net table, without the header (IPv4) and without loopback routes. */
    private static List<Object> tableRows(String file, boolean header) {
        List<Object> rows = new ArrayList<>();
        try {
            List<String> lines = Files.readAllLines(Path.of(file));
            for (String l : header && !lines.isEmpty() ? lines.subList(1, lines.size()) : lines) {
                String[] f = l.trim().split("\\s+");
                String iface = header ? f[0] : f[f.length - 1];
                if (!l.isBlank() && !iface.equals("lo")) {
                    rows.add(l.trim());
                }
            }
        } catch (IOException | RuntimeException e) {
            rows.add("error: " + e);
        }
        return rows;
    }

    private static String connect(String host, int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(InetAddress.getByName(host), port), 2000);
            return "connected";
        } catch (IOException | RuntimeException e) {
            return "refused: " + e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    private static String read(String path) {
        Path p = Path.of(path);
        try {
            if (Files.isDirectory(p)) {
                List<String> names = new ArrayList<>();
                try (DirectoryStream<Path> ds = Files.newDirectoryStream(p)) {
                    ds.forEach(e -> names.add(e.getFileName().toString()));
                }
                Collections.sort(names);
                return "listed: " + String.join(" ", names);
            }
            try (InputStream in = Files.newInputStream(p)) {
                return "read: " + in.readNBytes(4096).length + " bytes";
            }
        } catch (IOException | RuntimeException e) {
            return "denied: " + e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    private static String readText(String path) {
        try {
            return new String(Files.readAllBytes(Path.of(path)), StandardCharsets.UTF_8);
        } catch (IOException | RuntimeException e) {
            return "error: " + e;
        }
    }

    private static String write(String dir) {
        try {
            Path f = Files.createTempFile(Path.of(dir), "qvm-probe", ".txt");
            Files.delete(f);
            return "writable";
        } catch (IOException | RuntimeException e) {
            return "denied: " + e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    /** JSON for maps, lists, strings and booleans: all this report holds. */
    static String json(Object v) {
        if (v instanceof Map<?, ?> m) {
            StringBuilder sb = new StringBuilder("{");
            m.forEach((k, x) -> sb.append(sb.length() > 1 ? "," : "").append(json(k.toString())).append(':')
                    .append(json(x)));
            return sb.append('}').toString();
        }
        if (v instanceof List<?> l) {
            StringBuilder sb = new StringBuilder("[");
            l.forEach(x -> sb.append(sb.length() > 1 ? "," : "").append(json(x)));
            return sb.append(']').toString();
        }
        if (v instanceof Boolean b) {
            return b.toString();
        }
        StringBuilder sb = new StringBuilder("\"");
        for (char c : v.toString().toCharArray()) {
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        return sb.append('"').toString();
    }
}
