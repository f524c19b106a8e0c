#!/usr/bin/env python3
"""End-to-end tests of the `mxa` binary (Python standard library only).

usage: test_cli.py MXA_BINARY GROUP    GROUP: usage | files | outputs | quantize | attention | probe | demo

Every bad input must exit non-zero with exactly one line "mxa: ..." on stderr
and leave no output file (nor a temporary one) behind. Good inputs are checked
against known values: the SPEC section 1 vector table and an independent
exact-rational model of MXFP4 for quantize, a float64 attention for the fp32
recipe.
"""
import json
import math
import os
import random
import re
import resource
import stat
import struct
import subprocess
import sys
import tempfile
from fractions import Fraction

MXA = os.path.abspath(sys.argv[1])
GROUP = sys.argv[2]
WORK = tempfile.mkdtemp(prefix="mxa_cli_test_")
FAILURES = []
CHECKS = [0]


def path(name):
    return os.path.join(WORK, name)


# ---------------------------------------------------------------- .npy files

def npy_bytes(shape, values, descr="<f4", version=1, fortran=False, dict_text=None):
    fmt = {"<f4": "f", "<f2": "e", "|u1": "B", "|b1": "?", "<f8": "d", "<i4": "i"}[descr]
    shape_text = "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
    header = dict_text if dict_text is not None else \
        "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape_text)
    pre = 10 if version == 1 else 12
    pad = (64 - (pre + len(header) + 1) % 64) % 64
    header = (header + " " * pad + "\n").encode()
    length = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + length + header + struct.pack("<%d%s" % (len(values), fmt), *values)


def save(name, shape, values, **kw):
    with open(path(name), "wb") as f:
        f.write(npy_bytes(shape, values, **kw))
    return path(name)


def load(name):
    with open(path(name), "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY", name
    hlen = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + hlen].decode()
    d = eval(header, {"__builtins__": {}}, {"False": False, "True": True})  # our own test output
    fmt = {"<f4": "f", "|u1": "B"}[d["descr"]]
    count = 1
    for s in d["shape"]:
        count *= s
    return d["descr"], tuple(d["shape"]), list(struct.unpack("<%d%s" % (count, fmt), data[10 + hlen:]))


def normal(rng, n, sigma=1.0):
    return [rng.gauss(0.0, sigma) for _ in range(n)]


# ---------------------------------------------------------------- running

def run(args, timeout=60):
    p = subprocess.run([MXA] + args, capture_output=True, text=True, timeout=timeout, cwd=WORK)
    return p.returncode, p.stdout, p.stderr


def check(cond, what):
    CHECKS[0] += 1
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def listing():
    return sorted(os.listdir(WORK))


def bad(args, expect_in=None, code=None, outputs=()):
    """A bad invocation: non-zero exit, one 'mxa: ' line on stderr, no new files."""
    before = listing()
    for o in outputs:
        check(not os.path.exists(path(o)), "output %s exists before the test" % o)
    rc, out, err = run(args)
    what = "mxa " + " ".join(args)
    lines = err.splitlines()
    check(rc != 0 and rc < 128, "%s: exit %d, expected a clean failure" % (what, rc))
    if code is not None:
        check(rc == code, "%s: exit %d, expected %d" % (what, rc, code))
    check(len(lines) == 1 and lines[0].startswith("mxa: "), "%s: stderr is not one 'mxa:' line: %r" % (what, err))
    if expect_in:
        check(expect_in in err, "%s: stderr %r lacks %r" % (what, err, expect_in))
    check(listing() == before, "%s: files changed: %s -> %s" % (what, before, listing()))
    for o in outputs:
        check(not os.path.exists(path(o)), "%s: left the output %s" % (what, o))


def good(args, timeout=60):
    rc, out, err = run(args, timeout)
    check(rc == 0, "mxa %s: exit %d, stderr %r" % (" ".join(args), rc, err))
    return out


def devices():
    """Ids of every present device (probe --json)."""
    rc, out, _ = run(["probe", "--json"])
    return [d["id"] for d in json.loads(out)["devices"]] if rc == 0 else []


# ---------------------------------------------------------------- usage

def test_usage():
    bad([], "no command", 2)
    bad(["bogus"], "unknown command 'bogus'", 2)
    bad(["--bogus"], "unknown command", 2)
    out = good(["--help"])
    for cmd in ("probe", "demo", "attention", "quantize"):
        check(cmd in out, "--help lists %s" % cmd)
        sub = good([cmd, "--help"])
        check(sub.startswith("usage: mxa " + cmd), "mxa %s --help prints its usage" % cmd)
        bad([cmd, "--no-such-flag"], "unknown option '--no-such-flag'", 2)
        bad([cmd, "--help=x"], "unknown option", 2)
    check(good(["--version"]).strip().startswith("mxa "), "--version")
    bad(["probe", "extra"], "unexpected argument", 2)
    bad(["probe", "--json=1"], "takes no value", 2)
    bad(["probe", "--json", "--json"], "given twice", 2)
    bad(["demo", "x"], "unexpected argument", 2)
    bad(["demo", "--device"], "needs a value", 2)
    bad(["demo", "--device="], "non-empty value", 2)
    bad(["demo", "--device", "nope"], "unknown backend 'nope'", 1)
    bad(["demo", "--device", "cpu:7"], "device 'cpu:7'", 1)
    bad(["bench", "--dtype", "f64"], "--dtype 'f64'", 2)
    for dt in ("f16", "bf16"):  # 16-bit q, k, v in the device's buffers, said in the JSON
        out = good(["bench", "--device", "cpu", "--shape", "1,1,64,32", "--reps", "1", "--no-blas", "--no-fp32",
                    "--json", "--dtype", dt])
        rec = json.loads(out)
        check(rec["input_dtype"] == dt and rec["results"][0]["tflops"] > 0, "bench --dtype %s: %r" % (dt, rec))
        # the backend's own time of each call lies inside the call, so its median does too
        r0 = rec["results"][0]
        check(0 < r0["device_seconds"] <= r0["seconds"] and r0["device_tflops"] >= r0["tflops"], "bench device time: %r" % r0)


# ---------------------------------------------------------------- files

