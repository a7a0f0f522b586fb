package io.qvm.internal.template;

import io.qvm.SandboxException;

/**
 * A template could not be built, verified or restored. The backend answers it by rebuilding the
 * template or by falling back (full migration, then cold boot), each said once with this message.
 */
public class TemplateException extends SandboxException {
    private static final long serialVersionUID = 1L;

    public TemplateException(String message) {
        super(message);
    }

    public TemplateException(String message, Throwable cause) {
        super(message, cause);
    }
}
