package io.qvm.image;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/** Runs a host command and captures its output; failures carry the command and its stderr. */
final class Proc {
    record Result(int exit, String out, String err) {
    }

    private Proc() {
    }

    static Result run(List<String> cmd, Path cwd) {
        ProcessBuilder pb = new ProcessBuilder(cmd);
        if (cwd != null) {
            pb.directory(cwd.toFile());
        }
        pb.environment().put("LC_ALL", "C");
        try {
            Process p = pb.start();
            p.getOutputStream().close();
            CompletableFuture<byte[]> err = CompletableFuture.supplyAsync(() -> {
                try {
                    return p.getErrorStream().readAllBytes();
                } catch (IOException e) {
                    return new byte[0];
                }
            });
            byte[] out = p.getInputStream().readAllBytes();
            int rc = p.waitFor();
            return new Result(rc, new String(out, StandardCharsets.UTF_8),
                    new String(err.join(), StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new ImageException("cannot run " + cmd.get(0) + " (" + e.getMessage() + "): the "
                    + "image build needs it on the PATH (Debian: apt-get install "
                    + packageOf(cmd.get(0)) + ")", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ImageException("interrupted while running " + String.join(" ", cmd), e);
        }
    }

    /** Runs and fails unless the exit code is 0. */
    static String check(List<String> cmd, Path cwd) {
        Result r = run(cmd, cwd);
        if (r.exit() != 0) {
            throw new ImageException("command failed (exit " + r.exit() + "): " + String.join(" ", cmd)
                    + "\n" + tail(r.err() + r.out(), 2000));
        }
        return r.out();
    }

    static String tail(String s, int max) {
        return s.length() <= max ? s.strip() : "..." + s.substring(s.length() - max).strip();
    }

    private static String packageOf(String tool) {
        return switch (tool) {
            case "apt-get", "apt-cache" -> "apt";
            case "dpkg-deb" -> "dpkg";
            default -> tool;
        };
    }
}
