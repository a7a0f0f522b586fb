package io.qvm.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.ConfigMapVolumeSource;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HTTPGetAction;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.PodSecurityContext;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.autoscaling.v2.HorizontalPodAutoscaler;
import io.fabric8.kubernetes.api.model.autoscaling.v2.MetricSpec;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyIngressRule;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPort;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import io.qvm.Accelerator;
import io.qvm.SandboxConfig;
import io.qvm.internal.process.CgroupTree;
import io.qvm.internal.qemu.MachineProfile;
import io.qvm.server.Tenants;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every kustomization under {@code kubernetes/} (the base and each overlay), rendered with
 * {@code kubectl kustomize} and read strictly into fabric8's typed model ({@link StrictModel}), then
 * held against what qvm serve is: its endpoints and --listen port, its drain, its users and
 * directories, and the memory its sandboxes take by {@link SandboxConfig}'s own numbers.
 */
@Tag("unit")
class ManifestsTest {

    /** The server JVM's share of the pod's memory (MiB): its -Xmx plus non-heap; the manifests' comments say the same. */
    static final long JVM_MIB = 1024;
    /** What a JVM takes beyond its heap (metaspace, code cache, threads), at least. */
    static final long JVM_NON_HEAP_MIB = 128;
    /** The startup probe must wait this long at least: a first template build under TCG. */
    static final Duration FIRST_START_UNDER_TCG = Duration.ofMinutes(15);
    static final String NAME_LABEL = "app.kubernetes.io/name";
    static final String TENANTS_CONFIGMAP = "qvm-serve-tenants";
    static final String TENANTS_KEY = "tenants.txt";

    static List<String> kustomizations() throws IOException {
        return Kustomize.kustomizations();
    }

    @Test
    void theKustomizationsAreTheBaseAndTheKvmOverlay() throws IOException {
        assertEquals(List.of("base", "overlays/kvm"), Kustomize.kustomizations(),
                "a new kustomization is checked here by every test below; say what else it must hold in its own test");
    }

    /** Every YAML file beside a kustomization.yaml is one it names: none lies there unused, unchecked. */
    @Test
    void everyManifestFileIsNamedByItsKustomization() throws IOException {
        List<String> problems = new ArrayList<>();
        for (String dir : Kustomize.kustomizations()) {
            Path d = Kustomize.ROOT.resolve(dir);
            List<String> items = Files.readAllLines(d.resolve("kustomization.yaml"), StandardCharsets.UTF_8).stream()
                    .filter(l -> l.startsWith("- ")).map(l -> l.substring(2).strip()).collect(Collectors.toList());
            try (Stream<Path> files = Files.list(d)) {
                for (Path f : files.filter(f -> f.toString().endsWith(".yaml")).collect(Collectors.toList())) {
                    String name = f.getFileName().toString();
                    if (!name.equals("kustomization.yaml") && !items.contains(name)) {
                        problems.add(dir + "/" + name);
                    }
                }
            }
        }
        assertEquals(List.of(), problems, "YAML files no kustomization.yaml names");
    }

    @ParameterizedTest
    @MethodSource("kustomizations")
    void everyObjectIsATypedKindWithoutUnknownFieldsAndTheSetIsComplete(String dir) {
        Rendered r = Rendered.of(dir); // StrictModel.parse: typed kinds, names, no unknown field
        for (Class<? extends HasMetadata> kind : List.of(Deployment.class, Service.class, PodDisruptionBudget.class,
                NetworkPolicy.class, ConfigMap.class, HorizontalPodAutoscaler.class)) {
            r.one(kind);
        }
        assertEquals(6, r.objects().size(), dir + ": " + r.objects().stream()
                .map(o -> o.getKind() + "/" + o.getMetadata().getName()).collect(Collectors.toList()));
        for (HasMetadata o : r.objects()) {
            Map<String, String> labels = o.getMetadata().getLabels();
            assertEquals("qvm-serve", labels == null ? null : labels.get(NAME_LABEL),
                    dir + ": " + o.getKind() + "/" + o.getMetadata().getName() + " carries " + NAME_LABEL);
        }
        assertEquals("ghcr.io/qvm-project/qvm-serve:0.1.0", r.serve().getImage(), dir + ": the image");
    }

