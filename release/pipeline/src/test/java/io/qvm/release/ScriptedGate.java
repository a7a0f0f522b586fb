package io.qvm.release;

import io.qvm.protocol.image.Arch;
import io.qvm.protocol.image.ImageDirectory;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * A {@link ReleaseGate} peer for the orchestrator's tests: per staged architecture it checks what
 * a boot would check first (the image directory verifies, as {@code GuestImage.load} does) and
 * reports a boot with phases; it can be told to fail a step or to change a staged file after the
 * check (what a gate must never do, and what {@code verify-staged} must catch).
 */
public final class ScriptedGate implements ReleaseGate {

    private final String failAt;
    private final Consumer<StagedImages> tamper;
    private StagedImages seen;

    /**
     * @param failAt the step to fail ({@code <arch>:boot} or {@code <arch>:render}), or null
     * @param tamper run after the steps passed (null: nothing)
     */
    public ScriptedGate(String failAt, Consumer<StagedImages> tamper) {
        this.failAt = failAt;
        this.tamper = tamper;
    }

    public static ScriptedGate passing() {
        return new ScriptedGate(null, null);
    }

    /** The images it was given. */
    public StagedImages seen() {
        return seen;
    }

    @Override
    public String name() {
        return "scripted";
    }

    @Override
    public GateResult run(StagedImages images, Consumer<String> progress) {
        seen = images;
        List<ReleaseStep> steps = new ArrayList<>();
        List<GateResult.Boot> boots = new ArrayList<>();
        for (Arch a : images.archs()) {
            ImageDirectory.Verified v = ImageDirectory.verify(images.dir(a), a);
            String boot = a.id() + ":boot";
            if (!v.ok() || boot.equals(failAt)) {
                steps.add(ReleaseStep.failed(boot, 5, v.ok() ? "BootFailedException: the worker exited with status 1"
                        + " before READY; console tail: qvm: phase=init uptime=0.51" : "refused: " + v.problems()));
                return new GateResult(name(), steps, boots);
            }
            steps.add(ReleaseStep.passed(boot, 7, "READY after 1234 ms on tcg"));
            boots.add(new GateResult.Boot(a, "tcg", a == Arch.X86_64 ? "q35" : "virt",
                    List.of(new GateResult.Phase("qmp-ready", 40), new GateResult.Phase("guest:init", 510),
                            new GateResult.Phase("worker-ready", 1234)), 1234));
            String render = a.id() + ":render";
            if (render.equals(failAt)) {
                steps.add(ReleaseStep.failed(render, 3, "hello.pdf: PARSE_ERROR"));
                return new GateResult(name(), steps, boots);
            }
            steps.add(ReleaseStep.passed(render, 3, "hello.svg → 64x64"));
        }
        if (tamper != null) {
            tamper.accept(images);
        }
        return new GateResult(name(), steps, boots);
    }
}
