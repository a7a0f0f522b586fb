#!/usr/bin/env bash
# Builds the guest image end to end from the repository root (temporary helper until
# `./qvm image build` covers it; same arguments as ImageBuildMain's "build"):
#
#   initramfs-build/build-image.sh [--arch x86_64|aarch64|all] [--out DIR] [--worker-jar PATH] [--json]
#
# 1. packages the worker (renderer-worker/target/renderer-worker.jar) and the image builder,
# 2. runs io.qvm.image.ImageBuildMain build: pinned .debs are fetched into $QVM_CACHE
#    (default ~/.cache/qvm) and verified, and <out>/<arch>/{vmlinuz,initramfs.cpio.lz4,
#    manifest.json,SHA256SUMS} are written (default out: $QVM_IMAGE_DIR or out/image).
# Needs: a JDK 17 (jlink), Maven, apt-get and dpkg-deb (Debian/Ubuntu host).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
echo "[image] packaging renderer-worker, rootfs and initramfs-build (mvn)" >&2
mvn -q -o -DskipTests -pl renderer-worker,rootfs,initramfs-build -am package >&2 \
  || mvn -q -DskipTests -pl renderer-worker,rootfs,initramfs-build -am package >&2
exec java -jar "$ROOT/initramfs-build/target/qvm-image.jar" build "$@"