    @ParameterizedTest
    @MethodSource("kustomizations")
    void theProbesAskQvmServesEndpointsOnItsListenPort(String dir) {
        Rendered r = Rendered.of(dir);
        Container c = r.serve();
        int port = r.serveArgs().listenPort();
        assertEquals(8080, port, dir + ": --listen 0.0.0.0:8080");
        assertEquals("0.0.0.0:8080", r.serveArgs().get("--listen"), dir + ": qvm serve listens on every address of the pod");
        assertTrue(c.getPorts().stream().anyMatch(p -> p.getContainerPort() == port && "http".equals(p.getName())),
                dir + ": the container port " + port + " is named http");
        probe(r, "startupProbe", c.getStartupProbe(), "/readyz", port);
        probe(r, "readinessProbe", c.getReadinessProbe(), "/readyz", port);
        probe(r, "livenessProbe", c.getLivenessProbe(), "/healthz", port);
        Probe s = c.getStartupProbe();
        long startupSeconds = (long) s.getPeriodSeconds() * s.getFailureThreshold();
        assertTrue(startupSeconds >= FIRST_START_UNDER_TCG.toSeconds(), dir + ": the startup probe gives up after "
                + startupSeconds + " s; a first start under TCG builds a template (" + FIRST_START_UNDER_TCG + ")");
    }

    private static void probe(Rendered r, String which, Probe p, String path, int port) {
        assertNotNull(p, r.dir() + ": a " + which);
        HTTPGetAction g = p.getHttpGet();
        assertNotNull(g, r.dir() + ": the " + which + " is an HTTP GET");
        assertEquals(path, g.getPath(), r.dir() + ": the " + which + "'s path");
        assertEquals(port, r.containerPort(g.getPort()), r.dir() + ": the " + which + "'s port");
        assertTrue(g.getScheme() == null || g.getScheme().equals("HTTP"), r.dir() + ": qvm serve speaks plain HTTP");
        assertTrue(g.getHttpHeaders() == null || g.getHttpHeaders().isEmpty(),
                r.dir() + ": /healthz and /readyz need no token");
    }

    @ParameterizedTest
    @MethodSource("kustomizations")
    void theServiceReachesTheListenPortOfTheDeploymentsPods(String dir) {
        Rendered r = Rendered.of(dir);
        Service s = r.one(Service.class);
        assertEquals("ClusterIP", s.getSpec().getType(), dir + ": a ClusterIP service");
        assertEquals(1, s.getSpec().getPorts().size(), dir + ": one service port");
        ServicePort p = s.getSpec().getPorts().get(0);
        assertEquals("http", p.getName(), dir + ": the service port is named http");
        assertEquals(8080, p.getPort(), dir + ": the service port");
        assertEquals(r.serveArgs().listenPort(), r.containerPort(p.getTargetPort()), dir + ": the target port is --listen's");
        Map<String, String> selector = s.getSpec().getSelector();
        assertTrue(selector != null && !selector.isEmpty(), dir + ": the service selects by label");
        Map<String, String> pod = r.podLabels();
        selector.forEach((k, v) -> assertEquals(v, pod.get(k), dir + ": the service's selector " + k + "=" + v
                + " against the pod's labels " + pod));
    }

    @ParameterizedTest
    @MethodSource("kustomizations")
    void theDeploymentPdbAndNetworkPolicySelectTheDeploymentsPods(String dir) {
        Rendered r = Rendered.of(dir);
        Map<String, String> pod = r.podLabels();
        Deployment d = r.deployment();
        assertTrue(Rendered.selects(d.getSpec().getSelector(), pod), dir + ": the Deployment's selector");
        PodDisruptionBudget pdb = r.one(PodDisruptionBudget.class);
        assertTrue(Rendered.selects(pdb.getSpec().getSelector(), pod), dir + ": the PodDisruptionBudget's selector");
        assertEquals(1, pdb.getSpec().getMaxUnavailable().getIntVal(), dir + ": maxUnavailable 1 (never blocks a drain)");
        assertNull(pdb.getSpec().getMinAvailable(), dir + ": maxUnavailable, not minAvailable");
        NetworkPolicy np = r.one(NetworkPolicy.class);
        assertTrue(Rendered.selects(np.getSpec().getPodSelector(), pod), dir + ": the NetworkPolicy's podSelector");
        assertFalse(Rendered.selects(np.getSpec().getPodSelector(), Map.of()), dir
                + ": the NetworkPolicy's podSelector is not empty (an empty one selects every pod of the namespace)");
    }