def test_files():
    """Broken .npy inputs through the CLI: one clear line each."""
    good_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 32), }"
    cases = [
        ("i4.npy", npy_bytes((2, 32), [0] * 64, descr="<i4"), "unsupported dtype '<i4'"),
        ("fortran.npy", npy_bytes((2, 32), [0.0] * 64, fortran=True), "Fortran-order"),
        ("v2.npy", npy_bytes((2, 32), [0.0] * 64, version=2)[:-4], "truncated"),
        ("trunc.npy", npy_bytes((2, 32), [0.0] * 64)[:-1], "truncated: float32 (2, 32) needs 256 data bytes"),
        ("trail.npy", npy_bytes((2, 32), [0.0] * 64) + b"xyz", "3 bytes of trailing garbage"),
        ("magic.npy", b"PK\x03\x04 this is a zip", "not a .npy file"),
        ("empty.npy", b"", "empty"),
        ("version.npy", b"\x93NUMPY\x05\x00" + npy_bytes((2, 32), [0.0] * 64)[8:], "version 5.0"),
        ("huge.npy", b"\x93NUMPY\x02\x00" + struct.pack("<I", 1 << 20) + b"{" * 100, "above the limit"),
        ("shape5.npy", npy_bytes((5,), [0.0] * 5, dict_text="{'descr': '<f4', 'fortran_order': False, 'shape': (5), }"),
         "not a tuple"),
        ("rank9.npy", npy_bytes((1,) * 9, [0.0]), "more than 8 dimensions"),
        ("overflow.npy", npy_bytes((1, 1), [0.0], dict_text="{'descr': '<f4', 'fortran_order': False, "
                                   "'shape': (281474976710656, 281474976710656), }"), "too many elements"),
        ("nokey.npy", npy_bytes((2,), [0.0] * 2, dict_text="{'descr': '<f4', 'shape': (2,), }"),
         "'fortran_order' is missing"),
        ("dup.npy", npy_bytes((2,), [0.0] * 2, dict_text="{'descr': '<f4', 'descr': '<f4', "
                              "'fortran_order': False, 'shape': (2,), }"), "twice"),
        ("garbage.npy", npy_bytes((2,), [0.0] * 2, dict_text=good_dict[:-1] + " 42"), "malformed header"),
        ("nocomma.npy", npy_bytes((2,), [0.0] * 2, dict_text=good_dict[:-3] + " 42}"), "',' or '}'"),
    ]
    for name, data, message in cases:
        with open(path(name), "wb") as f:
            f.write(data)
        bad(["quantize", name, "--rule", "uos", "--dequant", "o.npy"], name + ": ", 1, ["o.npy"])
        bad(["quantize", name, "--rule", "uos"], message, 1)
        save("ok.npy", (1, 4, 16, 32), [0.5] * 2048)
        bad(["attention", "--q", "ok.npy", "--k", name, "--v", "ok.npy", "--out", "o.npy"], name + ": ", 1, ["o.npy"])
    bad(["quantize", "missing.npy", "--rule", "uos"], "missing.npy: cannot open: No such file", 1)
    os.mkdir(path("adir"))
    bad(["quantize", "adir", "--rule", "uos"], "adir: is a directory", 1)
    # A FIFO with no writer (or a device) as an input: refused at once, not read forever.
    os.mkfifo(path("fifo.npy"))
    save("ok.npy", (1, 4, 16, 32), [0.5] * 2048)
    for args in (["quantize", "fifo.npy", "--rule", "uos"],
                 ["attention", "--q", "ok.npy", "--k", "fifo.npy", "--v", "ok.npy", "--out", "o.npy"],
                 ["analyze", "uos", "fifo.npy"],
                 ["analyze", "rowsum", "--q", "ok.npy", "--k", "ok.npy", "--v", "fifo.npy"]):
        try:
            bad(args, "fifo.npy: is a FIFO (named pipe), not a .npy file", 1, ["o.npy"])
        except subprocess.TimeoutExpired:
            check(False, "mxa %s hangs on a FIFO input" % " ".join(args))
    bad(["quantize", "/dev/null", "--rule", "uos"], "/dev/null: is a character device, not a .npy file", 1)


# ---------------------------------------------------------------- quantize

E2M1 = [Fraction(0), Fraction(1, 2), Fraction(1), Fraction(3, 2), Fraction(2), Fraction(3), Fraction(4), Fraction(6)]


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def model_block(xs, rule):
    """SPEC section 1 from first principles: exact rationals, no thresholds table."""
    if any(math.isnan(x) or math.isinf(x) for x in xs):
        return 0xFF, [0] * 32
    xs = xs + [0.0] * (32 - len(xs))
    m = max(abs(Fraction(x)) for x in xs)
    if m == 0:
        e = 0
    elif m < Fraction(2) ** -126:
        e = -127
    else:
        big_e = math.frexp(float(m))[1] - 1  # m = mant * 2^big_e, mant in [1, 2)
        if rule == "ocp":
            e = big_e - 2
        else:
            q = Fraction({"tfs": 6, "uos": Fraction(29, 4)}.get(rule, rule))
            e = big_e - 4
            while m > q * Fraction(2) ** e:
                e += 1
        e = max(-127, min(127, e))
    codes = []
    for x in xs:
        v = abs(Fraction(x)) / Fraction(2) ** e
        best = min(range(8), key=lambda c: (abs(E2M1[c] - v), c % 2))  # nearest, ties to the even code
        if v > 6:
            best = 7
        codes.append((8 if math.copysign(1.0, x) < 0 else 0) | best)
    return e + 127, codes


