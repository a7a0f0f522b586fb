#!/bin/sh
# Records what qvm's capability probe (io.qvm.internal.probe.QemuCapabilityProbe) asks a QEMU build,
# one file per question, into DIR: the fixtures QemuCapabilitiesTest replays. Run it on a real
# host to turn a derived fixture into a recorded one, then write DIR/SOURCE.md (build, host, date).
#   record.sh /path/to/qemu-system-x86_64 DIR
set -eu
q=$1
dir=$2
mkdir -p "$dir"
"$q" --version > "$dir/version.txt"
"$q" -accel help > "$dir/accel-help.txt"
"$q" -machine help > "$dir/machine-help.txt"
"$q" -object help > "$dir/object-help.txt"
"$q" -device help > "$dir/device-help.txt"
case "$q" in
*aarch64*) machines="virt" ;;
*) machines="q35 microvm" ;;
esac
for m in $machines; do
    "$q" -machine "$m,help" > "$dir/machine-$m-help.txt" 2>&1 || true
done
printf '%s\n' '{"execute":"qmp_capabilities"}' '{"execute":"query-command-line-options"}' '{"execute":"quit"}' \
    | "$q" -machine none -nodefaults -no-user-config -display none -qmp stdio > "$dir/qmp.txt"