    @ParameterizedTest
    @MethodSource("kustomizations")
    void theNetworkPolicyLetsInTheListenPortAndLetsNothingOut(String dir) {
        Rendered r = Rendered.of(dir);
        NetworkPolicy np = r.one(NetworkPolicy.class);
        List<String> types = np.getSpec().getPolicyTypes();
        assertTrue(types != null && types.contains("Ingress") && types.contains("Egress"),
                dir + ": policyTypes Ingress and Egress (without Egress, egress stays open), got " + types);
        assertTrue(np.getSpec().getEgress() == null || np.getSpec().getEgress().isEmpty(),
                dir + ": no egress rule at all, got " + np.getSpec().getEgress());
        List<NetworkPolicyIngressRule> in = np.getSpec().getIngress();
        assertEquals(1, in.size(), dir + ": one ingress rule");
        List<NetworkPolicyPort> ports = in.get(0).getPorts();
        assertEquals(1, ports.size(), dir + ": the ingress rule names one port");
        NetworkPolicyPort p = ports.get(0);
        assertEquals("TCP", p.getProtocol(), dir + ": TCP");
        assertEquals(r.serveArgs().listenPort(), r.containerPort(p.getPort()), dir + ": the ingress port is --listen's");
        assertNull(p.getEndPort(), dir + ": one port, not a range");
    }

    @ParameterizedTest
    @MethodSource("kustomizations")
    void theContainerRunsAsAnUnprivilegedUserOnAReadOnlyRoot(String dir) {
        Rendered r = Rendered.of(dir);
        PodSpec spec = r.deployment().getSpec().getTemplate().getSpec();
        PodSecurityContext pod = spec.getSecurityContext();
        SecurityContext c = r.serve().getSecurityContext();
        assertNotNull(c, dir + ": the container's securityContext");
        assertEquals(Boolean.TRUE, c.getRunAsNonRoot(), dir + ": runAsNonRoot");
        assertEquals(10001L, c.getRunAsUser(), dir + ": the image's user, uid 10001");
        assertEquals(Boolean.TRUE, c.getReadOnlyRootFilesystem(), dir + ": readOnlyRootFilesystem");
        assertEquals(Boolean.FALSE, c.getAllowPrivilegeEscalation(), dir + ": allowPrivilegeEscalation false");
        assertNotEquals(Boolean.TRUE, c.getPrivileged(), dir + ": not privileged");
        assertNotNull(c.getCapabilities(), dir + ": capabilities");
        assertEquals(List.of("ALL"), c.getCapabilities().getDrop(), dir + ": every capability dropped");
        assertTrue(c.getCapabilities().getAdd() == null || c.getCapabilities().getAdd().isEmpty(),
                dir + ": none added");
        assertNotNull(c.getSeccompProfile(), dir + ": a seccomp profile");
        assertEquals("RuntimeDefault", c.getSeccompProfile().getType(), dir + ": seccomp RuntimeDefault");
        assertNotNull(pod, dir + ": the pod's securityContext");
        assertEquals(Boolean.TRUE, pod.getRunAsNonRoot(), dir + ": the pod's runAsNonRoot");
        assertEquals("RuntimeDefault", pod.getSeccompProfile().getType(), dir + ": the pod's seccomp RuntimeDefault");
        assertEquals(Boolean.FALSE, spec.getAutomountServiceAccountToken(), dir + ": no API token in a pod that renders "
                + "untrusted documents");
        assertTrue(spec.getHostNetwork() == null || !spec.getHostNetwork(), dir + ": no host network");
        assertTrue(spec.getHostPID() == null || !spec.getHostPID(), dir + ": no host PID namespace");
        assertTrue(spec.getVolumes().stream().allMatch(v -> v.getHostPath() == null), dir + ": no hostPath volume");
    }

