#!/usr/bin/env python3
"""Regression tests of `mxa conform` (Python standard library only).

usage: test_conform.py MXA_BINARY GROUP [CRASH_PRELOAD]

Groups (each one ctest test, conform_py_<group>):
  devices   --device lists that open Vulkan devices between tokens (strtok in the loader)
  write     --write-vectors with every case (attention/random/NN draw their shape from the seed)
  rule      --rule / q=<x> range checked on the decimal value, before rounding to fp32
  json      hostile .json sidecars (1,200-string arrays, long values) and an empty directory
  shapes    codes/scales of the right size but the wrong shape; a set with no runnable case
  fifo      a FIFO among the vector files: refused, never a hang
  corrupt   corrupted expected outputs / LSE of quantized recipes fail, naming row and element
  isolate   a run over several backends: one child per backend, one report as from one process; a backend
            whose child crashes mid-test (CRASH_PRELOAD: tests/conform/crash_attention.c) is a failure and the
            others are still reported
"""
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile

MXA = os.path.abspath(sys.argv[1])
GROUP = sys.argv[2]
WORK = tempfile.mkdtemp(prefix="mxa_conform_test_")
FAILURES = []
CHECKS = [0]
ENV = dict(os.environ)


def path(*names):
    return os.path.join(WORK, *names)


def run(args, timeout=300, env=None):
    try:
        p = subprocess.run([MXA] + args, capture_output=True, text=True, timeout=timeout, env=env or ENV,
                           errors="replace")
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        return "timeout", out, err


def check(cond, what, detail=""):
    CHECKS[0] += 1
    if not cond:
        FAILURES.append(what)
        print("FAIL: %s%s" % (what, ("\n" + detail) if detail else ""), flush=True)
    return cond


def show(rc, out, err, tail=1500):
    return "rc %s\nstdout: ...%s\nstderr: %s" % (rc, out[-tail:], err[-tail:])


# ---------------------------------------------------------------- .npy files