def pack(codes):
    return [codes[2 * i] | (codes[2 * i + 1] << 4) for i in range(len(codes) // 2)]


def quantize_cli(name, rule, shape, values, descr="<f4"):
    save(name, shape, values, descr=descr)
    good(["quantize", name, "--rule", rule, "--codes", "c.npy", "--scales", "s.npy", "--dequant", "d.npy"])
    return load("c.npy"), load("s.npy"), load("d.npy")


def test_quantize_float64():
    rng = random.Random(9)
    x = normal(rng, 4 * 100, 3.0)
    save("x64.npy", (4, 100), x, descr="<f8")
    save("x32.npy", (4, 100), [f32(v) for v in x])
    out = good(["quantize", "x64.npy", "--rule", "uos", "--codes", "c64.npy", "--scales", "s64.npy"])
    check(out.startswith("x64.npy: float64 (converted to float32) (4, 100) ->"), "quantize names float64: %r" % out)
    good(["quantize", "x32.npy", "--rule", "uos", "--codes", "c32.npy", "--scales", "s32.npy"])
    check(load("c64.npy") == load("c32.npy") and load("s64.npy") == load("s32.npy"),
          "float64 quantizes as its float32 rounding")
    save("xbig.npy", (4, 100), [1e300 if i == 17 else 1.0 for i in range(400)], descr="<f8")
    bad(["quantize", "xbig.npy", "--rule", "uos", "--dequant", "d.npy"],
        "mxa: xbig.npy: element 17 is 1e+300, beyond float32's range", 1, ["d.npy"])


def test_quantize():
    test_quantize_float64()
    tiny = struct.unpack("<f", struct.pack("<I", 0x00000003 << 21))[0]  # 3 * 2^-128 (subnormal)
    flt_max = struct.unpack("<f", struct.pack("<I", 0x7F7FFFFF))[0]
    # SPEC section 1 vectors: (elements, {rule: (e, codes)}); codes of the listed elements.
    table = [
        ([6, 0.25, 0.75, 1.25, 1.75], {r: (0, [7, 0, 2, 2, 4]) for r in ("ocp", "tfs", "uos")}),
        ([6, 2.5, 3.5, 5, 5.5], {r: (0, [7, 4, 6, 6, 7]) for r in ("ocp", "tfs", "uos")}),
        ([-6, -0.0, -0.25, -2.5, 0.1], {r: (0, [15, 8, 8, 12, 0]) for r in ("ocp", "tfs", "uos")}),
        ([1, 0.0625, 0.1875, 0.375], {r: (-2, [6, 0, 2, 3]) for r in ("ocp", "tfs", "uos")}),
        ([1.5 + 2 ** -23], {"ocp": (-2, [7]), "tfs": (-1, [5]), "uos": (-2, [7])}),
        ([1.8125], {"ocp": (-2, [7]), "tfs": (-1, [6]), "uos": (-2, [7])}),
        ([1.8125 + 2 ** -23], {"ocp": (-2, [7]), "tfs": (-1, [6]), "uos": (-1, [6])}),
        ([7, 3], {"ocp": (0, [7, 5]), "tfs": (1, [6, 3]), "uos": (0, [7, 5])}),
        ([8 - 2 ** -21], {"ocp": (0, [7]), "tfs": (1, [6]), "uos": (1, [6])}),
        ([tiny], {r: (-127, [3]) for r in ("ocp", "tfs", "uos")}),
        ([flt_max], {"ocp": (125, [7]), "tfs": (126, [6]), "uos": (126, [6])}),
        ([0.0, -0.0], {r: (0, [0, 8]) for r in ("ocp", "tfs", "uos")}),
        ([1, -0.5, 6, -6], {r: (0, [2, 9, 7, 15]) for r in ("ocp", "tfs", "uos")}),
    ]
    for rule in ("ocp", "tfs", "uos"):
        values = []
        for elems, _ in table:
            values += [f32(x) for x in elems] + [0.0] * (32 - len(elems))
        values += [float("nan"), 1.0] + [0.0] * 30
        (cd, cshape, codes), (sd, sshape, scales), (dd, dshape, deq) = quantize_cli("vec.npy", rule, (len(table) + 1, 32), values)
        check(cd == "|u1" and cshape == (len(table) + 1, 16), "codes dtype/shape %s %s" % (cd, cshape))
        check(sd == "|u1" and sshape == (len(table) + 1, 1), "scales dtype/shape %s %s" % (sd, sshape))
        check(dd == "<f4" and dshape == (len(table) + 1, 32), "dequant dtype/shape %s %s" % (dd, dshape))
        for row, (elems, expect) in enumerate(table):
            e, want = expect[rule]
            got_codes = [(codes[row * 16 + i // 2] >> (4 * (i % 2))) & 15 for i in range(32)]
            check(scales[row] == e + 127, "SPEC row %d %s: scale %d, expected %d" % (row, rule, scales[row], e + 127))
            check(got_codes[:len(want)] == want and not any(got_codes[len(want):]),
                  "SPEC row %d %s: codes %s, expected %s" % (row, rule, got_codes[:len(want)], want))
        check(scales[len(table)] == 0xFF and not any(codes[len(table) * 16:]), "NaN block: scale 0xFF, codes 0")
        check(all(math.isnan(x) for x in deq[len(table) * 32:]), "NaN block dequantizes to NaN")
        check(codes[12 * 16:12 * 16 + 2] == [0x92, 0xF7], "SPEC packed bytes 0x92 0xF7")

    # Every device quantizes bit-exactly like the CPU (SPEC section 3).
    with open(path("c.npy"), "rb") as f:
        cpu_codes = f.read()
    with open(path("s.npy"), "rb") as f:
        cpu_scales = f.read()
    for dev in devices():
        good(["quantize", "vec.npy", "--rule", "uos", "--codes", "c.npy", "--scales", "s.npy", "--device", dev])
        with open(path("c.npy"), "rb") as f, open(path("s.npy"), "rb") as g:
            check(f.read() == cpu_codes and g.read() == cpu_scales, "device %s quantizes bit-exactly" % dev)

    # Random blocks of every magnitude, any rank, tails: against the exact model.
    rng = random.Random(7)
    for rule in ("ocp", "tfs", "uos", "q=6.5", "q=8"):
        shape = (3, 2, 75)  # 6 rows, 3 blocks each (the last has 11 elements)
        values = []
        for r in range(6):
            scale = 2.0 ** rng.randint(-130, 120)
            values += [f32(rng.uniform(-8, 8) * scale * rng.choice([1, 1, 0.01])) for _ in range(75)]
        (_, cshape, codes), (_, sshape, scales), (_, _, deq) = quantize_cli("rand.npy", rule, shape, values)
        check(cshape == (3, 2, 48) and sshape == (3, 2, 3), "rank-3 shapes %s %s" % (cshape, sshape))
        mr = Fraction(rule[2:]) if rule.startswith("q=") else rule
        mismatches = 0
        for r in range(6):
            for b in range(3):
                xs = values[r * 75 + b * 32: r * 75 + min(75, b * 32 + 32)]
                s, cs = model_block(xs, mr)
                if scales[r * 3 + b] != s or codes[r * 48 + b * 16: r * 48 + b * 16 + 16] != pack(cs):
                    mismatches += 1
        check(mismatches == 0, "rule %s: %d of 18 random blocks differ from the exact model" % (rule, mismatches))
    # float16 input: widened exactly, same codes as its float32 twin.
    vals16 = [struct.unpack("<e", struct.pack("<e", rng.gauss(0, 3)))[0] for _ in range(64)]
    c16, s16, _ = quantize_cli("h.npy", "uos", (64,), vals16, descr="<f2")
    c32, s32, _ = quantize_cli("h32.npy", "uos", (64,), vals16)
    check(c16 == c32 and s16 == s32, "float16 input quantizes like its float32 twin")
    out = good(["quantize", "h.npy", "--rule", "uos"])
    check("1 rows x 2 blocks" in out and "NMSE" in out, "quantize summary: %r" % out)

    save("x.npy", (4, 64), normal(rng, 256))
    save("u8.npy", (4, 64), [1] * 256, descr="|u1")
    save("scalar.npy", (), [1.0])
    save("zero.npy", (0, 32), [])
    o = ["o.npy", "c.npy", "s.npy"]
    for f in o:
        if os.path.exists(path(f)):
            os.remove(path(f))
    bad(["quantize", "x.npy"], "--rule is required", 2, o)
    bad(["quantize", "--rule", "uos"], "missing argument", 2, o)
    bad(["quantize", "x.npy", "y.npy", "--rule", "uos"], "unexpected argument 'y.npy'", 2, o)
    bad(["quantize", "x.npy", "--rule", "q=9"], "--rule q=9", 2, o)
    bad(["quantize", "x.npy", "--rule", "q=5.9"], "--rule q=5.9", 2, o)
    bad(["quantize", "x.npy", "--rule", "mx"], "--rule mx", 2, o)
    bad(["quantize", "x.npy", "--rule"], "needs a value", 2, o)
    bad(["quantize", "x.npy", "--rule", "uos", "--rule", "ocp"], "given twice", 2, o)
    bad(["quantize", "x.npy", "--rule", "uos", "--codes", "c.npy"], "go together", 2, o)
    bad(["quantize", "x.npy", "--rule", "uos", "--scales", "s.npy"], "go together", 2, o)
    bad(["quantize", "x.npy", "--rule", "uos", "--codes", "c.npy", "--scales", "c.npy"], "same file", 2, o)
    bad(["quantize", "x.npy", "--rule", "uos", "--dequant"], "needs a value", 2, o)
    bad(["quantize", "x.npy", "--rule", "uos", "--dequant", "--codes", "c.npy"], "needs a value", 2, o)
    bad(["quantize", "x.npy", "--rule", "uos", "--device", "nope", "--dequant", "o.npy"], "nope", 1, o)
    bad(["quantize", "x.npy", "--rule", "uos", "--axis", "0", "--dequant", "o.npy"], "--axis 0: only the last axis", 2, o)
    bad(["quantize", "x.npy", "--rule", "uos", "--axis", "-2", "--dequant", "o.npy"], "--axis -2", 2, o)
    bad(["quantize", "x.npy", "--rule", "uos", "--axis", "z", "--dequant", "o.npy"], "--axis z: expected an integer", 2, o)
    check(good(["quantize", "x.npy", "--rule", "uos", "--axis", "1"]).startswith("x.npy"), "--axis 1 of a 2-D array")
    check(good(["quantize", "x.npy", "--rule", "uos", "--axis=-1"]).startswith("x.npy"), "--axis=-1")
    bad(["quantize", "u8.npy", "--rule", "uos", "--dequant", "o.npy"], "uint8 cannot be quantized", 1, o)
    bad(["quantize", "scalar.npy", "--rule", "uos", "--dequant", "o.npy"], "rank 0", 1, o)
    bad(["quantize", "zero.npy", "--rule", "uos", "--dequant", "o.npy"], "no elements", 1, o)
    # An unwritable output: nothing written, not even the outputs that could be.
    bad(["quantize", "x.npy", "--rule", "uos", "--codes", "c.npy", "--scales", "s.npy", "--dequant", "nodir/o.npy"],
        "nodir/o.npy: cannot create", 1, o)


# ---------------------------------------------------------------- attention

def naive_attention(q, k, v, shape_q, shape_k, causal, scale=None):
    """float64 softmax(q k^T * scale) v, [B, H, N, D] flattened, GQA, bottom-right causal."""
    b_, h, nq, d = shape_q
    hkv, nk = shape_k[1], shape_k[2]
    scale = scale or 1.0 / math.sqrt(d)
    out = []
    for b in range(b_):
        for hh in range(h):
            kh = hh // (h // hkv)
            for i in range(nq):
                qi = q[((b * h + hh) * nq + i) * d:][:d]
                scores = []
                for j in range(nk):
                    if causal and j > i + nk - nq:
                        continue
                    kj = k[((b * hkv + kh) * nk + j) * d:][:d]
                    scores.append((j, sum(x * y for x, y in zip(qi, kj)) * scale))
                if not scores:
                    out += [0.0] * d
                    continue
                m = max(s for _, s in scores)
                w = [(j, math.exp(s - m)) for j, s in scores]
                total = sum(x for _, x in w)
                for c in range(d):
                    out.append(sum(x * v[((b * hkv + kh) * nk + j) * d + c] for j, x in w) / total)
    return out


def nmse(a, ref):
    return sum((x - y) ** 2 for x, y in zip(a, ref)) / sum(y * y for y in ref)


def test_attention():
    rng = random.Random(3)
    # fp32 recipe against float64, for every accepted rank, GQA, causal with Nq < Nk, float16 input.
    for shape_q, shape_k, causal, descr in [((1, 2, 40, 32), (1, 1, 45, 32), True, "<f4"),
                                            ((2, 24, 64), (2, 24, 64), False, "<f4"),
                                            ((33, 32), (70, 32), True, "<f2")]:
        full_q = (1,) * (4 - len(shape_q)) + shape_q
        full_k = (1,) * (4 - len(shape_k)) + shape_k
        nq, nk = math.prod(shape_q), math.prod(shape_k)
        q, k, v = normal(rng, nq), normal(rng, nk), normal(rng, nk)
        if descr == "<f2":
            q, k, v = ([struct.unpack("<e", struct.pack("<e", x))[0] for x in t] for t in (q, k, v))
        save("q.npy", shape_q, q, descr=descr)
        save("k.npy", shape_k, k, descr=descr)
        save("v.npy", shape_k, v, descr=descr)
        args = ["attention", "--q", "q.npy", "--k", "k.npy", "--v", "v.npy", "--out", "o.npy", "--lse", "l.npy",
                "--recipe", "fp32"] + (["--causal"] if causal else [])
        out = good(args)
        check(out.startswith("wrote o.npy"), "attention prints what it wrote: %r" % out)
        descr_o, oshape, o = load("o.npy")
        _, lshape, _ = load("l.npy")
        check(descr_o == "<f4" and oshape == shape_q, "output shape %s for q %s" % (oshape, shape_q))
        check(lshape == shape_q[:-1], "lse shape %s for q %s" % (lshape, shape_q))
        err = nmse(o, naive_attention(q, k, v, full_q, full_k, causal))
        check(err < 1e-10, "fp32 recipe vs float64, q %s causal %s: NMSE %g" % (shape_q, causal, err))

        # The fp32 recipe on every device (summation order may differ: fp32 rounding only).
        if shape_q == (2, 24, 64):
            ref = naive_attention(q, k, v, full_q, full_k, causal)
            for dev in devices():
                good(args + ["--device", dev])
                err = nmse(load("o.npy")[2], ref)
                check(err < 1e-10, "fp32 recipe on %s vs float64: NMSE %g" % (dev, err))

    # --stats: numbers for every recipe; PNQ row sums exactly 1.
    save("q.npy", (1, 2, 64, 64), normal(rng, 8192))
    save("k.npy", (1, 2, 96, 64), normal(rng, 12288))
    save("v.npy", (1, 2, 96, 64), normal(rng, 12288))
    base = ["attention", "--q", "q.npy", "--k", "k.npy", "--v", "v.npy", "--out", "o.npy"]
    for recipe in ("fp32", "ocp-direct", "mxattention"):
        out = good(base + ["--recipe", recipe, "--stats"])
        stats = {}
        for line in out.splitlines():
            words = line.replace("|sum-1|", "maxdev").split()
            if line.startswith("vs fp32"):
                stats["nmse"], stats["cos"] = float(words[3]), float(words[5])
                check(line.endswith("(host reference, fp32 recipe)"), "vs fp32 names what it compares with: %r" % line)
            if line.startswith("vs reference"):
                stats["ref"] = float(words[3])
                check(re.search(r"\(host reference, these switches, Bc \d+\)$", line) is not None,
                      "vs reference names what it compares with: %r" % line)
            if words and words[0] in ("direct", "pnq"):
                stats[words[0]] = [float(words[i]) for i in (2, 4, 6, 9)]
        check("nmse" in stats and "ref" in stats and "pnq" in stats and "direct" in stats,
              "%s --stats output: %r" % (recipe, out))
        if "pnq" not in stats or "ref" not in stats:
            continue
        # A correct device matches the host reference of the same recipe and Bc (PNQ code flips aside).
        check(stats["ref"] < 1e-6, "%s: the device matches the reference: %r" % (recipe, out))
        check(stats["pnq"] == [1.0, 1.0, 1.0, 0.0], "%s: PNQ row sums exactly 1: %s" % (recipe, stats["pnq"]))
        if recipe == "fp32":
            check(stats["nmse"] < 1e-10 and stats["direct"] == [1.0, 1.0, 1.0, 0.0], "fp32 vs the fp32 reference: %r" % out)
        else:
            check(0 < stats["nmse"] < 0.5 and 0.8 < stats["cos"] <= 1, "%s accuracy: %r" % (recipe, out))
            check(stats["direct"][3] > 0, "%s: direct placement row sums drift: %s" % (recipe, stats["direct"]))
    for dev in devices():
        out = good(base + ["--stats", "--device", dev])
        ref = [l for l in out.splitlines() if l.startswith("vs reference")]
        check(len(ref) == 1 and float(ref[0].split()[3]) < 1e-6, "%s matches the host reference: %r" % (dev, out))
    out = good(base + ["--hadamard", "off", "--rule", "q=6.5", "--placement", "direct", "--quantize", "p,qk",
                       "--scale", "0.2", "--bc", "96", "--causal", "--stats", "--device", "cpu"])
    check("hadamard off, rule q=6.5, placement direct, quantize qk,p, scale 0.2, causal on" in out and "Bc 96" in out,
          "overrides reach the descriptor: %r" % out)
    check(good(base + ["--quantize", "none"]).startswith("wrote"), "--quantize none")
    check("scale 9.99995e-41," in good(base + ["--scale", "1e-40", "--stats"]), "a positive subnormal --scale is taken")

    # float64 (numpy's default) is read as float32, once: the same output as the float32-rounded
    # inputs, and --stats says so. A finite float64 beyond float32's range is refused like Inf.
    q64, k64 = normal(rng, 8192), normal(rng, 12288)
    save("q64.npy", (1, 2, 64, 64), q64, descr="<f8")
    save("k64.npy", (1, 2, 96, 64), k64, descr="<f8")
    save("q32.npy", (1, 2, 64, 64), [f32(x) for x in q64])
    save("k32r.npy", (1, 2, 96, 64), [f32(x) for x in k64])
    good(["attention", "--q", "q64.npy", "--k", "k64.npy", "--v", "v.npy", "--out", "o64.npy"])
    good(["attention", "--q", "q32.npy", "--k", "k32r.npy", "--v", "v.npy", "--out", "o32.npy"])
    check(load("o64.npy") == load("o32.npy"), "float64 inputs give the float32-rounded inputs' output")
    out = good(["attention", "--q", "q64.npy", "--k", "k64.npy", "--v", "v.npy", "--out", "o64.npy", "--stats"])
    check("q float64 (converted to float32 on reading) k float64 (converted to float32 on reading) v float32" in out,
          "--stats names the float64 conversion: %r" % out)
    for name, value in (("qbig.npy", 1e39), ("qbig2.npy", -3.5e38)):
        save(name, (1, 2, 64, 64), [value if i == 3 else 0.5 for i in range(8192)], descr="<f8")
        bad(["attention", "--q", name, "--k", "k.npy", "--v", "v.npy", "--out", "o_no.npy"],
            "mxa: %s: element 3 is %s, beyond float32's range" % (name, "%.9g" % value), 1, ["o_no.npy"])
    save("qinf64.npy", (1, 2, 64, 64), [float("inf") if i == 5 else 0.5 for i in range(8192)], descr="<f8")
    bad(["attention", "--q", "qinf64.npy", "--k", "k.npy", "--v", "v.npy", "--out", "o_no.npy"],
        "mxa: qinf64.npy: element 5 is Inf", 1, ["o_no.npy"])

    # Bad inputs: every flag, every shape problem; no output is ever left behind.
    save("q48.npy", (1, 2, 16, 48), normal(rng, 1536))
    save("q40.npy", (1, 2, 16, 40), normal(rng, 1280))
    save("k3.npy", (1, 3, 96, 64), normal(rng, 18432))
    save("k32.npy", (1, 2, 96, 32), normal(rng, 6144))
    save("kb2.npy", (2, 2, 96, 64), normal(rng, 24576))
    save("v95.npy", (1, 2, 95, 64), normal(rng, 12160))
    save("r3.npy", (2, 64, 64), normal(rng, 8192))
    save("r1.npy", (64,), normal(rng, 64))
    save("r5.npy", (1, 1, 2, 64, 64), normal(rng, 8192))
    save("u8.npy", (1, 2, 64, 64), [1] * 8192, descr="|u1")
    save("qnan.npy", (1, 2, 64, 64), [float("nan") if i == 77 else 0.5 for i in range(8192)])
    save("qinf.npy", (1, 2, 64, 64), [float("inf") if i == 5 else 0.5 for i in range(8192)])
    save("vnan.npy", (1, 2, 96, 64), [float("nan") if i == 6143 else 0.5 for i in range(12288)])
    for f in ("o.npy", "l.npy"):
        os.remove(path(f)) if os.path.exists(path(f)) else None
    o = ["o.npy", "l.npy"]
    req = {"--q": "q.npy", "--k": "k.npy", "--v": "v.npy", "--out": "o.npy"}
    for flag in req:
        args = ["attention"] + [x for f, p in req.items() if f != flag for x in (f, p)]
        bad(args, "%s is required" % flag, 2, o)
        args = ["attention"] + [x for f, p in req.items() if f != flag for x in (f, p)] + [flag]
        bad(args, "needs a value", 2, o)
    bad(["attention", "--q", "--k", "k.npy", "--v", "v.npy", "--out", "o.npy"], "--q needs a value", 2, o)
    bad(base + ["--lse", "l.npy", "--q", "q.npy"], "--q is given twice", 2, o)
    bad(base + ["extra.npy"], "unexpected argument", 2, o)
    bad(["attention", "--q", "q.npy", "--k", "k.npy", "--v", "r3.npy", "--out", "o.npy"],
        "r3.npy: rank 3 differs", 1, o)
    flags = [
        (["--recipe", "mxfp8"], "--recipe mxfp8: expected one of mxattention, ocp-direct, fp32"),
        (["--recipe"], "needs a value"),
        (["--hadamard", "yes"], "--hadamard yes: expected one of on, off"),
        (["--rule", "q=9"], "--rule q=9"),
        (["--rule", "q=x"], "--rule q=x"),
        (["--placement", "after"], "--placement after"),
        (["--quantize", "qk,x"], "--quantize qk,x"),
        (["--quantize", "qk,qk"], "--quantize qk,qk"),
        (["--quantize", "qk,"], "--quantize qk,"),
        (["--quantize="], "non-empty value"),
        (["--causal=1"], "--causal 1: expected one of none, bottom-right, top-left"),
        (["--causal", "sideways"], "--causal sideways: expected one of none, bottom-right, top-left"),
        (["--causal="], "needs a non-empty value"),
        (["--stats=yes"], "takes no value"),
        (["--scale", "-1"], "--scale -1: expected a finite number > 0"),
        (["--scale", "0"], "--scale 0"),
        (["--scale", "nan"], "--scale nan"),
        (["--scale", "inf"], "--scale inf"),
        (["--scale", "1e99"], "--scale 1e99"),
        (["--scale", "0.5x"], "--scale 0.5x"),
        (["--bc", "33"], "--bc 33: expected a multiple of 32 in [32, 4096]"),
        (["--bc", "0"], "--bc 0"),
        (["--bc", "-32"], "--bc -32"),
        (["--bc", "8192"], "--bc 8192"),
        (["--bc", "64.0"], "--bc 64.0"),
        (["--bc", " 64"], "--bc  64: expected a multiple of 32 in [32, 4096], without blanks"),
        (["--bc", "64 "], "--bc 64 : expected a multiple of 32 in [32, 4096], without blanks"),
        (["--scale", " 0.5"], "--scale  0.5: expected a finite number > 0, without blanks"),
        (["--scale", "1e-50"], "--scale 1e-50: expected a finite number > 0 (it rounds to 0 in float32)"),
        (["--bc", "99999999999999999999999"], "--bc 9999"),
        (["--device", "nope"], "unknown backend 'nope'"),
        (["--device", "vulkan:x"], "bad device index"),
        (["--lse", "o.npy"], "--out and --lse name the same file"),
        (["--lse", "nodir/l.npy"], "nodir/l.npy: cannot create"),
    ]
    for extra, message in flags:
        bad(base + extra, message, None, o)
    swaps = [
        ("--q", "missing.npy", "missing.npy: cannot open"),
        ("--q", "u8.npy", "u8.npy: dtype uint8 is not an attention input"),
        ("--q", "r1.npy", "r1.npy: shape (64,) has rank 1"),
        ("--q", "r5.npy", "has rank 5"),
        ("--k", "r3.npy", "r3.npy: rank 3 differs from the rank 4 of --q"),
        ("--q", "q48.npy", "head sizes differ"),
        ("--k", "k32.npy", "head sizes differ"),
        ("--k", "kb2.npy", "batch sizes differ"),
        ("--v", "v95.npy", "differ"),
        ("--q", "qnan.npy", "mxa: qnan.npy: element 77 is NaN"),
        ("--q", "qinf.npy", "mxa: qinf.npy: element 5 is Inf"),
        ("--v", "vnan.npy", "mxa: vnan.npy: element 6143 is NaN"),
        ("--out", "nodir/o.npy", "nodir/o.npy: cannot create"),
    ]
    for flag, value, message in swaps:
        args = ["attention"] + [x for f, p in req.items() for x in (f, value if f == flag else p)]
        bad(args + ["--lse", "l.npy"], message, None, o)
    bad(["attention", "--q", "q.npy", "--k", "k3.npy", "--v", "k3.npy", "--out", "o.npy"],
        "kv heads (3) must divide query heads (2)", 1, o)
    # Head sizes the Hadamard rotation or the format cannot take.
    save("q96.npy", (1, 2, 16, 96), normal(rng, 3072))
    save("k40.npy", (1, 2, 16, 40), normal(rng, 1280))
    bad(["attention", "--q", "q96.npy", "--k", "q96.npy", "--v", "q96.npy", "--out", "o.npy"],
        "the Hadamard rotation needs D in {32, 64, 128, 256}, got D=96", 1, o)
    bad(["attention", "--q", "q40.npy", "--k", "k40.npy", "--v", "k40.npy", "--out", "o.npy", "--hadamard", "off"],
        "not a multiple of 32", 1, o)
    check(good(["attention", "--q", "q96.npy", "--k", "q96.npy", "--v", "q96.npy", "--out", "o.npy",
                "--hadamard", "off"]).startswith("wrote"), "D=96 runs without the rotation")
    test_attention_extras(rng)


def naive_extras(q, k, v, b_, h, nq, nk, d, causal, bias, bias_h, mask, lengths):
    """float64 of docs/attention-inputs.md: bias [1, H] or None, mask [B, 1] or None, causal 0/1/2."""
    out, lse = [], []
    for b in range(b_):
        n = lengths[b] if lengths else nk
        for hh in range(h):
            for i in range(nq):
                qi = q[((b * h + hh) * nq + i) * d:][:d]
                scores = []
                for j in range(n):
                    if (causal == 1 and j > i + n - nq) or (causal == 2 and j > i) or \
                            (mask and not mask[(b * nq + i) * nk + j]):
                        continue
                    s = sum(x * y for x, y in zip(qi, k[((b * h + hh) * nk + j) * d:][:d])) / math.sqrt(d)
                    if bias:
                        s += bias[(((hh if bias_h > 1 else 0) * nq) + i) * nk + j]
                    if s != -math.inf:
                        scores.append((j, s))
                if not scores:
                    out += [0.0] * d
                    lse.append(-math.inf)
                    continue
                m = max(s for _, s in scores)
                w = [(j, math.exp(s - m)) for j, s in scores]
                total = sum(x for _, x in w)
                lse.append(m + math.log(total))
                for c in range(d):
                    out.append(sum(x * v[((b * h + hh) * nk + j) * d + c] for j, x in w) / total)
    return out, lse


def test_attention_extras(rng):
    """--bias, --mask (bool or uint8), --key-lengths and --causal ALIGN against float64."""
    b_, h, nq, nk, d = 2, 2, 6, 45, 32
    q, k, v = normal(rng, b_ * h * nq * d), normal(rng, b_ * h * nk * d), normal(rng, b_ * h * nk * d)
    bias = [rng.uniform(-11.0, 3.0) for _ in range(h * nq * nk)]
    mask = [int(rng.random() > 0.2 or j == 0) for j in range(b_ * nq * nk)]
    save("q.npy", (b_, h, nq, d), q)
    save("k.npy", (b_, h, nk, d), k)
    save("v.npy", (b_, h, nk, d), v)
    save("bias.npy", (h, nq, nk), bias)  # rank 3: [1, H, Nq, Nk]
    save("mask.npy", (b_, 1, nq, nk), mask, descr="|b1")
    save("mask8.npy", (b_, 1, nq, nk), mask, descr="|u1")
    base = ["attention", "--q", "q.npy", "--k", "k.npy", "--v", "v.npy", "--out", "o.npy", "--lse", "l.npy",
            "--recipe", "fp32", "--device", "cpu"]
    for causal, align in ((0, "none"), (1, "bottom-right"), (2, "top-left")):
        for use_bias, use_mask, lengths in ((True, False, None), (False, True, None), (True, True, [30, 45]),
                                            (False, False, [0, 17])):
            args = base + ["--causal", align] + (["--bias", "bias.npy"] if use_bias else []) + \
                (["--mask", "mask.npy"] if use_mask else []) + \
                (["--key-lengths", ",".join(str(x) for x in lengths)] if lengths else [])
            good(args)
            o, l = load("o.npy")[2], load("l.npy")[2]
            ro, rl = naive_extras(q, k, v, b_, h, nq, nk, d, causal, bias if use_bias else None, h,
                                  mask if use_mask else None, lengths)
            err = nmse(o, ro)
            what = "%s bias %s mask %s lengths %s" % (align, use_bias, use_mask, lengths)
            check(err < 1e-10, "fp32 with %s vs float64: NMSE %g" % (what, err))
            check(all((x == y) if math.isinf(y) else abs(x - y) < 1e-4 for x, y in zip(l, rl)),
                  "lse with %s vs float64" % what)
    # a uint8 mask is the bool mask; the bare --causal is bottom-right, as before
    good(base + ["--mask", "mask.npy"])
    first = load("o.npy")
    good(base + ["--mask", "mask8.npy"])
    check(load("o.npy") == first, "a uint8 mask gives the bool mask's output")
    good(base + ["--causal"])
    first = load("o.npy")
    good(base + ["--causal", "bottom-right"])
    check(load("o.npy") == first, "--causal alone is bottom-right")
    good(base + ["--causal", "none"])
    first = load("o.npy")
    good(base)
    check(load("o.npy") == first, "--causal none is no causal mask")
    out = good(base + ["--bias", "bias.npy", "--causal", "top-left", "--stats"])
    check("vs reference" in out and "causal top-left" in out, "--stats with a bias, top-left: %r" % out)

    # mistakes: one line each, nothing written
    save("bias_nan.npy", (h, nq, nk), [math.nan if i == 7 else 0.0 for i in range(h * nq * nk)])
    save("bias_short.npy", (h, nq, nk - 1), [0.0] * (h * nq * (nk - 1)))
    save("bias_r1.npy", (nk,), [0.0] * nk)
    save("maskf.npy", (b_, 1, nq, nk), [1.0] * (b_ * nq * nk))
    for f in ("o.npy", "l.npy"):
        os.remove(path(f)) if os.path.exists(path(f)) else None
    o = ["o.npy", "l.npy"]
    for extra, message in [
        (["--key-lengths", "3"], "--key-lengths: 1 length for a batch of 2 (one per batch)"),
        (["--key-lengths", "3,x"], "--key-lengths x"),
        (["--key-lengths", "3,,4"], "expected a comma-separated list of lengths"),
        (["--key-lengths", "3,-1"], "--key-lengths -1"),
        (["--key-lengths", "3,46"], "key_lengths[1] = 46 is outside [0, Nk = 45]"),
        (["--bias", "bias_nan.npy"], "mxa: bias_nan.npy: element 7 is NaN"),
        (["--bias", "bias_short.npy"], "bias is [1, 2, 6, 44]"),
        (["--bias", "bias_r1.npy"], "bias_r1.npy: shape (45,); a bias is"),
        (["--bias", "mask.npy"], "mask.npy: dtype bool is not a bias"),
        (["--mask", "maskf.npy"], "maskf.npy: dtype float32 is not a mask"),
        (["--mask", "missing.npy"], "missing.npy: cannot open"),
    ]:
        bad(base + extra, message, None, o)


# ---------------------------------------------------------------- outputs

def content(name):
    with open(path(name), "rb") as f:
        return f.read()


def test_outputs():
    """An output may never be an input or another output, by any name (hard link, symbolic link, ./x)."""
    def fresh_inputs():  # each part on intact inputs, so that one defect does not hide the next
        rng = random.Random(5)
        for n in ("q", "k", "v"):
            save(n + ".npy", (1, 2, 64, 64), normal(rng, 8192))
        save("x.npy", (4, 100), normal(rng, 400))
    fresh_inputs()
    os.link(path("q.npy"), path("hard.npy"))
    os.symlink("q.npy", path("sym.npy"))
    os.mkdir(path("sub"))
    os.symlink("../k.npy", path("sub/up.npy"))
    kept = {n: content(n) for n in ("q.npy", "k.npy", "v.npy", "x.npy")}
    attn = ["attention", "--q", "q.npy", "--k", "k.npy", "--v", "v.npy"]
    same = "is the same file as the input"
    for extra, message in [(["--out", "q.npy"], "--out q.npy: " + same + " --q q.npy"),
                           (["--out", "o.npy", "--lse", "q.npy"], "--lse q.npy: " + same + " --q q.npy"),
                           (["--out", "v.npy"], same + " --v v.npy"),
                           (["--out", "hard.npy"], "--out hard.npy: " + same + " --q q.npy"),
                           (["--out", "sym.npy"], "--out sym.npy: " + same + " --q q.npy"),
                           (["--out", "sub/up.npy"], same + " --k k.npy"),
                           (["--out", "o.npy", "--lse", "./o.npy"], "--out and --lse name the same file"),
                           (["--out", "o.npy", "--lse", "sub/../o.npy"], "--out and --lse name the same file")]:
        bad(attn + extra, message, 2, ["o.npy"])
    quant = ["quantize", "x.npy", "--rule", "uos"]
    bad(quant + ["--dequant", "x.npy"], "--dequant x.npy: " + same + " x.npy", 2)
    bad(quant + ["--codes", "x.npy", "--scales", "s.npy"], "--codes x.npy: " + same + " x.npy", 2, ["s.npy"])
    bad(quant + ["--codes", "c.npy", "--scales", "./x.npy"], "--scales ./x.npy: " + same, 2, ["c.npy"])
    for lst in ("q.npy,", ",q.npy", "q.npy,,k.npy"):
        bad(["analyze", "rowsum", "--q", lst, "--k", "k.npy"], "mxa: --q: an empty file name in the comma-separated list", 2)
    bad(["analyze", "ablation", "--q", "q.npy", "--k", "k.npy", "--v", "v.npy,"], "mxa: --v: an empty file name", 2)
    bad(["analyze", "uos", "x.npy", "--json", "x.npy"], "--json x.npy: " + same + " x.npy", 2)
    bad(["analyze", "uos", "x.npy", "--svg", "o.svg", "--csv", "./o.svg"], "--svg and --csv name the same file", 2)
    bad(["analyze", "rowsum", "--q", "q.npy", "--k", "k.npy", "--svg", "hard.npy"], same + " --q q.npy", 2)
    bad(["analyze", "ablation", "--q", "q.npy", "--k", "k.npy", "--v", "v.npy", "--csv", "sym.npy"],
        same + " --q q.npy", 2)
    bad(["analyze", "ablation", "--q", "x.npy,q.npy", "--k", "k.npy,k.npy", "--v", "v.npy,v.npy", "--json", "q.npy"],
        same + " --q q.npy", 2)
    for n, data in kept.items():
        check(content(n) == data, "%s is unchanged" % n)
    # The check does not refuse what is fine: a new output, and an existing output that is not an input.
    good(attn + ["--out", "o.npy"])
    good(attn + ["--out", "o.npy", "--lse", "l.npy"])
    good(quant + ["--dequant", "d.npy"])

    fresh_inputs()
    # Symbolic links are followed: the target is replaced, the link (and a chain of links) stays a link.
    save("real.npy", (1,), [7.0])
    os.symlink("real.npy", path("link1.npy"))
    os.symlink("link1.npy", path("link2.npy"))
    good(attn + ["--out", "link2.npy"])
    check(os.path.islink(path("link2.npy")) and os.path.islink(path("link1.npy")), "the links stay links")
    check(load("real.npy")[1] == (1, 2, 64, 64), "the output went to the link's target: %s" % (load("real.npy")[1],))
    good(quant + ["--dequant", "sub/../link1.npy"])
    check(os.path.islink(path("link1.npy")) and load("real.npy")[1] == (4, 100), "quantize follows the link too")
    os.symlink("missing/nowhere.npy", path("dangling.npy"))
    bad(attn + ["--out", "dangling.npy"], "dangling.npy: is a symbolic link to a missing file", 1)
    check(os.path.islink(path("dangling.npy")), "a dangling link is left alone")
    # A character device is written in place: a link to /dev/null stays a link and /dev/null a device.
    os.symlink("/dev/null", path("null.npy"))
    good(attn + ["--out", "null.npy", "--lse", "null.npy"])
    good(quant + ["--dequant", "null.npy", "--codes", "null.npy", "--scales", "c.npy"])
    good(["analyze", "uos", "--svg", "null.npy", "--json", "null.npy"])
    check(os.path.islink(path("null.npy")), "the link to /dev/null stays a link")
    check(stat.S_ISCHR(os.stat("/dev/null").st_mode), "/dev/null is still a character device")
    if os.path.islink(path("null.npy")):
        good(attn + ["--out", "/dev/null"])
        check(stat.S_ISCHR(os.stat("/dev/null").st_mode), "/dev/null is still a character device")
    # A FIFO, a directory: refused before any work (a FIFO must not block).
    os.mkfifo(path("fifo"))
    for out in ("fifo", "sub"):
        try:
            bad(attn + ["--out", out], out + ": is a ", 1)
            bad(["analyze", "uos", "--csv", out], out + ": is a ", 1)
        except subprocess.TimeoutExpired:
            check(False, "an output %s blocks" % out)
    check(stat.S_ISFIFO(os.stat(path("fifo")).st_mode), "the FIFO is left alone")

    fresh_inputs()
    # A file-size limit (ulimit -f 1, SIGXFSZ) during the write: a clean failure, no temporary left.
    def limited():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))
    for args in (attn + ["--out", "big.npy"], quant + ["--dequant", "big.npy"],
                 ["analyze", "uos", "--json", "big.npy"]):
        before = listing()
        p = subprocess.run([MXA] + args, capture_output=True, text=True, timeout=60, cwd=WORK, preexec_fn=limited)
        what = "mxa %s under ulimit -f 1" % " ".join(args)
        check(p.returncode == 1, "%s: exit %d, expected 1" % (what, p.returncode))
        check(p.stderr == "mxa: big.npy: cannot write: File too large\n", "%s: stderr %r" % (what, p.stderr))
        check(listing() == before, "%s: files changed: %s -> %s" % (what, before, listing()))


# ---------------------------------------------------------------- probe, demo

def test_probe():
    out = good(["probe"])
    check("backends:" in out and "cpu" in out and "present" in out, "probe text: %r" % out)
    out = good(["probe", "--json"])
    p = subprocess.run([sys.executable, "-m", "json.tool"], input=out, capture_output=True, text=True)
    check(p.returncode == 0, "probe --json is valid JSON: %s" % p.stderr)
    doc = json.loads(out)
    check(set(doc) >= {"version", "auto", "backends", "devices"}, "probe keys: %s" % sorted(doc))
    names = [b["name"] for b in doc["backends"]]
    check("cpu" in names and all({"built", "present", "device_count", "reason"} <= set(b) for b in doc["backends"]),
          "backend entries: %s" % doc["backends"])
    cpu = [d for d in doc["devices"] if d["id"] == "cpu"]
    check(len(cpu) == 1, "the CPU device is listed")
    keys = {"id", "backend", "index", "name", "vendor", "driver", "memory_bytes", "compute_units", "subgroup_min",
            "subgroup_max", "shared_memory_bytes", "caps", "capabilities", "variant", "variant_reason", "default_bc",
            "score"}
    check(all(keys <= set(d) for d in doc["devices"]), "device keys")
    check(doc["auto"] in [d["id"] for d in doc["devices"]], "auto names a listed device")
    env = dict(os.environ, MXA_DEVICE="cpu")
    p = subprocess.run([MXA, "probe", "--json"], capture_output=True, text=True, env=env)
    check(json.loads(p.stdout)["auto"] == "cpu", "MXA_DEVICE=cpu makes auto the CPU")
    vulkan_built = any(b["name"] == "vulkan" and b["built"] for b in doc["backends"])
    test_probe_why(doc)
    test_probe_profile(vulkan_built)


def test_probe_why(doc):
    """Why auto picks its device: every device by score, best first, with its variant and the
    score's basis; --measure replaces the CPU's unmeasured 0 by its measured GFLOP/s."""
    check(all(d["score_reason"] for d in doc["devices"]), "every device says what its score is: %r" % doc["devices"])
    ranked = sorted(doc["devices"], key=lambda d: -d["score"])
    why = doc["auto_reason"]
    check(why.startswith("%s (%s)" % (doc["auto"], [d for d in doc["devices"] if d["id"] == doc["auto"]][0]["variant"])),
          "auto_reason starts with the device auto opens: %r" % why)
    at = [why.find(d["id"] + " (") for d in ranked]
    check(all(a >= 0 for a in at) and at == sorted(at), "auto_reason lists every device by score: %r" % why)
    check(doc["auto"] == "cpu" or ranked[0]["score"] > 0, "auto is the CPU unless a GPU scores above it")
    for d in doc["devices"]:  # lavapipe and PoCL are the host CPU: never above the CPU backend
        if d["backend"] != "cpu" and ("llvmpipe" in d["name"] or "pocl" in d["capabilities"]):
            check(d["score"] < 0 and "host CPU" in d["score_reason"], "%s stays below the CPU: %r" % (d["id"], d))
    text = good(["probe"])
    lines = text.splitlines()
    auto = [i for i, line in enumerate(lines) if line.startswith("  auto -> ")]
    check(len(auto) == 1 and lines[auto[0] + 1] == "    why: " + why, "probe text: the why line under auto: %r" % text)
    cache = path("speed-cache")
    env = dict(os.environ, MXA_CACHE_DIR=cache, MXA_DISABLE="all")
    env.pop("MXA_DEVICE", None)
    p = subprocess.run([MXA, "probe", "--measure", "--json"], capture_output=True, text=True, env=dict(env, MXA_LOG="info"),
                       timeout=120)
    check(p.returncode == 0, "probe --measure: exit %d, %r" % (p.returncode, p.stderr))
    # each backend's child measures its own devices: the CPU (present in every child) once
    check(p.stderr.count("TFLOP/s (mxattention B1") == 1, "probe --measure times the CPU once: %r" % p.stderr)
    cpu = json.loads(p.stdout)["devices"][0]
    check(cpu["id"] == "cpu" and cpu["measure"].startswith("measured ") and cpu["score"] > 0 and
          cpu["score_reason"].startswith("measured "), "probe --measure measures the CPU: %r" % cpu)
    p = subprocess.run([MXA, "probe"], capture_output=True, text=True, env=env, timeout=60)
    check("    why: cpu (%s) measured " % cpu["variant"] in p.stdout, "the cached measurement is the score later: %r" % p.stdout)
    bad(["probe", "--measure", "--profile", "x.json"], "--measure", code=2)


def test_probe_profile(vulkan_built):
    """probe --profile: the plan for a recorded device, selection only; a bad profile is one clear error."""
    profiles = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vulkan", "profiles")
    h200 = os.path.join(profiles, "nvidia-h200.json")
    if not vulkan_built:
        bad(["probe", "--profile", h200], "without the Vulkan backend")
        return
    out = good(["probe", "--profile", h200])
    doc = json.loads(good(["probe", "--profile", h200, "--json"]))
    plans = [p for p in doc["plans"] if p["switch"] is None]
    check(doc["selection_only"] is True and {p["d"] for p in plans} == {64, 128}, "probe --profile --json: %r" % doc)
    rdna3 = json.loads(good(["probe", "--profile", os.path.join(profiles, "radv-rdna3.json"), "--json"]))
    rdna3_128 = [p for p in rdna3["plans"] if p["switch"] is None and p["d"] == 128]
    if "this build has no KHR" in out:
        # built without glslang >= 13 (no network for scripts/glslang13.sh): only the KHR
        # variants are left out, and the plan says why
        check(all(p["variant"] == "intdot" and "no glslang >= 13" in p["why"] for p in plans + rdna3_128),
              "without the KHR kernels both profiles plan intdot and say why: %r" % (plans + rdna3_128))
    else:
        check("selection only" in out and "coopmat-khr-i8" in out and "16x16x32" in out, "probe --profile text: %r" % out)
        check(all(p["variant"] == "coopmat-khr-i8" for p in plans), "the H200 profile plans coopmat-khr-i8: %r" % plans)
        check([p["variant"] for p in rdna3_128] == ["coopmat-khr-i8-smem"],
              "the RDNA3 profile plans the shared-memory kernel: %r" % rdna3["plans"])
    with open(h200) as f:
        text = f.read()
    with open(path("broken.json"), "w") as f:
        f.write(text.replace('"max_shared": 49152', '"max_shared": "lots"'))
    bad(["probe", "--profile", path("broken.json")], "max_shared")
    bad(["probe", "--profile", path("absent.json")])


def test_demo():
    import time
    t0 = time.time()
    out = good(["demo", "--device", "cpu"], timeout=120)
    seconds = time.time() - t0
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.split() and
            line.split()[0] in ("fp32", "ocp-direct", "mxattention")}
    check(set(rows) == {"fp32", "ocp-direct", "mxattention"}, "demo table rows: %r" % out)
    if len(rows) == 3:
        check(float(rows["fp32"][1]) == 0.0, "fp32 against itself")
        check(0 < float(rows["mxattention"][1]) < float(rows["ocp-direct"][1]),
              "mxattention is more accurate than ocp-direct: %r" % out)
        check(rows["mxattention"][5:8] == ["1.000000", "[1.000000,", "1.000000]"], "PNQ row sums are 1: %r" % out)
        check(rows["ocp-direct"][5] != "1.000000", "direct row sums drift: %r" % out)
    print("demo took %.2f s" % seconds)


if __name__ == "__main__":
    tests = {"usage": test_usage, "files": test_files, "outputs": test_outputs, "quantize": test_quantize, "attention": test_attention,
             "probe": test_probe, "demo": test_demo}
    try:
        tests[GROUP]()
    finally:
        subprocess.run(["rm", "-rf", WORK])
    if FAILURES:
        print("%d check(s) failed" % len(FAILURES))
        sys.exit(1)
    print("ok: %s (%d checks)" % (GROUP, CHECKS[0]))
