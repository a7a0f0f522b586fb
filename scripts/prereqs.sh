#!/usr/bin/env bash
# Makes sure this host has what building and running qvm needs: QEMU, a JDK 17 or later and Maven
# (the checkout's wrapper, ./mvnw, stands in for a missing Maven). What is missing is named with
# the exact command that installs it, and the script exits 1; with everything present it exits 0.
#
#  - Linux: also the image build's tools (dpkg-deb, apt-get, gzip), a JDK with jlink, busybox, fonts
#    and certificates (the tests use them).
#    On Debian/Ubuntu as root it installs the missing packages with apt, otherwise it prints the
#    apt-get line. As root it also creates the unprivileged user QEMU drops to (QVM_QEMU_USER,
#    default qvm): qvm never runs QEMU as root, and refuses to start one when that user is missing.
#  - macOS: a real JDK (/usr/libexec/java_home -v 17+, or Homebrew's keg-only openjdk@17, found
#    even though it is not on PATH; /usr/bin/java alone is a stub that may have no JDK behind it).
#  - Windows (Git Bash, MSYS2, Cygwin): qemu-system-x86_64.exe on PATH, in $QVM_QEMU or in
#    C:\Program Files\qemu, and a JDK from JAVA_HOME, PATH or the usual install directories.
#    The macOS and Windows paths are tested here under a stubbed uname only: untested on a real host.
#
# Usage: scripts/prereqs.sh [--quiet] [--env] [--test]
#   --quiet  say nothing when all is well
#   --env    print what was found on stdout, one NAME=value a line, for the ./qvm launcher:
#            JAVA_HOME=<the JDK's home> and QVM_MVN=<mvn, or this checkout's mvnw>
#   --test   also what `./qvm test` needs: shellcheck, for the test that checks the scripts, and on
#            Linux kubectl, whose `kubectl kustomize` the deployment manifests' tests render with
#            (release/deploy; Debian's kubernetes-client, kubectl 1.20, is enough). On macOS and
#            Windows a missing kubectl is only named: those tests then skip, saying so.
# Every message goes to stderr. QVM_PREREQS_ROOT (tests only) names a directory that stands for /
# wherever this script looks at a fixed path.
# Written for bash 3.2 (macOS's /bin/bash): no associative arrays, no mapfile, no empty "${a[@]}".
set -euo pipefail

quiet=0
print_env=0
for_tests=0
for arg in "$@"; do
  case "$arg" in
    --quiet) quiet=1 ;;
    --env) print_env=1 ;;
    --test) for_tests=1 ;;
    *) echo "[prereqs] unknown option '$arg'; usage: scripts/prereqs.sh [--quiet] [--env] [--test]" >&2; exit 2 ;;
  esac
done
say() { [ "$quiet" = 1 ] || echo "[prereqs] $*" >&2; }
tell() { echo "[prereqs] $*" >&2; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
R="${QVM_PREREQS_ROOT:-}"
os=$(uname -s)
arch=$(uname -m)
case "$os" in
  Darwin) host=macos ;;
  Linux) host=linux ;;
  MINGW*|MSYS*|CYGWIN*) host=windows ;;
  *) host=other ;;
esac

# A Windows path (C:\Program Files\qemu) as this shell names it (/c/Program Files/qemu on MSYS,
# /cygdrive/c/… on Cygwin); any other path unchanged.
to_unix() {
  case "$1" in
    [A-Za-z]:[\\/]*)
      if command -v cygpath >/dev/null 2>&1 && cygpath -u "$1" 2>/dev/null; then
        :
      else
        local drive rest
        drive=$(printf '%s' "${1%%:*}" | tr '[:upper:]' '[:lower:]')
        rest=${1#?:}
        printf '/%s%s\n' "$drive" "${rest//\\//}"
      fi ;;
    *) printf '%s\n' "$1" ;;
  esac
}

# The first of "$1" and "$1.exe" that is an executable file.
exe() {
  local f
  for f in "$1" "$1.exe"; do
    if [ -f "$f" ] && [ -x "$f" ]; then
      printf '%s\n' "$f"
      return 0
    fi
  done
  return 1
}

