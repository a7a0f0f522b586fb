package io.qvm.worker;

/** A finished render: the PNG and its pixel size. */
record Rendered(byte[] png, int width, int height) {
}
