#!/usr/bin/env python3
# Regenerates src/main/resources/io/qvm/container/container-packages.lock from this host's apt indexes
# (bookworm, bookworm-security, bookworm-backports): python3 release/container/lock.py > that file.
import subprocess, re, json, sys, urllib.parse, os, tempfile

# apt resolves the closure against an empty dpkg status (so it lists everything) and an empty
# archives cache (else --print-uris skips what the host already downloaded); it prints MD5 only,
# so each SHA256 and pool Filename comes from apt-cache show, the suite from apt-cache madison.
ARCHIVES = tempfile.mkdtemp(prefix="qvm-lock-")
os.makedirs(ARCHIVES + "/partial")
URIS = subprocess.run(["apt-get", "-o", "Dir::State::status=/dev/null", "-o", "Debug::NoLocking=1",
    "-o", "Dir::Cache::archives=" + ARCHIVES, "install", "--no-install-recommends", "--print-uris", "-qq",
    "qemu-system-x86/bookworm-backports", "qemu-system-common/bookworm-backports",
    "qemu-system-data/bookworm-backports", "seabios/bookworm-backports", "openjdk-17-jre-headless"],
    capture_output=True, text=True, check=True).stdout
import shutil; shutil.rmtree(ARCHIVES)
ROOTS = ["qemu-system-x86", "qemu-system-common", "qemu-system-data", "seabios", "openjdk-17-jre-headless"]
NOT_FOLLOWED = {"debconf", "debconf-2.0", "dpkg", "adduser", "passwd", "util-linux", "util-linux-extra",
    "ca-certificates", "ca-certificates-java", "openssl", "java-common", "libpam-modules", "libpam-modules-bin",
    "libc-bin", "perl-base", "install-info", "init-system-helpers"}
pk = {}
for line in URIS.splitlines():
    uri, fn, size = line.split()[:3]
    uri = urllib.parse.unquote(uri.strip("'"))
    name, ver, arch = fn[:-4].split("_")
    ver = urllib.parse.unquote(ver)
    pk[name] = dict(uri=uri, version=ver, arch=arch, size=int(size))
for name, p in pk.items():
    show = [x for x in subprocess.run(["apt-cache", "show", f"{name}={p['version']}"], capture_output=True, text=True).stdout.split("\n\n") if "\nSHA256:" in x][0]
    f = {}
    for l in show.splitlines():
        m = re.match(r"^([A-Za-z0-9-]+): (.*)$", l)
        if m: f[m.group(1)] = m.group(2)
    p["sha256"] = f["SHA256"]; p["filename"] = f["Filename"]
    assert int(f["Size"]) == p["size"]
    deps = []
    for k in ("Pre-Depends", "Depends"):
        for alt in f.get(k, "").split(","):
            alt = alt.strip()
            if not alt: continue
            names = [re.sub(r"[ (:].*", "", a.strip()) for a in alt.split("|")]
            deps.append(names)
    p["deps"] = deps
    mad = subprocess.run(["apt-cache", "madison", name], capture_output=True, text=True).stdout
    suite = None
    for l in mad.splitlines():
        c = [x.strip() for x in l.split("|")]
        if c[1] == p["version"] and "Packages" in c[2]:
            suite = c[2].split()[1].split("/")[0]; break
    p["suite"] = suite
seen = set(); todo = list(ROOTS)
while todo:
    n = todo.pop()
    if n in seen or n in NOT_FOLLOWED: continue
    seen.add(n)
    for alts in pk[n]["deps"]:
        hit = [a for a in alts if a in pk]
        if hit: todo.append(hit[0])
print("left out:", sorted(set(pk) - seen), file=sys.stderr)
entries = []
for n in sorted(seen):
    p = pk[n]
    entries.append({"name": n, "role": "library", "suite": p["suite"], "version": p["version"], "architecture": p["arch"],
        "filename": p["filename"], "size": p["size"], "sha256": p["sha256"]})
print("total MB", sum(e["size"] for e in entries)/1e6, len(entries), file=sys.stderr)
out = {"format": 1, "refresh": "python3 release/container/lock.py > release/container/src/main/resources/io/qvm/container/container-packages.lock", "architectures": {"x86_64": entries}}
print(json.dumps(out, indent=2, ensure_ascii=False))