# ---- the JDK ---------------------------------------------------------------------------------

# The feature version of the java at $1 (17 for "17.0.15", 8 for "1.8.0_402"); fails when it does
# not run — as macOS's /usr/bin/java does when no JDK is installed.
java_major() {
  local out v
  out=$("$1" -version 2>&1) || return 1
  v=$(printf '%s\n' "$out" | sed -n 's/.* version "\([^"]*\)".*/\1/p' | head -n 1)
  case "$v" in 1.*) v=${v#1.} ;; esac
  v=${v%%[!0-9]*}
  [ -n "$v" ] || return 1
  printf '%s\n' "$v"
}

# The java.home of the java at $1, as this shell names it.
java_home_of() {
  local h
  h=$("$1" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.home = //p' | head -n 1 | tr -d '\r') || return 1
  [ -n "$h" ] || return 1
  to_unix "$h"
}

jdk_home=""
jdk_via=""
jdk_tried=""
jdk_problems=()
# Takes $1 as the JDK when it is one: java runs, is 17 or later, and javac is there (Maven compiles
# in-process). Otherwise notes why not, for the message.
try_jdk() {
  local home=${1%/} via=$2 java major
  [ -z "$jdk_home" ] || return 0
  [ -n "$home" ] || return 0
  case "$jdk_tried" in *"|$home|"*) return 0 ;; esac
  jdk_tried="$jdk_tried|$home|"
  if ! java=$(exe "$home/bin/java"); then
    jdk_problems+=("$via: no bin/java in $home")
    return 0
  fi
  if ! major=$(java_major "$java"); then
    jdk_problems+=("$via: $java does not run")
    return 0
  fi
  if [ "$major" -lt 17 ]; then
    jdk_problems+=("$via: $home is Java $major; qvm needs 17 or later")
    return 0
  fi
  if ! exe "$home/bin/javac" >/dev/null; then
    jdk_problems+=("$via: $home is a JRE (no javac); qvm needs a JDK")
    return 0
  fi
  jdk_home=$home
  jdk_via=$via
}

find_jdk() {
  local j h f p
  jdk_home=""
  jdk_via=""
  jdk_tried=""
  jdk_problems=()
  if [ -n "${JAVA_HOME:-}" ]; then
    try_jdk "$(to_unix "$JAVA_HOME")" "JAVA_HOME"
  fi
  if [ "$host" = macos ]; then
    # The system's registry of installed JDKs; /usr/bin/java only forwards to it.
    if j=$(exe "$R/usr/libexec/java_home") && h=$("$j" -v 17+ 2>/dev/null); then
      try_jdk "$h" "/usr/libexec/java_home -v 17+"
    fi
    # Homebrew's openjdk formulas are keg-only: installed, but neither on PATH nor known to java_home.
    for f in openjdk@17 openjdk@21 openjdk; do
      h=""
      if command -v brew >/dev/null 2>&1; then
        h=$(brew --prefix "$f" 2>/dev/null || true)
      fi
      for p in "$h" "$R/opt/homebrew/opt/$f" "$R/usr/local/opt/$f"; do
        if [ -n "$p" ] && [ -d "$p" ]; then
          if [ -d "$p/libexec/openjdk.jdk/Contents/Home" ]; then
            try_jdk "$p/libexec/openjdk.jdk/Contents/Home" "Homebrew's $f (keg-only)"
          else
            try_jdk "$p" "Homebrew's $f (keg-only)"
          fi
        fi
      done
    done
  fi
  if j=$(command -v java 2>/dev/null); then
    if h=$(java_home_of "$j"); then
      try_jdk "$h" "java on PATH ($j)"
    else
      jdk_problems+=("java on PATH: $j does not run$([ "$host" = macos ] && echo " (macOS's stub: no JDK is installed)")")
    fi
  fi
  if [ "$host" = linux ]; then
    for h in "$R"/usr/lib/jvm/*/; do
      [ -d "$h" ] && try_jdk "$h" "$h"
    done
  fi
  if [ "$host" = windows ]; then
    local pf
    pf="$R$(to_unix "${ProgramFiles:-${PROGRAMFILES:-C:\\Program Files}}")"
    for h in "$pf"/Eclipse\ Adoptium/*/ "$pf"/Microsoft/jdk-*/ "$pf"/Java/*/ "$pf"/Zulu/*/ \
             "$pf"/Amazon\ Corretto/*/ "$pf"/BellSoft/*/; do
      [ -d "$h" ] && try_jdk "$h" "$h"
    done
  fi
  [ -n "$jdk_home" ]
}

# ---- QEMU and Maven --------------------------------------------------------------------------

# The path of qemu-system-$1: $QVM_QEMU (a directory or a binary), PATH, the usual install places
# (the same order as the backend's QemuLocator).
find_qemu() {
  local name="qemu-system-$1" q d
  if [ -n "${QVM_QEMU:-}" ]; then
    q=$(to_unix "$QVM_QEMU")
    if [ -d "$q" ]; then
      exe "$q/$name" && return 0
    elif [ -f "$q" ]; then
      exe "$(dirname "$q")/$name" && return 0
    fi
  fi
  command -v "$name" 2>/dev/null && return 0
  command -v "$name.exe" 2>/dev/null && return 0
  case "$host" in
    macos) set -- "$R/opt/homebrew/bin" "$R/usr/local/bin" "$R/opt/local/bin" ;;
    windows) set -- "$R$(to_unix "${ProgramFiles:-${PROGRAMFILES:-C:\\Program Files}}")/qemu" ;;
    *) set -- "$R/usr/bin" "$R/usr/local/bin" ;;
  esac
  for d in "$@"; do
    exe "$d/$name" && return 0
  done
  return 1
}