    /** QVM_STATE, QVM_RUNTIME_DIR, QVM_CACHE and /tmp on writable emptyDirs; the tenants file from its ConfigMap, read-only. */
    @ParameterizedTest
    @MethodSource("kustomizations")
    void whatQvmWritesIsOnWritableEmptyDirsAndTheTenantsFileIsMountedReadOnly(String dir) {
        Rendered r = Rendered.of(dir);
        Container c = r.serve();
        List<Volume> volumes = r.deployment().getSpec().getTemplate().getSpec().getVolumes();
        Map<String, String> env = c.getEnv().stream().filter(e -> e.getValue() != null)
                .collect(Collectors.toMap(EnvVar::getName, EnvVar::getValue));
        for (String var : List.of("QVM_STATE", "QVM_RUNTIME_DIR", "QVM_CACHE")) {
            String path = env.get(var);
            assertNotNull(path, dir + ": " + var + " is set (its default is under a home directory on a read-only root)");
            VolumeMount m = mountOf(c, path).orElseThrow(() -> new AssertionError(dir + ": " + var + "=" + path
                    + " is on no volume, so on the read-only root"));
            assertNotEquals(Boolean.TRUE, m.getReadOnly(), dir + ": " + var + "'s mount is writable");
            assertNotNull(volume(volumes, m.getName()).getEmptyDir(), dir + ": " + var + " is on an emptyDir");
        }
        VolumeMount tmp = mountOf(c, "/tmp").orElseThrow(() -> new AssertionError(dir + ": /tmp (the JVM's tmpdir) "
                + "is on no volume"));
        assertNotNull(volume(volumes, tmp.getName()).getEmptyDir(), dir + ": /tmp is an emptyDir");
        assertNotEquals(Boolean.TRUE, tmp.getReadOnly(), dir + ": /tmp is writable");

        String tokens = r.serveArgs().get("--tokens");
        assertEquals("/etc/qvm/tenants.txt", tokens, dir + ": --tokens");
        assertFalse(r.serveArgs().flags().contains("--insecure-no-auth"), dir + ": never --insecure-no-auth");
        VolumeMount m = mountOf(c, tokens).orElseThrow(() -> new AssertionError(dir + ": --tokens " + tokens
                + " is on no volume"));
        assertEquals(Boolean.TRUE, m.getReadOnly(), dir + ": the tenants file's mount is read-only");
        ConfigMapVolumeSource src = volume(volumes, m.getName()).getConfigMap();
        assertNotNull(src, dir + ": the tenants file comes from a ConfigMap");
        ConfigMap cm = r.one(ConfigMap.class);
        assertEquals(cm.getMetadata().getName(), src.getName(), dir + ": the volume names the ConfigMap rendered here");
        assertEquals(TENANTS_CONFIGMAP, src.getName(), dir + ": the ConfigMap's name");
        String inVolume = Path.of(m.getMountPath()).relativize(Path.of(tokens)).toString();
        String key = src.getItems() == null || src.getItems().isEmpty() ? inVolume
                : src.getItems().stream().filter(i -> i.getPath().equals(inVolume)).map(i -> i.getKey()).findFirst()
                        .orElseThrow(() -> new AssertionError(dir + ": no item of the ConfigMap volume is " + inVolume));
        assertEquals(TENANTS_KEY, key, dir + ": --tokens is the ConfigMap's key " + TENANTS_KEY);
        assertNotNull(cm.getData().get(key), dir + ": the ConfigMap has the key " + key);
    }

    private static Optional<VolumeMount> mountOf(Container c, String path) {
        Path p = Path.of(path);
        return c.getVolumeMounts().stream().filter(m -> m.getSubPath() == null && p.startsWith(Path.of(m.getMountPath())))
                .max((a, b) -> Integer.compare(a.getMountPath().length(), b.getMountPath().length()));
    }

