package io.qvm.cli;

import picocli.CommandLine.Option;

/** The {@code --json} mixin: the command's one output model as JSON on stdout instead of text. */
public final class JsonOption {

    @Option(names = "--json", description = "Print the result as JSON on stdout (schema in the help footer and docs/cli-json.md).")
    boolean json;

    public boolean enabled() {
        return json;
    }
}
