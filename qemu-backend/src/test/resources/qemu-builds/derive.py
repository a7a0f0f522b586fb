#!/usr/bin/env python3
"""Derives the fixtures of QEMU builds that cannot run on the Linux machine the tests were written
on, from a recorded build of the same QEMU generation plus what that build's configuration changes.
Each derived directory gets a SOURCE.md saying so. Re-run after re-recording a base:
    python3 derive.py
A derived fixture is replaced by a recording (record.sh) as soon as someone runs that build."""
import json, os, re, shutil

HERE = os.path.dirname(os.path.abspath(__file__))

# Objects compiled only on Linux hosts (backends/meson.build, hw/remote, scsi/pr-manager, ui/input-linux,
# net/can, target/i386/sev, backends/cryptodev-vhost-user, memfd): absent from macOS and Windows builds.
LINUX_ONLY_OBJECTS = {"memory-backend-memfd", "input-linux", "can-host-socketcan", "pr-manager-helper",
                      "x-remote-object", "x-vfio-user-server", "cryptodev-vhost-user", "sev-guest", "sev-snp-guest",
                      "tdx-guest", "iommufd", "rng-random-linux", "dbus-vmstate", "vfio-user-server"}
# memory-backend-file and (9.1+) memory-backend-shm are CONFIG_POSIX (backends/meson.build): absent from Windows builds only.
POSIX_ONLY_OBJECTS = {"memory-backend-file", "memory-backend-shm"}
# vhost (vhost-vsock, vhost-user-*, vhost-scsi, vhost-net) and VFIO need Linux kernel interfaces.
LINUX_ONLY_DEVICE = re.compile(r'^name "(vhost-|vfio|vhost_|x-vfio|vhost-user)')


def read(d, f):
    with open(os.path.join(HERE, d, f)) as fh:
        return fh.read()


def write(d, f, text):
    with open(os.path.join(HERE, d, f), "w") as fh:
        fh.write(text)


def qmp_edit(text, drop_groups=(), run_with=None):
    out = []
    for line in text.splitlines():
        o = json.loads(line)
        if isinstance(o.get("return"), list):
            groups = [g for g in o["return"] if g["option"] not in drop_groups]
            if run_with is not None:
                for g in groups:
                    if g["option"] == "run-with":
                        g["parameters"] = [p for p in g["parameters"] if p["name"] in run_with]
            o["return"] = groups
        elif "QMP" in o:
            o["QMP"]["version"]["package"] = ""
        out.append(json.dumps(o))
    return "\n".join(out) + "\n"


