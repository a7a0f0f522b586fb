package io.qvm.image;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class OciConfigTest {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    @Test
    void generatedConfigCarriesTheLimitsItWasGiven() throws Exception {
        WorkerLimits limits = new WorkerLimits(384, 3, 48, 512, 128);
        JsonNode c = MAPPER.readTree(OciConfig.forLimits(limits, OciConfig.JIT_LEVEL_TIERED));

        List<String> args = new ArrayList<>();
        c.path("process").path("args").forEach(a -> args.add(a.asText()));
        assertTrue(args.contains("-Xmx384m"), args.toString());
        assertTrue(args.contains("-XX:ActiveProcessorCount=3"), args.toString());
        assertTrue(args.contains("-XX:+UseSerialGC"), args.toString());
        assertTrue(args.contains("-XX:TieredStopAtLevel=4"), args.toString());
        assertEquals(OciConfig.JAVA_HOME + "/bin/java", args.get(0));
        assertEquals(List.of("-jar", OciConfig.WORKER_JAR), args.subList(args.size() - 2, args.size()));

        JsonNode tmp = null;
        for (JsonNode m : c.path("mounts")) {
            if (m.path("destination").asText().equals("/tmp")) {
                tmp = m;
            }
        }
        assertTrue(tmp != null, "no /tmp mount");
        assertEquals("tmpfs", tmp.path("type").asText());
        List<String> opts = new ArrayList<>();
        tmp.path("options").forEach(o -> opts.add(o.asText()));
        assertTrue(opts.contains("size=48m"), opts.toString());

        JsonNode rl = c.path("process").path("rlimits");
        assertEquals("RLIMIT_NOFILE", rl.get(0).path("type").asText());
        assertEquals(512, rl.get(0).path("hard").asInt());
        assertEquals(512, rl.get(0).path("soft").asInt());
        assertEquals("RLIMIT_NPROC", rl.get(1).path("type").asText());
        assertEquals(128, rl.get(1).path("hard").asInt());
    }

    /**
     * The worker's syscalls are deny-by-default: one allow list, {@code socket} only for
     * {@code AF_UNIX}, and none of the calls a sandbox must never make.
     */
    @Test
    void seccompDeniesByDefaultAndAllowsOnlyTheWorkersCalls() throws Exception {
        JsonNode s = MAPPER.readTree(OciConfig.forLimits(WorkerLimits.DEFAULTS, OciConfig.JIT_LEVEL_TIERED)).path("linux").path("seccomp");
        assertEquals("SCMP_ACT_ERRNO", s.path("defaultAction").asText(), s.toString());
        List<String> allowed = new ArrayList<>();
        JsonNode socketRule = null;
        for (JsonNode rule : s.path("syscalls")) {
            assertEquals("SCMP_ACT_ALLOW", rule.path("action").asText());
            List<String> names = new ArrayList<>();
            rule.path("names").forEach(n -> names.add(n.asText()));
            if (names.equals(List.of("socket"))) {
                socketRule = rule;
            } else {
                assertTrue(rule.path("args").isMissingNode(), "unconditional: " + names);
                allowed.addAll(names);
            }
        }
        assertEquals(SeccompProfile.ALLOWED, allowed);
        assertEquals(allowed.size(), new java.util.HashSet<>(allowed).size(), "each name once");
        for (String never : SeccompProfile.NEVER) {
            assertFalse(allowed.contains(never), never);
        }
        assertFalse(allowed.contains("socket"), "socket only with its argument rule");
        assertTrue(socketRule != null, "socket for AF_UNIX");
        JsonNode arg = socketRule.path("args").get(0);
        assertEquals(0, arg.path("index").asInt());
        assertEquals(1, arg.path("value").asInt());
        assertEquals("SCMP_CMP_EQ", arg.path("op").asText());
        assertEquals(1, socketRule.path("args").size());
        for (String needed : new String[] {"futex", "mmap", "clone3", "read", "write", "openat", "socketpair",
            "rt_sigreturn", "exit_group", "ioctl"}) {
            assertTrue(allowed.contains(needed), "the JVM needs " + needed);
        }
    }

    @Test
    void configIsTight() throws Exception {
        JsonNode c = MAPPER.readTree(OciConfig.forLimits(WorkerLimits.DEFAULTS, OciConfig.JIT_LEVEL_TIERED));
        assertEquals("1.0.2", c.path("ociVersion").asText());
        assertFalse(c.path("process").path("terminal").asBoolean(true));
        assertTrue(c.path("root").path("readonly").asBoolean());
        assertEquals(65534, c.path("process").path("user").path("uid").asInt());
        assertEquals(65534, c.path("process").path("user").path("gid").asInt());
        assertTrue(c.path("process").path("noNewPrivileges").asBoolean());
        JsonNode caps = c.path("process").path("capabilities");
        for (String set : new String[] {"bounding", "effective", "inheritable", "permitted", "ambient"}) {
            assertTrue(caps.path(set).isArray() && caps.path(set).isEmpty(), set + " not empty");
        }
        List<String> ns = new ArrayList<>();
        c.path("linux").path("namespaces").forEach(n -> ns.add(n.path("type").asText()));
        assertEquals(List.of("pid", "ipc", "uts", "mount", "network"), ns);
    }

    @Test
    void initSubstitutionOfTheTemplateGivesTheGeneratedConfig() {
        WorkerLimits limits = WorkerLimits.DEFAULTS.withXmxMib(700).withCpus(2).withTmpMib(100);
        // What the init's sed does: plain textual replacement of each placeholder.
        String filled = OciConfig.template(limits)
                .replace(OciConfig.XMX_PLACEHOLDER, "700")
                .replace(OciConfig.CPUS_PLACEHOLDER, "2")
                .replace(OciConfig.TMP_PLACEHOLDER, "100")
                .replace(OciConfig.JIT_LEVEL_PLACEHOLDER, "1");
        assertEquals(OciConfig.forLimits(limits, OciConfig.JIT_LEVEL_C1), filled);
        assertTrue(filled.contains("\"-XX:TieredStopAtLevel=1\""), filled);
    }

    @Test
    void limitsAreValidated() {
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(
                IllegalArgumentException.class, () -> WorkerLimits.DEFAULTS.withXmxMib(1));
        assertTrue(e.getMessage().contains("xmxMib"), e.getMessage());
    }
}