    private static Volume volume(List<Volume> volumes, String name) {
        return volumes.stream().filter(v -> v.getName().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no volume " + name));
    }

    /**
     * As shipped, the tenants file lists no tenant — qvm serve then refuses to start rather than serve
     * without tokens — and its example line is one qvm serve would accept.
     */
    @Test
    void theShippedTenantsFileListsNoTenantAndItsExampleParses() {
        Rendered r = Rendered.of("base");
        String file = r.one(ConfigMap.class).getData().get(TENANTS_KEY);
        IllegalArgumentException none = assertThrows(IllegalArgumentException.class,
                () -> Tenants.parse(file.lines().collect(Collectors.toList()), TENANTS_KEY));
        assertTrue(none.getMessage().contains("no tenant is listed"), none.getMessage());
        Matcher m = Pattern.compile("(?m)^#\\s*([A-Za-z0-9._-]+:[0-9a-fA-F]{64})\\s*$").matcher(file);
        assertTrue(m.find(), "the tenants file has a commented example line NAME:<sha256 hex>:\n" + file);
        Tenants example = Tenants.parse(List.of(m.group(1)), "the example");
        assertEquals(1, example.names().size());
        assertEquals("example", example.authenticate("test").orElse(null), "the example's hash is the token 'test''s");
    }

    /**
     * requests.memory >= max-sandboxes x (memoryMib + QEMU's overhead + TCG's translation cache) + the
     * server JVM, from SandboxConfig's defaults and the container's --max-sandboxes/--memory; limits
     * no lower. The JVM is held to its share by -Xmx.
     */
    @ParameterizedTest
    @MethodSource("kustomizations")
    void theMemoryRequestCoversEverySandboxAndTheJvm(String dir) {
        Rendered r = Rendered.of(dir);
        ServeArgs args = r.serveArgs();
        SandboxConfig config = args.config();
        long tb = config.accelerator() == Accelerator.KVM ? 0 : MachineProfile.TCG_TB_MIB; // AUTO may fall back to TCG
        long perSandbox = config.memoryMib() + CgroupTree.QEMU_OVERHEAD_MIB + tb;
        long neededMib = args.maxSandboxes() * perSandbox + JVM_MIB;
        Map<String, Quantity> requests = r.serve().getResources().getRequests();
        Map<String, Quantity> limits = r.serve().getResources().getLimits();
        BigDecimal request = Quantity.getAmountInBytes(requests.get("memory"));
        BigDecimal limit = Quantity.getAmountInBytes(limits.get("memory"));
        String formula = args.maxSandboxes() + " x (" + config.memoryMib() + " + " + CgroupTree.QEMU_OVERHEAD_MIB + " + "
                + tb + ") + " + JVM_MIB + " = " + neededMib + " MiB";
        assertTrue(request.compareTo(mib(neededMib)) >= 0, dir + ": requests.memory " + requests.get("memory")
                + " is below " + formula);
        assertTrue(limit.compareTo(request) >= 0, dir + ": limits.memory " + limits.get("memory") + " is below the request");

        String jto = r.serve().getEnv().stream().filter(e -> e.getName().equals("JAVA_TOOL_OPTIONS"))
                .map(EnvVar::getValue).findFirst().orElse("");
        Matcher xmx = Pattern.compile("-Xmx(\\d+)([mMgG])").matcher(jto);
        assertTrue(xmx.find(), dir + ": JAVA_TOOL_OPTIONS sets -Xmx (without it the JVM takes a quarter of the "
                + "container's limit, beyond its share): '" + jto + "'");
        long heapMib = Long.parseLong(xmx.group(1)) * (xmx.group(2).equalsIgnoreCase("g") ? 1024 : 1);
        assertTrue(heapMib + JVM_NON_HEAP_MIB <= JVM_MIB, dir + ": -Xmx" + heapMib + "m leaves less than "
                + JVM_NON_HEAP_MIB + " MiB of the JVM's " + JVM_MIB + " MiB for its non-heap memory");
        // the request bodies held at once (about three copies of each on the heap) leave the heap room
        String buffered = args.get("--max-buffered-mib");
        assertTrue(buffered != null, dir + ": --max-buffered-mib bounds the request bodies on the heap (its default "
                + "follows the largest body, 32 MiB, times the queue)");
        assertTrue(3 * Long.parseLong(buffered) + JVM_NON_HEAP_MIB <= heapMib, dir + ": 3 x --max-buffered-mib "
                + buffered + " does not fit the heap of " + heapMib + " MiB with room to spare");

        // CPU: qvm's own cpu.max lets a sandbox use vcpus + 0.5 CPUs; the limit covers every sandbox.
        double perSandboxCpus = config.vcpus() + (double) CgroupTree.EMULATOR_CPU_MICROS / CgroupTree.CPU_PERIOD_MICROS;
        BigDecimal cpuLimit = Quantity.getAmountInBytes(limits.get("cpu"));
        assertTrue(cpuLimit.doubleValue() >= args.maxSandboxes() * perSandboxCpus, dir + ": limits.cpu " + limits.get("cpu")
                + " is below " + args.maxSandboxes() + " x " + perSandboxCpus);
        assertNotNull(requests.get("cpu"), dir + ": a CPU request (the autoscaler's utilization is relative to it)");
    }

    private static BigDecimal mib(long mib) {
        return BigDecimal.valueOf(mib).multiply(BigDecimal.valueOf(1024L * 1024L));
    }

    @ParameterizedTest
    @MethodSource("kustomizations")
    void theGracePeriodOutlastsTheDrain(String dir) {
        Rendered r = Rendered.of(dir);
        Duration drain = r.serveArgs().drain();
        Long grace = r.deployment().getSpec().getTemplate().getSpec().getTerminationGracePeriodSeconds();
        assertNotNull(grace, dir + ": terminationGracePeriodSeconds (the default, 30 s, cuts the drain short)");
        assertTrue(grace > drain.toSeconds(), dir + ": terminationGracePeriodSeconds " + grace
                + " must outlast the drain, requestTimeout + bootTimeout = " + drain.toSeconds() + " s");
        assertEquals(SandboxConfig.defaults().requestTimeout().plus(SandboxConfig.defaults().bootTimeout()), drain,
                dir + ": the drain the comments speak of (60 s + 180 s)");
    }

    @ParameterizedTest
    @MethodSource("kustomizations")
    void thePoolIsSizedAsDocumented(String dir) {
        ServeArgs args = Rendered.of(dir).serveArgs();
        assertEquals("2", args.get("--max-sandboxes"), dir + ": --max-sandboxes");
        assertEquals("1", args.get("--min-idle"), dir + ": --min-idle");
        assertTrue(args.minIdle() <= args.maxSandboxes(), dir + ": --min-idle <= --max-sandboxes (qvm serve refuses else)");
    }

    @ParameterizedTest
    @MethodSource("kustomizations")
    void theAutoscalerScalesTheDeploymentOnCpu(String dir) {
        Rendered r = Rendered.of(dir);
        HorizontalPodAutoscaler hpa = r.one(HorizontalPodAutoscaler.class);
        Deployment d = r.deployment();
        assertEquals("Deployment", hpa.getSpec().getScaleTargetRef().getKind(), dir + ": the HPA's target kind");
        assertEquals("apps/v1", hpa.getSpec().getScaleTargetRef().getApiVersion(), dir + ": the HPA's target apiVersion");
        assertEquals(d.getMetadata().getName(), hpa.getSpec().getScaleTargetRef().getName(), dir + ": the HPA's target");
        assertTrue(hpa.getSpec().getMinReplicas() != null && hpa.getSpec().getMinReplicas() >= 2,
                dir + ": at least 2 replicas, so one serves while the other drains");
        assertTrue(hpa.getSpec().getMaxReplicas() >= hpa.getSpec().getMinReplicas(), dir + ": max >= min");
        List<MetricSpec> metrics = hpa.getSpec().getMetrics();
        assertTrue(metrics.stream().anyMatch(m -> "Resource".equals(m.getType()) && "cpu".equals(m.getResource().getName())
                && m.getResource().getTarget().getAverageUtilization() != null), dir + ": a CPU utilization metric");
    }

    @Test
    void theBaseRunsTcgAndNeedsNoDevice() {
        Rendered r = Rendered.of("base");
        assertEquals(Accelerator.TCG, r.serveArgs().accelerator(), "the base runs on any node: --accelerator tcg");
        for (Map<String, Quantity> m : List.of(r.serve().getResources().getRequests(), r.serve().getResources().getLimits())) {
            assertEquals(List.of(), m.keySet().stream().filter(k -> k.contains("/")).collect(Collectors.toList()),
                    "the base asks for no device");
        }
    }
}
