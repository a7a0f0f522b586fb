#!/usr/bin/env bash
# Makes sure this host has what building and running qvm needs. On Debian/Ubuntu it installs the
# missing packages with apt when run as root; otherwise it prints the exact command and fails.
# As root on Linux it also creates the unprivileged user QEMU drops to (QVM_QEMU_USER, default
# qvm): qvm never runs QEMU as root, and refuses to start one when that user is missing.
# Usage: scripts/prereqs.sh [--quiet]
set -euo pipefail

quiet=0
[ "${1:-}" = "--quiet" ] && quiet=1
say() { [ "$quiet" = 1 ] || echo "[prereqs] $*" >&2; }

os=$(uname -s)
arch=$(uname -m)

case "$os" in
  Darwin)
    missing=()
    command -v java >/dev/null || missing+=("openjdk@17")
    command -v mvn >/dev/null || missing+=("maven")
    command -v qemu-system-aarch64 >/dev/null || missing+=("qemu")
    if [ ${#missing[@]} -gt 0 ]; then
      echo "[prereqs] missing: ${missing[*]} — install with: brew install ${missing[*]}" >&2
      exit 1
    fi
    exit 0 ;;
  Linux) ;;
  *)
    echo "[prereqs] $os: install QEMU (https://www.qemu.org/download/#windows), a JDK 17+ and Maven, then re-run." >&2
    exit 1 ;;
esac

# command → Debian package that provides it
declare -A need=(
  [java]=openjdk-17-jdk-headless
  [jlink]=openjdk-17-jdk-headless
  [mvn]=maven
  [qemu-system-x86_64]=qemu-system-x86
  [qemu-system-aarch64]=qemu-system-arm
  [dpkg-deb]=dpkg
  [apt-get]=apt
  [gzip]=gzip
)
pkgs=()
for cmd in "${!need[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || pkgs+=("${need[$cmd]}")
done
# A static busybox: the command-line test boots a throwaway initramfs built around it.
[ -x /bin/busybox ] || [ -x /usr/bin/busybox ] || pkgs+=(busybox-static)
# Fonts the in-process renderer tests use on the host JVM.
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || pkgs+=(fonts-dejavu-core)
# CA certificates let apt and Maven reach their registries over https.
[ -d /etc/ssl/certs ] && [ -n "$(ls -A /etc/ssl/certs 2>/dev/null)" ] || pkgs+=(ca-certificates)

# The unprivileged user a root qvm has QEMU drop to (-runas); a system account, no home, no login.
ensure_qemu_user() {
  local user="${QVM_QEMU_USER:-qvm}"
  [ "$(id -u)" = 0 ] || return 0
  getent passwd "$user" >/dev/null 2>&1 && return 0
  if ! command -v useradd >/dev/null 2>&1; then
    echo "[prereqs] QEMU needs an unprivileged user '$user' to run as; create one (no home, no login shell)" >&2
    exit 1
  fi
  echo "[prereqs] creating the unprivileged user '$user' QEMU runs as" >&2
  useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
}

if [ ${#pkgs[@]} -eq 0 ]; then
  say "all prerequisites present ($(qemu-system-x86_64 --version | head -1))"
  ensure_qemu_user
  exit 0
fi
mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | sort -u)
if ! command -v apt-get >/dev/null 2>&1; then
  echo "[prereqs] missing: ${pkgs[*]} — install them with your package manager, then re-run." >&2
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  echo "[prereqs] missing packages: ${pkgs[*]}" >&2
  echo "[prereqs] run: sudo apt-get update && sudo apt-get install -y --no-install-recommends ${pkgs[*]}" >&2
  exit 1
fi
say "installing: ${pkgs[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >&2
say "installed: ${pkgs[*]}"
ensure_qemu_user
