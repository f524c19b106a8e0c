"""The Python binding against numpy references, and its errors."""
import numpy as np
import pytest

import mxa


def attention_inputs(seed, b=1, h=2, hkv=2, nq=80, nk=96, d=64, outliers=True):
    """Unit-normal q/k with every 17th channel three times larger (what the Hadamard
    rotation is for), v unit noise around a per-channel mean."""
    rng = np.random.default_rng(seed)
    boost = np.where(np.arange(d) % 17 == 3, 3.0, 1.0) if outliers else np.ones(d)
    q = (rng.standard_normal((b, h, nq, d)) * boost).astype(np.float32)
    k = (rng.standard_normal((b, hkv, nk, d)) * boost).astype(np.float32)
    v = (rng.standard_normal(d) + rng.standard_normal((b, hkv, nk, d))).astype(np.float32)
    return q, k, v


def numpy_attention(q, k, v, causal=False, scale=None):
    """float64 softmax attention, bottom-right causal, GQA; returns (o, lse)."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    group = q.shape[-3] // k.shape[-3] if q.ndim >= 3 else 1
    if group > 1:
        k = np.repeat(k, group, axis=-3)
        v = np.repeat(v, group, axis=-3)
    s = q @ np.swapaxes(k, -1, -2) * (scale if scale else 1.0 / np.sqrt(q.shape[-1]))
    if causal:
        nq, nk = s.shape[-2:]
        mask = np.arange(nk)[None, :] > np.arange(nq)[:, None] + nk - nq
        s = np.where(mask, -np.inf, s)
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - m)
    l = p.sum(axis=-1, keepdims=True)
    return p @ v / l, (m + np.log(l))[..., 0]


def nmse(a, ref):
    return float(np.sum((a.astype(np.float64) - ref) ** 2) / np.sum(np.asarray(ref, np.float64) ** 2))


# ------------------------------------------------------------------ devices

def test_version_and_devices():
    assert mxa.version().count(".") == 2
    devs = mxa.devices()
    cpu = [d for d in devs if d["id"] == "cpu"]
    assert len(cpu) == 1 and cpu[0]["backend"] == "cpu"
    assert cpu[0]["default_bc"] > 0 and cpu[0]["default_bc"] % 32 == 0
    names = [b["name"] for b in mxa.backends()]
    assert "cpu" in names


# ---------------------------------------------------------------- attention

@pytest.mark.parametrize("causal", [False, True])
def test_fp32_matches_numpy(causal):
    q, k, v = attention_inputs(1, h=4, hkv=2)
    o, lse = mxa.attention(q, k, v, recipe="fp32", device="cpu", causal=causal, lse=True)
    ref, ref_lse = numpy_attention(q, k, v, causal=causal)
    assert o.shape == q.shape and o.dtype == np.float32
    assert np.max(np.abs(o - ref)) < 2e-5
    assert np.max(np.abs(lse - ref_lse)) < 1e-4


def test_ranks_dtypes_and_scale():
    q, k, v = attention_inputs(2)
    ref, _ = numpy_attention(q[0, 0], k[0, 0], v[0, 0], scale=0.05)
    o2 = mxa.attention(q[0, 0], k[0, 0], v[0, 0], recipe="fp32", device="cpu", scale=0.05)
    assert o2.shape == q[0, 0].shape
    assert np.max(np.abs(o2 - ref)) < 2e-5
    o3 = mxa.attention(q[0], k[0], v[0], recipe="fp32", device="cpu")
    assert o3.shape == q[0].shape
    half = mxa.attention(q.astype(np.float16), k.astype(np.float16), v.astype(np.float16), recipe="fp32",
                         device="cpu")
    ref16, _ = numpy_attention(*(x.astype(np.float16) for x in (q, k, v)))
    assert np.max(np.abs(half - ref16)) < 2e-5
    strided = mxa.attention(np.asfortranarray(q[0, 0]), k[0, 0], v[0, 0], recipe="fp32", device="cpu", scale=0.05)
    assert np.array_equal(strided, o2)


def test_mxattention_beats_ocp_direct():
    q, k, v = attention_inputs(3)
    ref, _ = numpy_attention(q, k, v)
    e_mxa = nmse(mxa.attention(q, k, v, recipe="mxattention", device="cpu"), ref)
    e_ocp = nmse(mxa.attention(q, k, v, recipe="ocp-direct", device="cpu"), ref)
    assert 0 < e_mxa < 0.2
    assert e_mxa < 0.7 * e_ocp


def test_pnq_keeps_rows_normalized():
    q, k, _ = attention_inputs(4)
    ones = np.ones_like(k)
    for recipe in ("mxattention", "wo-uos", "tfs"):
        o = mxa.attention(q, k, ones, recipe=recipe, device="cpu")
        assert np.max(np.abs(o - 1.0)) < 1e-6, recipe
    o = mxa.attention(q, k, ones, recipe="ocp-direct", device="cpu")
    assert np.max(np.abs(o - 1.0)) > 1e-3
    _, sums = mxa.attention(q, k, ones, recipe="mxattention", reference=True, bc=64, row_sums=True)
    assert sums.shape == q.shape[:-1] and np.all(sums == 1.0)
    _, sums = mxa.attention(q, k, ones, recipe="wo-pnq-uos", reference=True, bc=64, row_sums=True)
    assert sums.mean() < 0.99


def test_recipes_are_switches():
    q, k, v = attention_inputs(5)
    a = mxa.attention(q, k, v, recipe="wo-uos", device="cpu", bc=64)
    b = mxa.attention(q, k, v, recipe="mxattention", rule="ocp", device="cpu", bc=64)
    assert np.array_equal(a, b)
    c = mxa.attention(q, k, v, recipe="mxattention", rule="ocp", placement="direct", device="cpu", bc=64)
    d = mxa.attention(q, k, v, recipe="wo-pnq-uos", device="cpu", bc=64)
    assert np.array_equal(c, d)
    off = mxa.attention(q, k, v, recipe="mxattention", quantize="none", device="cpu")
    assert nmse(off, numpy_attention(q, k, v)[0]) < 1e-10
    # the device agrees with the reference at the same Bc
    r = mxa.attention(q, k, v, recipe="mxattention", reference=True, bc=64)
    assert nmse(mxa.attention(q, k, v, device="cpu", bc=64), r) < 1e-6


def test_nvfp4_recipes():
    q, k, v = attention_inputs(6)
    ref, _ = numpy_attention(q, k, v)
    for recipe in ("nvfp4", "nvfp4-smooth"):
        dev = mxa.attention(q, k, v, recipe=recipe, device="cpu", bc=64)
        assert np.array_equal(dev, mxa.attention(q, k, v, recipe=recipe, reference=True, bc=64))
        assert 0 < nmse(dev, ref) < 0.2


# ------------------------------------------------------------------- format

E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6])


def numpy_mxfp4(x, q_max):
    """A numpy model of SPEC §1 (q_max None: OCP floor rule); returns decoded values."""
    out = np.zeros_like(x, dtype=np.float64)
    for r in range(x.shape[0]):
        for b0 in range(0, x.shape[1], 32):
            blk = x[r, b0:b0 + 32].astype(np.float64)
            m = np.max(np.abs(blk))
            if m == 0:
                continue
            mant, ex = np.frexp(m)  # m = mant 2^ex, mant in [0.5, 1)
            e = ex - 1 - 2
            if q_max is not None:
                while m > q_max * 2.0 ** e:
                    e += 1
                while m <= q_max * 2.0 ** (e - 1):
                    e -= 1
            v = np.abs(blk) / 2.0 ** e
            # round to nearest E2M1, ties to the even code (index), saturating at 6
            idx = np.searchsorted(E2M1, v)
            idx = np.clip(idx, 1, 7)
            lo, hi = E2M1[idx - 1], E2M1[idx]
            pick_hi = (v - lo > hi - v) | ((v - lo == hi - v) & (idx % 2 == 0))
            val = np.where(v >= 6, 6.0, np.where(pick_hi, hi, lo))
            out[r, b0:b0 + 32] = np.sign(blk) * val * 2.0 ** e
    return out


@pytest.mark.parametrize("rule,q_max", [("ocp", None), ("tfs", 6.0), ("uos", 7.25), ("q=6.5", 6.5)])
def test_quantize_matches_numpy_model(rule, q_max):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((40, 70)) * np.exp(rng.uniform(-8, 8, (40, 1)))).astype(np.float32)
    codes, scales = mxa.quantize(x, rule=rule)
    assert codes.shape == (40, 3 * 16) and scales.shape == (40, 3)
    y = mxa.dequantize(codes, scales, cols=70)
    assert y.shape == x.shape
    assert np.array_equal(y, numpy_mxfp4(x, q_max).astype(np.float32))


def test_quantize_spec_vector():
    x = np.zeros(32, dtype=np.float32)
    x[:5] = [6, 0.25, 0.75, 1.25, 1.75]
    codes, scales = mxa.quantize(x, rule="uos")
    assert scales.tolist() == [127]
    assert codes[:3].tolist() == [0x07, 0x22, 0x04]  # codes 7 0 | 2 2 | 4 0, low nibble first
    y = mxa.dequantize(codes, scales)
    assert y.shape == (32,) and y[:5].tolist() == [6, 0, 1, 1, 2]


# ------------------------------------------------------------------- errors

def test_bad_inputs_raise():
    q, k, v = attention_inputs(8)
    with pytest.raises(mxa.Error, match="head size"):
        mxa.attention(q, k[..., :32], v[..., :32], device="cpu")
    with pytest.raises(mxa.Error, match="rank"):
        mxa.attention(q[0, 0, 0], k[0, 0, 0], v[0, 0, 0])
    with pytest.raises(mxa.Error, match="recipe"):
        mxa.attention(q, k, v, recipe="fp8")
    with pytest.raises(mxa.Error, match="switch"):
        mxa.attention(q, k, v, device="cpu", rotate=True)
    with pytest.raises(mxa.Error) as e:
        mxa.attention(q, k, v, device="cpu", rule="q=9")
    assert e.value.status == "MXA_ERR_INVALID_ARGUMENT"
    with pytest.raises(mxa.Error) as e:
        mxa.attention(q, k, v, device="no-such-device:7")
    assert e.value.status is not None
    bad = q.copy()
    bad[0, 0, 3, 5] = np.nan
    with pytest.raises(mxa.Error) as e:
        mxa.attention(bad, k, v, device="cpu")
    assert e.value.status == "MXA_ERR_NON_FINITE"
    q48 = np.zeros((1, 1, 8, 48), np.float32)
    with pytest.raises(mxa.Error) as e:
        mxa.attention(q48, q48, q48, device="cpu")
    assert e.value.status == "MXA_ERR_UNSUPPORTED"
    with pytest.raises(mxa.Error, match="row_sums"):
        mxa.attention(q, k, v, row_sums=True)
    with pytest.raises(mxa.Error):
        mxa.quantize(np.zeros(0, np.float32))
    with pytest.raises(mxa.Error):
        mxa.quantize(q, rule="floor")
    codes, scales = mxa.quantize(q[0, 0])
    with pytest.raises(mxa.Error, match="do not match"):
        mxa.dequantize(codes[:, :16], scales)
    with pytest.raises(mxa.Error, match="cols"):
        mxa.dequantize(codes, scales, cols=1000)


def test_float64_converted_once_and_overflow_refused():
    q, k, v = attention_inputs(8)
    q64, k64, v64 = (x.astype(np.float64) + 1e-9 for x in (q, k, v))  # not exactly float32
    o64 = mxa.attention(q64, k64, v64, device="cpu")
    o32 = mxa.attention(*(x.astype(np.float32) for x in (q64, k64, v64)), device="cpu")
    assert np.array_equal(o64, o32)
    x = np.random.default_rng(4).standard_normal((3, 70))
    c64, s64 = mxa.quantize(x)
    c32, s32 = mxa.quantize(x.astype(np.float32))
    assert np.array_equal(c64, c32) and np.array_equal(s64, s32)
    # Just below float32's range rounds to FLT_MAX; above it is refused, naming the tensor.
    edge = q64.copy()
    edge[0, 0, 0, 0] = float(np.finfo(np.float32).max) * (1 + 2.0 ** -25)
    assert np.float32(edge[0, 0, 0, 0]) == np.finfo(np.float32).max
    for big in (1e39, -3.5e38, 1e300):
        bad = k64.copy()
        bad[0, 0, 1, 2] = big
        with pytest.raises(mxa.Error, match=r"^k: element 66 is .*beyond float32's range") as e:
            mxa.attention(q64, bad, v64, device="cpu")
        assert e.value.status == "MXA_ERR_NON_FINITE"
        with pytest.raises(mxa.Error, match=r"quantize: x: element 66 is"):
            mxa.quantize(bad)


def test_desc_layout_matches_the_library():
    """The ctypes mirror of mxa_attention_desc must be as large as the C struct: a library
    that writes past it corrupts Python's memory (a crash at exit, long after the call)."""
    import ctypes
    from mxa import _native
    size = ctypes.sizeof(_native.AttentionDesc)
    raw = (ctypes.c_ubyte * (size + 64))(*([0xA5] * (size + 64)))
    lib, _ = _native.load()
    assert lib.mxa_attention_desc_init(ctypes.cast(raw, ctypes.POINTER(_native.AttentionDesc)), 0) == 0
    assert bytes(raw[size:]) == b"\xa5" * 64