# mvn on PATH, else this checkout's Maven wrapper (it fetches the Maven it pins on first use).
find_maven() {
  command -v mvn 2>/dev/null && return 0
  exe "$ROOT/mvnw" && return 0
  return 1
}

report_found() {
  say "JDK: $jdk_home ($jdk_via, Java $(java_major "$(exe "$jdk_home/bin/java")"))"
  case "$jdk_via" in
    Homebrew*)
      say "that JDK is keg-only: qvm uses it through JAVA_HOME; for your own shell:"
      say "  export JAVA_HOME=$jdk_home" ;;
  esac
  say "QEMU: $qemu ($("$qemu" --version 2>/dev/null | head -n 1 | tr -d '\r'))"
  say "Maven: $maven"
  if [ "$print_env" = 1 ]; then
    printf 'JAVA_HOME=%s\nQVM_MVN=%s\n' "$jdk_home" "$maven"
  fi
}

# ---- macOS and Windows: find, or say exactly what to install ---------------------------------

if [ "$host" = macos ] || [ "$host" = windows ]; then
  missing=0
  if [ "$host" = macos ]; then
    case "$arch" in arm64|aarch64) qemu_arch=aarch64 ;; *) qemu_arch=x86_64 ;; esac
  else
    qemu_arch=x86_64
  fi
  find_jdk || missing=1
  qemu=$(find_qemu "$qemu_arch") || { qemu=""; missing=1; }
  maven=$(find_maven) || { maven=""; missing=1; }
  shellcheck=1
  if [ "$for_tests" = 1 ] && ! command -v shellcheck >/dev/null 2>&1; then
    shellcheck=0
    missing=1
  fi
  if [ "$for_tests" = 1 ] && ! command -v kubectl >/dev/null 2>&1; then
    if [ "$host" = macos ]; then
      say "no kubectl on PATH: the deployment manifests' tests (release/deploy) will skip; install it: brew install kubectl"
    else
      say "no kubectl on PATH: the deployment manifests' tests (release/deploy) will skip; install it: winget install --exact --id Kubernetes.kubectl"
    fi
  fi
  if [ "$missing" = 0 ]; then
    report_found
    exit 0
  fi
  tell "missing on this host ($os $arch):"
  if [ -z "$jdk_home" ]; then
    tell "  a JDK 17 or later. Looked at:"
    for p in ${jdk_problems[@]+"${jdk_problems[@]}"}; do
      tell "    - $p"
    done
    [ ${#jdk_problems[@]} -gt 0 ] || tell "    - JAVA_HOME (unset), java on PATH (none)"
    if [ "$host" = macos ]; then
      tell "    install one: brew install openjdk@17"
      tell "    (keg-only: this script finds it under \$(brew --prefix openjdk@17) and points JAVA_HOME there;"
      tell "    any JDK 17+ that /usr/libexec/java_home lists will do too, e.g. from https://adoptium.net)"
    else
      tell "    install one: winget install --exact --id EclipseAdoptium.Temurin.17.JDK"
      tell "    (or: choco install temurin17 / scoop bucket add java && scoop install java/temurin17-jdk),"
      tell "    or set JAVA_HOME to a JDK 17+ you have"
    fi
  fi
  if [ -z "$qemu" ]; then
    if [ "$host" = macos ]; then
      tell "  QEMU (qemu-system-$qemu_arch: not in \$QVM_QEMU, on PATH, /opt/homebrew/bin, /usr/local/bin or /opt/local/bin)"
      tell "    install it: brew install qemu"
    else
      tell "  QEMU (qemu-system-x86_64.exe: not in \$QVM_QEMU, on PATH or in C:\\Program Files\\qemu)"
      tell "    install it: winget install --exact --id SoftwareFreedomConservancy.QEMU"
      tell "    (or: choco install qemu / scoop install qemu, or the installer from https://qemu.weilnetz.de/w64/"
      tell "    into C:\\Program Files\\qemu); a QEMU elsewhere: set QVM_QEMU to its directory"
    fi
  fi
  if [ -z "$maven" ]; then
    tell "  Maven (no mvn on PATH and no mvnw in $ROOT)"
    if [ "$host" = macos ]; then
      tell "    install it: brew install maven"
    else
      tell "    install it: choco install maven / scoop install maven"
    fi
  fi
  if [ "$shellcheck" = 0 ]; then
    tell "  shellcheck (./qvm test checks the shell scripts with it)"
    if [ "$host" = macos ]; then
      tell "    install it: brew install shellcheck"
    else
      tell "    install it: winget install --exact --id koalaman.shellcheck (or: choco install shellcheck / scoop install shellcheck)"
    fi
  fi
  tell "then open a new terminal (installers change PATH) and re-run."
  exit 1
fi

if [ "$host" = other ]; then
  tell "$os is not a host qvm knows: install QEMU, a JDK 17 or later and Maven, set JAVA_HOME, then run"
  tell "  ./mvnw -DskipTests install && java -jar release/cli/target/qvm.jar up"
  exit 1
fi

# ---- Linux -----------------------------------------------------------------------------------

# command:Debian package that provides it
need=(
  qemu-system-x86_64:qemu-system-x86
  qemu-system-aarch64:qemu-system-arm
  dpkg-deb:dpkg
  apt-get:apt
  gzip:gzip
)
[ "$for_tests" = 1 ] && need+=(shellcheck:shellcheck)
# Maven from apt where this script installs packages anyway; elsewhere the wrapper will do.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 || ! exe "$ROOT/mvnw" >/dev/null; then
  need+=(mvn:maven)
fi
pkgs=()
for pair in "${need[@]}"; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || pkgs+=("${pair#*:}")
done
# A JDK 17+ with jlink (the guest's JRE is made with it), wherever the default java points.
if ! find_jdk || ! exe "$jdk_home/bin/jlink" >/dev/null; then
  pkgs+=(openjdk-17-jdk-headless)
fi
# A static busybox: the command-line test boots a throwaway initramfs built around it.
[ -x "$R/bin/busybox" ] || [ -x "$R/usr/bin/busybox" ] || pkgs+=(busybox-static)
# Fonts the in-process renderer tests use on the host JVM.
[ -f "$R/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf" ] || pkgs+=(fonts-dejavu-core)
# CA certificates let apt and Maven reach their registries over https.
{ [ -d "$R/etc/ssl/certs" ] && [ -n "$(ls -A "$R/etc/ssl/certs" 2>/dev/null)" ]; } || pkgs+=(ca-certificates)

# The unprivileged user a root qvm has QEMU drop to (-runas); a system account, no home, no login.
ensure_qemu_user() {
  local user="${QVM_QEMU_USER:-qvm}"
  [ "$(id -u)" = 0 ] || return 0
  getent passwd "$user" >/dev/null 2>&1 && return 0
  if ! command -v useradd >/dev/null 2>&1; then
    tell "QEMU needs an unprivileged user '$user' to run as; create one (no home, no login shell)"
    exit 1
  fi
  tell "creating the unprivileged user '$user' QEMU runs as"
  useradd --system --no-create-home --shell /usr/sbin/nologin "$user" >&2
}

# ---- Debian 12: QEMU 10 from bookworm-backports -----------------------------------------------
# Debian 12's own QEMU is 7.2. There qvm's clones are full-state (each reads the template's whole
# RAM: seconds, ~450 MiB private each; adr/0006) and TCG runs single-threaded (adr/0001).
# bookworm-backports has QEMU 10.0: shared-RAM copy-on-write clones and multi-threaded TCG.
# As root on Debian 12 it is installed from there: bookworm-backports is added to apt's sources
# (the mirror taken from the host's own sources, signed by Debian's archive keyring) unless a
# source has it already; apt then keeps it updated. QVM_QEMU_BACKPORTS=0 keeps QEMU 7.2; so does a
# QVM_QEMU the user chose. When it cannot be installed, qvm goes on with QEMU 7.2 and says so.

# "MAJOR MINOR" of the QEMU at $1.
qemu_version() {
  "$1" --version 2>/dev/null | tr -d '\r' | sed -n 's/^QEMU emulator version \([0-9][0-9]*\)\.\([0-9][0-9]*\).*/\1 \2/p' | head -n 1
}

# Whether the QEMU at $1 is older than 8.2 (a QEMU whose version cannot be read counts as older).
qemu_before_8_2() {
  local v major minor
  v=$(qemu_version "$1")
  [ -n "$v" ] || return 0
  major=${v%% *}
  minor=${v#* }
  [ "$major" -lt 8 ] || { [ "$major" = 8 ] && [ "$minor" -lt 2 ]; }
}

# The first URI of the host's apt sources (one-line and deb822) that serves Debian suite $1.
apt_uri_for_suite() {
  local files=() f
  for f in "$R/etc/apt/sources.list" "$R"/etc/apt/sources.list.d/*.list "$R"/etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && files+=("$f")
  done
  [ ${#files[@]} -gt 0 ] || return 1
  awk -v suite="$1" '
    function flush() { if (deb && has && uri != "" && enabled) { print uri; found = 1; exit } deb = 0; has = 0; uri = ""; enabled = 1 }
    BEGIN { enabled = 1 }
    FNR == 1 { flush() }
    FILENAME ~ /\.sources$/ {
      if ($0 ~ /^[ \t]*$/) { flush(); next }
      if ($1 == "Types:") { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
      if ($1 == "URIs:") uri = $2
      if ($1 == "Suites:") { for (i = 2; i <= NF; i++) if ($i == suite) has = 1 }
      if ($1 == "Enabled:" && $2 == "no") enabled = 0
      next
    }
    $1 == "deb" {
      i = 2
      if ($i ~ /^\[/) { while (i < NF && $i !~ /\]$/) i++; i++ }
      if ($(i + 1) == suite) { print $i; found = 1; exit }
    }
    END { if (!found) flush() }' "${files[@]}" | head -n 1
}

debian_codename() {
  [ -f "$R/etc/os-release" ] || return 1
  sed -n 's/^VERSION_CODENAME=//p' "$R/etc/os-release" | tr -d '"' | head -n 1
}

qemu_from_backports() {
  local q have mirror list
  [ "${QVM_QEMU_BACKPORTS:-1}" != 0 ] && [ -z "${QVM_QEMU:-}" ] || return 0
  [ "$(debian_codename 2>/dev/null || true)" = bookworm ] || return 0
  q=$(find_qemu x86_64) || return 0
  qemu_before_8_2 "$q" || return 0
  have=$("$q" --version 2>/dev/null | head -n 1 | tr -d '\r')
  if [ "$(id -u)" != 0 ]; then
    tell "this QEMU is $have: qvm's clones are full-state and TCG single-threaded with it."
    tell "QEMU 10 from bookworm-backports gives shared-RAM clones and multi-threaded TCG (adr/0016):"
    tell "  add bookworm-backports to apt's sources, then: sudo apt-get install -y -t bookworm-backports qemu-system-x86 qemu-system-arm"
    return 0
  fi
  if [ -z "$(apt_uri_for_suite bookworm-backports || true)" ]; then
    mirror=$(apt_uri_for_suite bookworm || true)
    if [ -z "$mirror" ]; then
      tell "no apt source serves Debian bookworm here, so bookworm-backports cannot be added: qvm goes on with $have (full-state clones, single-threaded TCG)"
      return 0
    fi
    list="$R/etc/apt/sources.list.d/qvm-bookworm-backports.sources"
    say "adding bookworm-backports ($mirror) to apt's sources ($list) for QEMU 10"
    printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "$mirror" > "$list"
  fi
  say "installing QEMU 10 from bookworm-backports (QVM_QEMU_BACKPORTS=0 keeps $have)"
  export DEBIAN_FRONTEND=noninteractive
  if apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends -t bookworm-backports \
      qemu-system-x86 qemu-system-arm >&2; then
    say "installed: $("$(find_qemu x86_64)" --version | head -n 1)"
  else
    tell "could not install QEMU from bookworm-backports (apt-get failed, above): qvm goes on with $have (full-state clones, single-threaded TCG)"
  fi
}

# ---- the tests' kubectl ------------------------------------------------------------------------
# --test: the deployment manifests' tests (release/deploy) render them with `kubectl kustomize`.
# Any kubectl on PATH will do; the manifests keep to what kubectl 1.20's kustomize (v2.0.3) knows,
# so Debian 12's kubernetes-client is enough. Installed on its own, after the packages above: not
# every Debian release or derivative has that package, and a failure here names what to do instead.
kubectl_for_tests() {
  [ "$for_tests" = 1 ] || return 0
  command -v kubectl >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing kubernetes-client (kubectl, for the deployment manifests' tests)"
    export DEBIAN_FRONTEND=noninteractive
    if apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends kubernetes-client >&2 \
        && command -v kubectl >/dev/null 2>&1; then
      say "installed: kubernetes-client ($(command -v kubectl))"
      return 0
    fi
    tell "could not install kubernetes-client (apt-get failed, above)"
  fi
  tell "missing: kubectl (./qvm test renders the deployment manifests with kubectl kustomize)"
  tell "  install it: sudo apt-get install -y --no-install-recommends kubernetes-client (Debian),"
  tell "  or any kubectl 1.20 or later on PATH"
  exit 1
}

finish_linux() {
  kubectl_for_tests
  qemu_from_backports
  qemu=$(find_qemu x86_64)
  maven=$(find_maven)
  report_found
  ensure_qemu_user
  exit 0
}

if [ ${#pkgs[@]} -eq 0 ]; then
  finish_linux
fi
# Sorted, each once.
sorted=$(printf '%s\n' "${pkgs[@]}" | sort -u)
pkgs=()
while IFS= read -r p; do
  pkgs+=("$p")
done <<< "$sorted"
if [ "$host" = linux ] && [ -n "$jdk_home" ] && ! exe "$jdk_home/bin/jlink" >/dev/null; then
  tell "the JDK at $jdk_home has no jlink"
elif [ -z "$jdk_home" ]; then
  tell "no JDK 17 or later:"
  for p in ${jdk_problems[@]+"${jdk_problems[@]}"}; do
    tell "  - $p"
  done
fi
if ! command -v apt-get >/dev/null 2>&1; then
  tell "missing (Debian's names): ${pkgs[*]} — install them with your package manager, then re-run."
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  tell "missing packages: ${pkgs[*]}"
  tell "run: sudo apt-get update && sudo apt-get install -y --no-install-recommends ${pkgs[*]}"
  exit 1
fi
say "installing: ${pkgs[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >&2
say "installed: ${pkgs[*]}"
if ! find_jdk; then
  tell "installed openjdk-17-jdk-headless, yet no JDK 17+ was found: set JAVA_HOME to it and re-run"
  exit 1
fi
finish_linux