def npy_read(p):
    with open(p, "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY", p
    if data[6] == 1:
        hlen, start = struct.unpack("<H", data[8:10])[0], 10
    else:
        hlen, start = struct.unpack("<I", data[8:12])[0], 12
    header = data[start:start + hlen].decode()
    d = eval(header, {"__builtins__": {}}, {"False": False, "True": True})  # written by mxa itself
    fmt = {"<f4": "f", "|u1": "B"}[d["descr"]]
    n = 1
    for s in d["shape"]:
        n *= s
    values = list(struct.unpack("<%d%s" % (n, fmt), data[start + hlen:start + hlen + n * struct.calcsize(fmt)]))
    return d["descr"], tuple(d["shape"]), values


def npy_write(p, descr, shape, values):
    fmt = {"<f4": "f", "|u1": "B"}[descr]
    shape_text = "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_text)
    pad = (64 - (10 + len(header) + 1) % 64) % 64
    header = (header + " " * pad + "\n").encode()
    with open(p, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header +
                struct.pack("<%d%s" % (len(values), fmt), *values))


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def write_vectors(dirname, cases):
    d = path(dirname)
    rc, out, err = run(["conform", "--write-vectors", d, "-o", cases])
    assert rc == 0, show(rc, out, err)
    return d


# ---------------------------------------------------------------- groups

def present(backend):
    rc, out, err = run(["probe"], timeout=120)
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 2 and f[0] == backend:
            return f[1] == "present"
    return False


def test_devices():
    """--device vulkan:0 and cpu,vulkan:0: the list is split with strtok_r (the Vulkan loader calls strtok)."""
    have_vk = present("vulkan")
    for devs in ("vulkan:0", "cpu,vulkan:0", "vulkan:0,cpu", "cpu,vulkan:0,opencl:0"):
        rc, out, err = run(["conform", "--device", devs, "-o", "quantize/spec", "--variants", "none"])
        check(rc == 0, "conform --device %s exits 0" % devs, show(rc, out, err))
        check("unknown backend" not in err, "conform --device %s: no garbage device id" % devs, show(rc, out, err))
        for dev in devs.split(","):
            if dev == "cpu" or (dev == "vulkan:0" and have_vk):
                check(("== %s:" % dev) in out, "conform --device %s tests %s" % (devs, dev), show(rc, out, err))
    if not have_vk:
        print("note: no Vulkan device here; the lists above were split but vulkan:0 was absent")


def test_write():
    """--write-vectors with no -o (and with -o 'attention/random/*') exports every case and reads back."""
    d = path("all")
    rc, out, err = run(["conform", "--write-vectors", d])
    check(rc == 0, "conform --write-vectors DIR (every case) exits 0", show(rc, out, err))
    check(os.path.exists(os.path.join(d, "attention_random_00.q.npy")), "attention/random/00 exported")
    d2 = path("random")
    rc, out, err = run(["conform", "--write-vectors", d2, "-o", "attention/random/*"])
    check(rc == 0 and "wrote 24 vector sets" in out, "-o 'attention/random/*' exports the 24 random cases",
          show(rc, out, err))
    # the exported shape is the one the case drew from the seed
    rc, out, err = run(["conform", "-b", "cpu", "-o", "attention/random/05", "--variants", "none", "-v"])
    _, qshape, _ = npy_read(os.path.join(d2, "attention_random_05.q.npy"))
    b, h, nq, dd = qshape
    check(("B%d H%d" % (b, h)) in out and ("Nq%d" % nq) in out and ("D%d" % dd) in out,
          "attention/random/05 exported with the shape the case runs", out[-600:] + "\nshape %s" % (qshape,))
    rc, out, err = run(["conform", "--vectors", d2, "-b", "cpu", "--variants", "none"])
    check(rc == 0 and "24 cases passed" in out, "the random vectors read back and pass on the CPU", show(rc, out, err))
    # a different seed draws different shapes, and the export follows it
    d3 = path("random7")
    rc, out, err = run(["conform", "--write-vectors", d3, "-o", "attention/random/*", "--seed", "7"])
    rc, out, err = run(["conform", "--vectors", d3, "-b", "cpu", "--variants", "none"])
    check(rc == 0 and "24 cases passed" in out, "seed 7 random vectors read back and pass", show(rc, out, err))


def test_rule():
    """q=<x> is range-checked on the numeral: 8.0000001 and 5.9999999 are refused (they round to 8.0f, 6.0f)."""
    x = path("x.npy")
    npy_write(x, "<f4", (1, 32), [float(i) / 7.0 for i in range(32)])
    for rule in ("q=8.0000001", "q=5.9999999", "q=8.00000000000000000001", "q=-8"):
        rc, out, err = run(["quantize", x, "--rule", rule, "--device", "cpu"])
        check(rc == 2 and "expected ocp, tfs, uos or q=<x>" in err, "quantize --rule %s refused (exit 2)" % rule,
              show(rc, out, err))
    for rule in ("q=8", "q=6", "q=7.99999999999999999999", "q=6.5"):
        rc, out, err = run(["quantize", x, "--rule", rule, "--device", "cpu"])
        check(rc == 0, "quantize --rule %s accepted" % rule, show(rc, out, err))
    # the same parser reads a vector's sidecar
    d = write_vectors("vec", "quantize/random/uos")
    stems = sorted(f[:-5] for f in os.listdir(d) if f.endswith(".json"))
    check(len(stems) > 0, "quantize/spec exported")
    with open(os.path.join(d, stems[0] + ".json")) as f:
        meta = json.load(f)
    meta["rule"] = "q=8.0000001"
    with open(os.path.join(d, stems[0] + ".json"), "w") as f:
        json.dump(meta, f)
    rc, out, err = run(["conform", "--vectors", d, "-b", "cpu", "--variants", "none"])
    check(rc == 1 and "bad value for \"rule\"" in out, "a vector with rule q=8.0000001 fails", show(rc, out, err))


def sidecar(d, stem, text):
    with open(os.path.join(d, stem + ".json"), "w") as f:
        f.write(text)


def test_json():
    """Hostile .json sidecars are refused with a message (ASan: a 1,200-string array wrote past a 256-byte
    buffer), and an empty vectors directory is a usage error (UBSan: qsort(NULL, 0))."""
    d = write_vectors("vec", "quantize/tail/d48")
    stem = [f[:-5] for f in os.listdir(d) if f.endswith(".json")][0]
    hostile = {  # under 4 KiB each (a larger sidecar is refused by its size)
        "1200 empty strings": '{"notes": [%s]}' % ",".join(['""'] * 1200),
        "900 strings": '{"notes": [%s]}' % ",".join(['"a"'] * 900),
        "1200 strings, 6 KiB": '{"notes": [%s]}' % ", ".join(['"a"'] * 1200),
        "a 300-character string": '{"notes": "%s"}' % ("x" * 300),
        "a 300-digit number": '{"bc": %s}' % ("1" * 300),
        "a 255-character string and a comma": '{"notes": ["%s", "y"]}' % ("x" * 255),
        "strings without commas": '{"quantize": ["qk" "v"]}',
    }
    for what, text in hostile.items():
        sidecar(d, stem, text)
        rc, out, err = run(["conform", "--vectors", d, "-b", "cpu", "--variants", "none"])
        check(rc == 1 and ("FAIL" in out or "fail" in out), "a .json with %s fails cleanly (exit 1)" % what,
              show(rc, out, err))
        check("value longer than" in out or "not a flat JSON object" in out or "more than the 4095" in out,
              "a .json with %s: the message says why" % what, show(rc, out, err))
    # a long but fitting array still works: 100 short strings are notes, ignored
    sidecar(d, stem, '{"kind": "quantize", "notes": [%s]}' % ", ".join(['"ab"'] * 80))
    rc, out, err = run(["conform", "--vectors", d, "-b", "cpu", "--variants", "none"])
    check(rc == 0, "a .json with 80 short strings (239 characters joined) is read", show(rc, out, err))
    empty = path("empty")
    os.mkdir(empty)
    rc, out, err = run(["conform", "--vectors", empty, "-b", "cpu"])
    check(rc == 2 and "no <name>.q.npy or <name>.x.npy" in err, "an empty vectors directory: exit 2 with a reason",
          show(rc, out, err))


def reshape(p, shape):
    descr, _, values = npy_read(p)
    npy_write(p, descr, shape, values)


def transpose2(p):
    descr, (r, c), v = npy_read(p)
    npy_write(p, descr, (c, r), [v[i * c + j] for j in range(c) for i in range(r)])


def conform_vectors(d, *extra):
    return run(["conform", "--vectors", d, "-b", "cpu", "--variants", "none"] + list(extra))


def test_shapes():
    """Codes/scales/LSE with the right element count but the wrong shape are refused; a set in which no case
    ran to a result is a failure, not "PASS: 0 cases passed"."""
    src = write_vectors("q", "quantize/tail/d48")  # x (64, 48): 2 blocks per row, codes (64, 32), scales (64, 2)
    stem = os.path.join(src, "quantize_tail_d48")
    rc, out, err = conform_vectors(src)
    check(rc == 0, "the exported quantize vector passes", show(rc, out, err))
    wrong = [("codes", (128, 16)), ("codes", (32, 64)), ("codes", (2048,)), ("scales", (2, 64)), ("scales", (128,)),
             ("codes", (64, 2, 16)), ("scales", (64, 2, 1))]
    for part, shape in wrong:
        d = path("q_%s_%s" % (part, "x".join(map(str, shape))))
        shutil.copytree(src, d)
        reshape(os.path.join(d, "quantize_tail_d48.%s.npy" % part), shape)
        rc, out, err = conform_vectors(d)
        check(rc == 1 and ("%s.npy: shape" % part) in out and "expected (64, " in out,
              "quantize %s reshaped to %s (same count) is refused, naming the shape" % (part, shape), show(rc, out, err))
    d = path("q_transposed")
    shutil.copytree(src, d)
    transpose2(os.path.join(d, "quantize_tail_d48.codes.npy"))
    rc, out, err = conform_vectors(d)
    check(rc == 1 and "codes.npy: shape (32, 64)" in out, "transposed codes are refused", show(rc, out, err))
    # x of rank 3 with codes/scales of x's leading shape: accepted
    d = path("q_rank3")
    shutil.copytree(src, d)
    st = os.path.join(d, "quantize_tail_d48")
    reshape(st + ".x.npy", (4, 16, 48))
    reshape(st + ".codes.npy", (4, 16, 32))
    reshape(st + ".scales.npy", (4, 16, 2))
    rc, out, err = conform_vectors(d)
    check(rc == 0, "x (4, 16, 48) with codes (4, 16, 32) and scales (4, 16, 2) passes", show(rc, out, err))
    reshape(st + ".scales.npy", (16, 4, 2))
    rc, out, err = conform_vectors(d)
    check(rc == 1 and "scales.npy: shape (16, 4, 2)" in out, "scales (16, 4, 2) for x (4, 16, 48) is refused",
          show(rc, out, err))

    # attention: an LSE of the right count in another shape
    src = write_vectors("a", "attention/mxattention/causal/d64/nk33")  # q (1, 4, 40, 64), lse (1, 4, 40)
    stem = "attention_mxattention_causal_d64_nk33"
    for shape, good in (((4, 1, 40), False), ((1, 40, 4), False), ((160,), False), ((4, 40), True), ((1, 4, 40, 1), True),
                        ((1, 1, 4, 40), True)):
        d = path("a_lse_%s" % "x".join(map(str, shape)))
        shutil.copytree(src, d)
        reshape(os.path.join(d, stem + ".lse.npy"), shape)
        rc, out, err = conform_vectors(d)
        if good:
            check(rc == 0, "lse of shape %s is accepted" % (shape,), show(rc, out, err))
        else:
            check(rc == 1 and "lse has shape" in out, "lse of shape %s (160 values) is refused" % (shape,),
                  show(rc, out, err))
    d = path("a_out")
    shutil.copytree(src, d)
    reshape(os.path.join(d, stem + ".out.npy"), (1, 40, 4, 64))
    rc, out, err = conform_vectors(d)
    check(rc == 1 and "shapes disagree" in out, "out (1, 40, 4, 64) for q (1, 4, 40, 64) is refused", show(rc, out, err))

    # nothing checked: every case unsupported on the device (PoCL refuses Bc 4096 at D 64)
    if present("opencl"):
        d = path("a_bc4096")
        shutil.copytree(src, d)
        with open(os.path.join(d, stem + ".json")) as f:
            meta = json.load(f)
        meta["bc"] = 4096
        with open(os.path.join(d, stem + ".json"), "w") as f:
            json.dump(meta, f)
        rc, out, err = run(["conform", "--vectors", d, "-b", "opencl", "--variants", "none"])
        if "1 unsupported" in out:
            check(rc == 1 and "nothing was checked" in out, "a set in which every case is unsupported fails",
                  show(rc, out, err))
            rc, out, err = run(["conform", "--vectors", d, "-b", "opencl", "--variants", "none", "--json"])
            check(rc == 1 and '"passed": false' in out, "... and --json says passed: false", show(rc, out, err))
        else:
            print("note: this OpenCL device runs Bc 4096 at D 64; the all-unsupported check did not run")
    else:
        print("note: no OpenCL device; the all-unsupported check did not run")


def test_fifo():
    """A FIFO among the vector files (a .npy or the .json sidecar) is refused at once, never waited on."""
    src = write_vectors("a", "attention/mxattention/causal/d64/nk33,quantize/tail/d48")
    att, qnt = "attention_mxattention_causal_d64_nk33", "quantize_tail_d48"
    for stem, part in ((att, "json"), (att, "q.npy"), (att, "k.npy"), (att, "out.npy"), (att, "lse.npy"),
                       (qnt, "json"), (qnt, "x.npy"), (qnt, "codes.npy")):
        d = path("fifo_%s_%s" % (stem[:1], part))
        shutil.copytree(src, d)
        f = os.path.join(d, "%s.%s" % (stem, part))
        os.remove(f)
        os.mkfifo(f)
        rc, out, err = run(["conform", "--vectors", d, "-b", "cpu", "--variants", "none"], timeout=60)
        check(rc != "timeout", "a FIFO as %s.%s: no hang" % (stem, part), show(rc, out, err))
        check(rc == 1 and "FIFO" in out and ("FAIL vectors/" + stem) in out,
              "a FIFO as %s.%s: that case fails, saying FIFO" % (stem, part), show(rc, out, err))
        other = qnt if stem == att else att
        check(("FAIL vectors/" + other) not in out and "1/2 passed" in out,
              "a FIFO as %s.%s: the other case still runs and passes" % (stem, part), show(rc, out, err))
    # a directory named like a sidecar
    d = path("dir_json")
    shutil.copytree(src, d)
    os.remove(os.path.join(d, att + ".json"))
    os.mkdir(os.path.join(d, att + ".json"))
    rc, out, err = run(["conform", "--vectors", d, "-b", "cpu", "--variants", "none"], timeout=60)
    check(rc == 1 and "is not a regular file" in out, "a directory as the .json sidecar is refused", show(rc, out, err))


def nudge_scale(d, ulps):
    """Every sidecar's softmax scale moved by `ulps` fp32 ulps (the expected outputs stay)."""
    for f in os.listdir(d):
        if f.endswith(".json"):
            p = os.path.join(d, f)
            with open(p) as fh:
                meta = json.load(fh)
            bits = struct.unpack("<I", struct.pack("<f", meta["scale"]))[0] + ulps
            meta["scale"] = float("%.9g" % struct.unpack("<f", struct.pack("<I", bits))[0])
            with open(p, "w") as fh:
                json.dump(meta, fh)


def only(src, stem, name):
    d = path(name)
    os.mkdir(d)
    for f in os.listdir(src):
        if f.startswith(stem + "."):
            shutil.copy(os.path.join(src, f), d)
    return d


def test_corrupt():
    """Corrupted expected outputs of the quantized recipes fail, naming the row and element (issue 15: +1e-3 on an
    element or a row, +0.03 on an element of 0.042 passed as "1 isolated code-flip row", an LSE +0.1 passed); a
    vector that differs by a real P~ code flip passes, the flip named."""
    cases = {"attention_mxattention_causal_d64_nk33": 64, "attention_ocp-direct_noncausal_d128_nk130": 128,
             "attention_mxattention_gqa_h8-hkv2_d64_nk100": 64}
    src = write_vectors("src", "attention/mxattention/causal/d64/nk33,attention/ocp-direct/noncausal/d128/nk130,"
                               "attention/mxattention/gqa/h8-hkv2/d64/nk100")
    rc, out, err = conform_vectors(src)
    check(rc == 0 and "3 cases passed" in out, "the uncorrupted vectors pass", show(rc, out, err))

    def corrupt(stem, part, fn):
        d = only(src, stem, "%s_%s_%d" % (stem, part, CHECKS[0]))
        p = os.path.join(d, "%s.%s.npy" % (stem, part))
        descr, shape, v = npy_read(p)
        fn(v)
        npy_write(p, descr, shape, v)
        return conform_vectors(d)

    for stem, D in cases.items():
        row = 10
        kinds = [
            ("+1e-3 on one element", "out", lambda v: v.__setitem__(row * D + 5, f32(v[row * D + 5] + 1e-3)),
             "row %d " % row, "element 5:"),
            ("+1e-3 on a whole row", "out", lambda v: [v.__setitem__(row * D + c, f32(v[row * D + c] + 1e-3)) for c in range(D)],
             "row %d " % row, "element "),
            ("+0.1 on one element", "out", lambda v: v.__setitem__(row * D + 7, f32(v[row * D + 7] + 0.1)),
             "row %d " % row, "element 7:"),
            ("LSE +0.1 in one row", "lse", lambda v: v.__setitem__(row, f32(v[row] + 0.1)), "lse row %d " % row, ""),
            ("LSE +1e-3 in one row", "lse", lambda v: v.__setitem__(row, f32(v[row] + 1e-3)), "lse row %d " % row, ""),
        ]
        for what, part, fn, want_row, want_elem in kinds:
            rc, out, err = corrupt(stem, part, fn)
            check(rc == 1 and ("FAIL vectors/" + stem) in out and want_row in out and want_elem in out,
                  "%s: %s fails, naming %s%s" % (stem, what, want_row, want_elem), show(rc, out, err))
        # +0.03 on the element nearest 0.042 in magnitude
        _, _, v = npy_read(os.path.join(src, stem + ".out.npy"))
        at = min(range(len(v)), key=lambda i: abs(abs(v[i]) - 0.042))
        rc, out, err = corrupt(stem, "out", lambda w: w.__setitem__(at, f32(w[at] + 0.03)))
        check(rc == 1 and ("row %d " % (at // D)) in out and ("element %d:" % (at % D)) in out,
              "%s: +0.03 on the element %.4f (row %d element %d) fails, naming it" % (stem, v[at], at // D, at % D),
              show(rc, out, err))

    # a real flip: seed 4's attention/random/13 with the scale 4 ulp smaller moves one P~ across an E2M1 boundary
    fsrc = path("flip")
    rc, out, err = run(["conform", "--write-vectors", fsrc, "--seed", "4", "-o", "attention/random/13"])
    nudge_scale(fsrc, -4)
    rc, out, err = run(["conform", "--vectors", fsrc, "-b", "cpu", "--variants", "none", "-v"])
    check(rc == 0 and "1 row differs by P~ code flips, each explained (row 925 the vectors: key 81" in out,
          "a vector that differs by one P~ code flip passes, the flip named", show(rc, out, err))
    # ... and a corruption in that very row still fails
    p = os.path.join(fsrc, "attention_random_13.out.npy")
    descr, shape, v = npy_read(p)
    D = shape[-1]
    v[925 * D + 3] = f32(v[925 * D + 3] + 1e-3)
    npy_write(p, descr, shape, v)
    rc, out, err = run(["conform", "--vectors", fsrc, "-b", "cpu", "--variants", "none"])
    check(rc == 1 and "row 925 " in out and "element 3:" in out and "no P~ code flip explains the row" in out,
          "+1e-3 in the flipped row fails, naming row 925 element 3", show(rc, out, err))
    # scores off by far more than fp32 rounding (the scale 1024 ulp off) fail too
    fsrc2 = path("scale1024")
    run(["conform", "--write-vectors", fsrc2, "-o", "attention/mxattention/noncausal/d128/nk130"])
    nudge_scale(fsrc2, 1024)
    rc, out, err = run(["conform", "--vectors", fsrc2, "-b", "cpu", "--variants", "none"])
    check(rc == 1 and "fp32 bound" in out, "vectors computed with a scale 1024 ulp off fail", show(rc, out, err))


def runs_of(out):
    doc = json.loads(out)
    return [(r["id"], r["env"], r["skipped"], r["passed"], r["failed"], [(c["name"], c["status"]) for c in r["cases"]])
            for r in doc["runs"]], doc


def test_isolate():
    """Several backends: each in a child of its own, results streamed back; a crash leaves the others reported."""
    sel = ["-o", "quantize/spec,attention/edges/mxattention/causal/nq1-nk1", "--quick"]
    have = [b for b in ("vulkan", "opencl") if present(b)]
    # one report, the same as each backend run on its own in this process
    rc, out, err = run(["conform", "--json"] + sel)
    check(rc == 0, "conform over every backend exits 0", show(rc, out, err))
    together, doc = runs_of(out)
    alone = []
    for b in ["hip", "vulkan", "opencl", "cpu"]:  # -b names it: an absent one is reported there, not without -b
        rc, o1, e1 = run(["conform", "-b", b, "--json"] + sel)
        alone += [r for r, full in zip(runs_of(o1)[0], json.loads(o1)["runs"])
                  if "absent on this machine" not in full["skip_reason"]]
    check(together == alone, "the runs over every backend equal each backend's in-process runs, in order",
          "together %s\nalone %s" % (together, alone))
    rc, out, err = run(["conform", "--csv", "--device", "cpu," + ",".join(b + ":0" for b in have)] + sel)
    check(rc == 0 and out.startswith("device,env,device_variant,case") and out.count('\n"cpu",') > 0 and
          all(('\n"%s:0",' % b) in out for b in have),
          "--csv over a --device list of several backends", show(rc, out, err))
    rc, out, err = run(["conform"] + sel)
    check(rc == 0 and out.count("\nconform: PASS:") == 1 and out.startswith("mxa conform "),
          "text: one header, one summary", show(rc, out, err))
    # support over several backends: columns from the children, one matrix
    rc, out, err = run(["conform", "support", "--json", "-b", ",".join(["cpu"] + have)])
    try:
        sup = json.loads(out)
        ids = [d["id"] for d in sup["devices"]]
    except ValueError:
        ids = []
    check(rc == 0 and "cpu" in ids and all(b + ":0" in ids for b in have), "support over several backends: one matrix",
          show(rc, out, err))
    if len(sys.argv) < 4:
        print("note: no crash preload given; the crash checks did not run")
        return
    env = dict(ENV)
    env["LD_PRELOAD"] = sys.argv[3] + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env["CONFORM_CRASH_BACKEND"] = "cpu"
    devs = "cpu," + ",".join(b + ":0" for b in have) if have else "cpu,hip:0"
    rc, out, err = run(["conform", "--device", devs, "-o", "attention/edges/mxattention/causal/nq1-nk1", "--variants",
                        "none"], env=env)
    check(rc == 1 and "cpu: skipped: its process crashed: signal 6" in out and "while testing" in out,
          "the cpu child aborting mid-test is a failure, reported", show(rc, out, err))
    for b in have:
        line = [l for l in out.splitlines() if l.startswith("%s:0 " % b) and " passed" in l]
        check(len(line) == 1 and line[0].split(": ")[1].split()[0] in ("1/1", "2/2"),
              "... and %s:0 still ran and passed after it" % b, show(rc, out, err))
    rc, out, err = run(["conform", "--device", devs, "-o", "attention/edges/mxattention/causal/nq1-nk1", "--variants",
                        "none", "--json"], env=env)
    try:
        doc = json.loads(out)
        crashed = [r for r in doc["runs"] if "crashed" in r["skip_reason"]]
        ok = rc == 1 and doc["passed"] is False and len(crashed) == 1 and crashed[0]["failed"] == 1
    except ValueError:
        ok = False
    check(ok, "--json: one run says crashed and counts as failed", show(rc, out, err))
    # a crash in a backend's only process, for comparison: the in-process single-backend run dies with it
    rc, out, err = run(["conform", "-b", "cpu", "-o", "attention/edges/mxattention/causal/nq1-nk1", "--variants", "none"],
                       env=env)
    check(rc != 0 and rc != 1, "(a single backend runs in this process: the abort takes it down, rc %s)" % rc)


def main():
    fn = globals().get("test_" + GROUP)
    if not fn:
        print("unknown group %s" % GROUP)
        return 2
    try:
        fn()
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
    print("%s: %d checks, %d failed" % (GROUP, CHECKS[0], len(FAILURES)))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