def derive(name, base, version, accels, source, os_kind, drop_machine_props=(), run_with=None, version_tail=""):
    d = os.path.join(HERE, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for f in os.listdir(os.path.join(HERE, base)):
        if f.endswith(".txt"):
            shutil.copy(os.path.join(HERE, base, f), d)
    write(name, "version.txt", "QEMU emulator version " + version + version_tail
          + "\nCopyright (c) 2003-2025 Fabrice Bellard and the QEMU Project developers\n")
    write(name, "accel-help.txt", "Accelerators supported in QEMU binary:\n" + "".join(a + "\n" for a in accels))
    drop_objects = set()
    drop_groups = set()
    if os_kind in ("macos", "windows"):
        drop_objects |= LINUX_ONLY_OBJECTS
        drop_groups.add("sandbox")  # no libseccomp off Linux
        if run_with is None:
            run_with = {"user", "chroot"}  # async-teardown is CONFIG_LINUX
    if os_kind == "windows":
        drop_objects |= POSIX_ONLY_OBJECTS
        drop_groups.add("run-with")  # CONFIG_POSIX
    objects = [l for l in read(name, "object-help.txt").splitlines() if l.strip() not in drop_objects]
    write(name, "object-help.txt", "\n".join(objects) + "\n")
    if os_kind in ("macos", "windows"):
        devices = [l for l in read(name, "device-help.txt").splitlines() if not LINUX_ONLY_DEVICE.match(l)]
        write(name, "device-help.txt", "\n".join(devices) + "\n")
    for f in os.listdir(d):
        if f.startswith("machine-") and f != "machine-help.txt":
            props = [l for l in read(name, f).splitlines()
                     if not any(l.strip().startswith(p + "=") for p in drop_machine_props)]
            write(name, f, "\n".join(props) + "\n")
    write(name, "qmp.txt", qmp_edit(read(name, "qmp.txt"), drop_groups, run_with))
    write(name, "SOURCE.md", "# " + name + "\n\n**Derived**, not recorded: no such host was available.\n\n"
          + "Base: the recorded `" + base + "` (its machine list and device/property texts are kept as they are, "
          + "only what the notes below name was changed).\n\n" + source + "\n")


derive("homebrew-macos-arm64-aarch64", "debian-12-backports-aarch64", "10.0.2", ["tcg", "hvf"],
       "Homebrew `qemu` bottle on Apple silicon, `qemu-system-aarch64` (the version is the base's, not checked "
       "against the formula). HVF is compiled in for the aarch64 target on an aarch64 Mac. No libseccomp on macOS: "
       "no `-sandbox` option group. `-run-with` has `user` and `chroot` (CONFIG_POSIX), not `async-teardown` "
       "(CONFIG_LINUX). Linux-only objects (memfd, input-linux, socketcan, pr-manager, remote, vhost-user "
       "cryptodev) and vhost/VFIO devices removed. `memory-backend-file` kept (POSIX).", "macos")
derive("homebrew-macos-arm64-aarch64-qemu-6.2", "debian-12-aarch64", "6.2.0", ["tcg", "hvf"],
       "Homebrew `qemu` 6.2.0 on Apple silicon, `qemu-system-aarch64`: the first QEMU with HVF for aarch64, and "
       "before 7.0, so `virt` needs `highmem=off` on a 36-bit IPA host. Same macOS edits as "
       "homebrew-macos-arm64-aarch64; no `-run-with` at all (it arrived in 8.1). `virt`'s `highmem` property "
       "exists in 6.2 (it dates from 2.12).", "macos", run_with=set())
derive("homebrew-macos-arm64-x86_64", "debian-12-backports-x86_64", "10.0.2", ["tcg"],
       "Homebrew `qemu` on Apple silicon, `qemu-system-x86_64`: HVF is built only for the target matching the "
       "host, so an x86_64 guest there runs under TCG. Same macOS edits as homebrew-macos-arm64-aarch64.", "macos")
derive("homebrew-macos-x86_64-x86_64", "debian-12-backports-x86_64", "10.0.2", ["tcg", "hvf"],
       "Homebrew `qemu` on an Intel Mac, `qemu-system-x86_64` with HVF. Same macOS edits as "
       "homebrew-macos-arm64-aarch64.", "macos")
derive("windows-x86_64", "debian-12-backports-x86_64", "10.0.2", ["tcg", "whpx"],
       "Stefan Weil's QEMU for Windows installer (qemu-w64-setup), `qemu-system-x86_64.exe`, cross-built with "
       "WHPX. No libseccomp: no `-sandbox`. `-run-with`, `-runas`, `-chroot`, `-daemonize` are CONFIG_POSIX: no "
       "`run-with` group. `memory-backend-file` is CONFIG_POSIX (backends/meson.build): removed, as are the "
       "Linux-only objects and the vhost/VFIO devices. The version is the base's.", "windows")
derive("fedora-42-x86_64", "debian-12-backports-x86_64", "9.2.4", ["tcg", "kvm"],
       "Fedora 42's `qemu-system-x86-core` (qemu.spec builds with `--enable-seccomp`, KVM, every POSIX and "
       "Linux object). 9.2 has `-run-with user=` (9.1) like the 10.0 base. The version string's package suffix "
       "is illustrative.", "linux", version_tail=" (qemu-9.2.4-1.fc42)")
derive("ubuntu-24.04-x86_64", "debian-12-backports-x86_64", "8.2.2", ["tcg", "kvm"],
       "Ubuntu 24.04's `qemu-system-x86` 8.2.2 (built with seccomp). `-run-with` exists (8.1) with "
       "`async-teardown` only: `chroot` moved into it in 9.0 and `user` arrived in 9.1, so a root host uses "
       "`-runas`.", "linux", run_with={"async-teardown"}, version_tail=" (Debian 1:8.2.2+ds-0ubuntu1)")
derive("ubuntu-22.04-x86_64", "debian-12-x86_64", "6.2.0", ["tcg", "kvm"],
       "Ubuntu 22.04's `qemu-system-x86` 6.2 (built with seccomp). q35 has no `i8042` property (added in 7.0); no "
       "`-run-with` (8.1).", "linux", drop_machine_props=("i8042",), version_tail=" (Debian 1:6.2+dfsg-2ubuntu6)")
