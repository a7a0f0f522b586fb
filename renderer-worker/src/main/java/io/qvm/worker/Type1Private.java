package io.qvm.worker;

import java.nio.charset.StandardCharsets;

/**
 * The private part of a Type 1 font program as text: what follows {@code eexec}, hex-decoded if
 * it is hex, and decrypted (eexec, key 55665). Enough to read what the program declares.
 */
final class Type1Private {

    private static final byte[] EEXEC = "eexec".getBytes(StandardCharsets.US_ASCII);

    private Type1Private() {
    }

    /** The decrypted private part of {@code program}, as ISO-8859-1 text ("" without eexec). */
    static String decrypt(byte[] program) {
        int start = indexOf(program, EEXEC);
        if (start < 0) {
            return "";
        }
        start += EEXEC.length;
        while (start < program.length && isWhite(program[start])) {
            start++;
        }
        byte[] cipher = isHex(program, start) ? fromHex(program, start) : java.util.Arrays.copyOfRange(program,
                start, program.length);
        byte[] plain = new byte[cipher.length];
        int r = 55665;
        for (int i = 0; i < cipher.length; i++) {
            int c = cipher[i] & 0xFF;
            plain[i] = (byte) (c ^ (r >> 8));
            r = ((c + r) * 52845 + 22719) & 0xFFFF;
        }
        return new String(plain, StandardCharsets.ISO_8859_1);
    }

    /** The non-negative integer after whitespace at {@code from}, or 0. */
    static long integerAfter(String text, int from) {
        int i = from;
        while (i < text.length() && Character.isWhitespace(text.charAt(i))) {
            i++;
        }
        long n = 0;
        for (; i < text.length() && Character.isDigit(text.charAt(i)) && n < Integer.MAX_VALUE; i++) {
            n = n * 10 + (text.charAt(i) - '0');
        }
        return n;
    }

    private static int indexOf(byte[] data, byte[] what) {
        outer:
        for (int i = 0; i + what.length <= data.length; i++) {
            for (int j = 0; j < what.length; j++) {
                if (data[i + j] != what[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    private static boolean isWhite(byte b) {
        return b == ' ' || b == '\r' || b == '\n' || b == '\t' || b == '\f' || b == 0;
    }

    /** The private part is hex when its first four bytes are hex digits (as the Type 1 spec says). */
    private static boolean isHex(byte[] data, int start) {
        if (start + 4 > data.length) {
            return false;
        }
        for (int i = start; i < start + 4; i++) {
            if (Character.digit(data[i], 16) < 0) {
                return false;
            }
        }
        return true;
    }

    private static byte[] fromHex(byte[] data, int start) {
        byte[] out = new byte[(data.length - start) / 2 + 1];
        int n = 0;
        int high = -1;
        for (int i = start; i < data.length; i++) {
            int v = Character.digit(data[i], 16);
            if (v < 0) {
                continue;
            }
            if (high < 0) {
                high = v;
            } else {
                out[n++] = (byte) (high << 4 | v);
                high = -1;
            }
        }
        return java.util.Arrays.copyOf(out, n);
    }
}
