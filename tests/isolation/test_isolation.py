#!/usr/bin/env python3
"""mxa survives GPU runtimes that abort while they load (tests/isolation/fake_abort.c).

usage: test_isolation.py MXA FAKE_DIR

With the fakes on LD_LIBRARY_PATH (and MXA_HIP_LIBRARY naming the fake HIP):
- `mxa probe` exits 0, lists cpu as present and every GPU backend as absent, each
  with a reason: "crashed: signal 6" for a runtime mxa had to load, or the cheap
  check that spared it the load (no /dev/kfd, no registered OpenCL ICD, no Vulkan
  driver manifest);
- `mxa attention --device cpu`, `mxa quantize --device cpu` and MXA_DEVICE=cpu
  `mxa demo` exit 0: they load nothing but the CPU backend;
- `mxa conform --quick` over every backend exits 0 and reports the crashed ones.
Standard library only.
"""
import glob
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile

MXA, FAKE = sys.argv[1], sys.argv[2]
failures = []


def env(with_hip=True):
    e = dict(os.environ)
    e["LD_LIBRARY_PATH"] = FAKE + (":" + e["LD_LIBRARY_PATH"] if e.get("LD_LIBRARY_PATH") else "")
    for k in ("MXA_DISABLE", "MXA_DEVICE", "MXA_OPENCL_LIBRARY", "MXA_HIP_LIBRARY"):
        e.pop(k, None)
    if with_hip:
        e["MXA_HIP_LIBRARY"] = os.path.join(FAKE, "libamdhip64.so")
    return e


def run(args, **kw):
    p = subprocess.run([MXA] + args, capture_output=True, text=True, timeout=240, **kw)
    return p


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    else:
        print("ok:", what)


def npy(path, shape, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % ", ".join(map(str, shape))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%df" % len(values), *values))


def registered(patterns):
    return any(glob.glob(p) for p in patterns)


def probe_case(with_hip):
    p = run(["probe", "--json"], env=env(with_hip))
    label = "probe (fake HIP named)" if with_hip else "probe (fakes on LD_LIBRARY_PATH only)"
    check(p.returncode == 0, "%s exits 0 (got %d; stderr: %s)" % (label, p.returncode, p.stderr.strip()[-300:]))
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        check(False, "%s prints JSON" % label)
        return
    b = {x["name"]: x for x in doc["backends"]}
    crashing = 0  # backends this case makes mxa load, so their fake aborts
    check(b["cpu"]["present"], "%s: cpu present" % label)
    check(doc["auto"] == "cpu", "%s: auto is cpu (got %r)" % (label, doc["auto"]))
    for name in ("hip", "vulkan", "opencl"):
        if not b[name]["built"]:
            continue
        reason = b[name]["reason"]
        check(not b[name]["present"] and reason, "%s: %s absent with a reason (%s)" % (label, name, reason))
    crashed = "crashed: signal %d" % signal.SIGABRT
    if b["hip"]["built"]:
        if with_hip:
            crashing += 1
            check(crashed in b["hip"]["reason"], "%s: hip reason says %r (%s)" % (label, crashed, b["hip"]["reason"]))
        elif not os.path.exists("/dev/kfd"):
            check("/dev/kfd" in b["hip"]["reason"] and crashed not in b["hip"]["reason"],
                  "%s: hip absent by the /dev/kfd check, never loaded (%s)" % (label, b["hip"]["reason"]))
    if b["opencl"]["built"] and registered(["/etc/OpenCL/vendors/*.icd"]):
        crashing += 1
        check(crashed in b["opencl"]["reason"], "%s: opencl reason says %r (%s)" % (label, crashed, b["opencl"]["reason"]))
    if b["vulkan"]["built"] and registered(["/usr/share/vulkan/icd.d/*.json", "/etc/vulkan/icd.d/*.json"]):
        crashing += 1
        check(crashed in b["vulkan"]["reason"], "%s: vulkan reason says %r (%s)" % (label, crashed, b["vulkan"]["reason"]))
    t = run(["probe"], env=env(with_hip))
    if crashing:
        check(t.returncode == 0 and "crashed" in t.stdout, "%s: text output exits 0 and says crashed" % label)
    else:  # a build without GPU backends (or none registered): nothing to crash
        check(t.returncode == 0 and "crashed" not in t.stdout, "%s: text output exits 0, nothing crashed" % label)
    return crashing


def cpu_commands(work):
    n, d = 64, 64
    vals = [((i * 37) % 101) / 50.0 - 1.0 for i in range(n * d)]
    for name in ("q", "k", "v"):
        npy(os.path.join(work, name + ".npy"), (n, d), vals)
    out = os.path.join(work, "o.npy")
    a = run(["attention", "--device", "cpu", "--q", os.path.join(work, "q.npy"), "--k", os.path.join(work, "k.npy"),
             "--v", os.path.join(work, "v.npy"), "--out", out], env=env())
    check(a.returncode == 0 and os.path.getsize(out) > 0, "attention --device cpu exits 0 (%s)" % a.stderr.strip())
    q = run(["quantize", os.path.join(work, "q.npy"), "--rule", "uos", "--device", "cpu", "--dequant",
             os.path.join(work, "dq.npy")],
            env=env())
    check(q.returncode == 0, "quantize --device cpu exits 0 (%s)" % q.stderr.strip())
    e = env()
    e["MXA_DEVICE"] = "cpu"
    m = run(["demo"], env=e)
    check(m.returncode == 0, "MXA_DEVICE=cpu demo exits 0 (%s)" % m.stderr.strip())


def conform_case(crashing):
    c = run(["conform", "--quick", "-o", "quantize/spec", "--json"], env=env())
    check(c.returncode == 0, "conform --quick over every backend exits 0 (got %d; %s)" % (c.returncode, c.stderr.strip()[-300:]))
    try:
        doc = json.loads(c.stdout)
    except ValueError:
        check(False, "conform prints one JSON document")
        return
    text = json.dumps(doc)
    if not crashing:  # a build without GPU backends (or none registered): nothing to crash
        check("crashed" not in text, "conform reports no crash when nothing could crash")
        return
    check("crashed" in text, "conform reports the crashed backends")
    r = run(["conform", "--quick", "-o", "quantize/spec", "--require"], env=env())
    check(r.returncode == 1, "conform --require fails when a backend crashed (got %d)" % r.returncode)


def main():
    crashing = probe_case(with_hip=True)
    probe_case(with_hip=False)
    with tempfile.TemporaryDirectory() as work:
        cpu_commands(work)
    conform_case(crashing)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
