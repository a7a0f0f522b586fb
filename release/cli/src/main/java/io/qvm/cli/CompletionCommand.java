package io.qvm.cli;

import java.util.concurrent.Callable;
import picocli.AutoComplete;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code qvm completion}: the bash/zsh completion script. */
@Command(name = "completion", description = {"Print the bash (and zsh) completion script.",
    "Use: source <(qvm completion)   or   qvm completion > /etc/bash_completion.d/qvm"})
final class CompletionCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        spec.commandLine().getOut().print(AutoComplete.bash("qvm", spec.root().commandLine()));
        spec.commandLine().getOut().flush();
        return ExitCode.OK.code();
    }
}
