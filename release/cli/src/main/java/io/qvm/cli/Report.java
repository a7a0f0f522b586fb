package io.qvm.cli;

import java.io.PrintWriter;

/**
 * A command's output model: one value, rendered either as text ({@link #printText}) or as JSON
 * (Jackson serialises the record's components; the first is always {@code schema}).
 */
public interface Report {

    /** The JSON schema name and version, e.g. {@code qvm.ps/1}. */
    String schema();

    /** The human rendering, on stdout. */
    void printText(PrintWriter out);
}
