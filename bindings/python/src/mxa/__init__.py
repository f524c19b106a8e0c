"""mxa: MXFP4 attention (Hadamard rotation, UOS scaling q = 7.25, Pre-Normalization
Quantization) from Python, through libmxa's C API. numpy arrays in and out.

    import mxa
    o = mxa.attention(q, k, v)                          # MXAttention on the best device
    o, lse = mxa.attention(q, k, v, recipe="ocp-direct", device="cpu", lse=True)
    codes, scales = mxa.quantize(x, rule="uos")
    x_hat = mxa.dequantize(codes, scales, cols=x.shape[-1])

Every failure raises mxa.Error carrying the library's message.
"""
import atexit
import ctypes
import threading

import numpy as np

from . import _native as _n

__all__ = ["Error", "version", "library_path", "backends", "devices", "attention", "quantize", "dequantize",
           "RECIPES"]

#: Recipe names attention() accepts: the library's three plus the paper's ablations and baselines.
RECIPES = ("mxattention", "ocp-direct", "fp32", "wo-uos", "wo-pnq-uos", "tfs", "nvfp4", "nvfp4-smooth")


class Error(Exception):
    """A failure of libmxa (or a bad argument caught before the call). `status` is the
    library's status name ("MXA_ERR_INVALID_ARGUMENT"), or None for a Python-side check."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


_lib, _path = _n.load()
_lock = threading.Lock()
_runtime = None
_devices = {}


def _check(status, what):
    if status != 0:
        name = _lib.mxa_status_string(status).decode()
        msg = (_lib.mxa_last_error_message() or b"").decode(errors="replace")
        raise Error(f"{what}: {msg or name}", name)


def _rt():
    global _runtime
    with _lock:
        if _runtime is None:
            h = ctypes.c_void_p()
            _check(_lib.mxa_runtime_create(None, ctypes.byref(h)), "runtime")
            _runtime = h
        return _runtime


def _device(device_id):
    rt = _rt()
    with _lock:
        if device_id not in _devices:
            h = ctypes.c_void_p()
            _check(_lib.mxa_device_open(rt, device_id.encode(), ctypes.byref(h)), f"device '{device_id}'")
            _devices[device_id] = h
        return _devices[device_id]


@atexit.register
def _shutdown():
    global _runtime
    for h in _devices.values():
        _lib.mxa_device_close(h)
    _devices.clear()
    if _runtime is not None:
        _lib.mxa_runtime_destroy(_runtime)
        _runtime = None


def version():
    """The library's version string."""
    return _lib.mxa_version_string().decode()


def library_path():
    """The path libmxa was loaded from."""
    return _path


def _text(b):
    return bytes(b).split(b"\0", 1)[0].decode(errors="replace")


def backends():
    """Every backend this build knows: name, built, present, device_count, reason."""
    rt, n = _rt(), ctypes.c_int()
    _check(_lib.mxa_backend_count(rt, ctypes.byref(n)), "backends")
    out = []
    for i in range(n.value):
        info = _n.BackendInfo()
        _check(_lib.mxa_backend_get_info(rt, i, ctypes.byref(info)), "backends")
        out.append({"name": _text(info.name), "built": bool(info.built), "present": bool(info.present),
                    "device_count": info.device_count, "reason": _text(info.reason)})
    return out


def devices():
    """Every device of the present backends, as dicts (id, backend, name, variant, default_bc, ...)."""
    rt, n = _rt(), ctypes.c_int()
    _check(_lib.mxa_device_count(rt, ctypes.byref(n)), "devices")
    out = []
    for i in range(n.value):
        d = _n.DeviceInfo()
        _check(_lib.mxa_device_get_info(rt, i, ctypes.byref(d)), "devices")
        out.append({"id": _text(d.id), "backend": _text(d.backend), "index": d.index, "name": _text(d.name),
                    "vendor": _text(d.vendor), "driver": _text(d.driver), "memory_bytes": d.memory_bytes,
                    "compute_units": d.compute_units, "capabilities": _text(d.capabilities),
                    "variant": _text(d.variant), "variant_reason": _text(d.variant_reason),
                    "default_bc": d.default_bc, "score": d.score})
    return out


# ------------------------------------------------------------------ tensors

def _to_f32(x, name):
    """float16 and float32 as they are; other real types (float64, numpy's default, integers)
    converted once to float32, rounding to nearest. A finite value beyond float32's range is
    refused, as the library refuses Inf, never passed on as an Inf."""
    a = np.asarray(x)
    if a.dtype in (np.float16, np.float32):
        return a
    if not (np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)):
        raise Error(f"{name}: dtype {a.dtype} is not a real number type")
    with np.errstate(over="ignore", invalid="ignore"):
        f = a.astype(np.float32)
    over = np.isinf(f) & np.isfinite(a)
    if over.any():
        i = int(np.flatnonzero(over.reshape(-1))[0])
        raise Error(f"{name}: element {i} is {a.reshape(-1)[i]!r}, beyond float32's range "
                    f"({a.dtype} input is converted to float32)", "MXA_ERR_NON_FINITE")
    return f


def _as_input(x, name):
    """A C-contiguous float32 or float16 array of rank 2..4 and its mxa_tensor."""
    a = np.ascontiguousarray(_to_f32(x, name))
    if a.ndim < 2 or a.ndim > 4:
        raise Error(f"{name}: shape {a.shape} has rank {a.ndim}; expected [N, D], [H, N, D] or [B, H, N, D]")
    return a, _tensor(a)


def _tensor(a):
    shape = (1,) * (4 - a.ndim) + tuple(a.shape)
    t = _n.Tensor()
    _check(_lib.mxa_tensor_init(ctypes.byref(t), _n.F16 if a.dtype == np.float16 else _n.F32, *shape,
                                a.ctypes.data_as(ctypes.c_void_p)), "tensor")
    return t


def _rule(text):
    if isinstance(text, _n.Rule):
        return text
    r = _n.Rule()
    _check(_lib.mxa_rule_parse(str(text).encode(), ctypes.byref(r)), "rule")
    return r


def _quantize_bits(spec):
    if isinstance(spec, (int, np.integer)):
        return int(spec)
    if isinstance(spec, str):
        if spec in ("none", ""):
            return 0
        if spec == "all":
            return _n.QUANT_QK | _n.QUANT_V | _n.QUANT_P
        spec = spec.split(",")
    bits, names = 0, {"qk": _n.QUANT_QK, "v": _n.QUANT_V, "p": _n.QUANT_P}
    for part in spec:
        if part not in names:
            raise Error(f"quantize: unknown part '{part}' (expected qk, v, p)")
        bits |= names[part]
    return bits


def _desc(recipe, causal, bc, scale, switches):
    base = {"mxattention": _n.RECIPE_MXATTENTION, "wo-uos": _n.RECIPE_MXATTENTION,
            "wo-pnq-uos": _n.RECIPE_MXATTENTION, "tfs": _n.RECIPE_MXATTENTION, "ocp-direct": _n.RECIPE_OCP_DIRECT,
            "nvfp4": _n.RECIPE_OCP_DIRECT, "nvfp4-smooth": _n.RECIPE_OCP_DIRECT, "fp32": _n.RECIPE_FP32}
    if recipe not in base:
        raise Error(f"unknown recipe '{recipe}' (expected one of {', '.join(RECIPES)})")
    d = _n.AttentionDesc()
    _check(_lib.mxa_attention_desc_init(ctypes.byref(d), base[recipe]), "recipe")
    if recipe in ("wo-uos", "wo-pnq-uos"):
        d.rule = _rule("ocp")
    if recipe == "wo-pnq-uos":
        d.placement = _n.PLACEMENT_DIRECT
    if recipe == "tfs":
        d.rule = _rule("tfs")
    if recipe.startswith("nvfp4"):
        d.format = _n.FORMAT_NVFP4
        d.smooth = int(recipe == "nvfp4-smooth")
    for key, value in switches.items():
        if value is None:
            continue
        if key == "hadamard":
            d.hadamard = int(bool(value))
        elif key == "rule":
            d.rule = _rule(value)
        elif key == "placement":
            if value not in ("pnq", "direct"):
                raise Error(f"placement '{value}': expected 'pnq' or 'direct'")
            d.placement = _n.PLACEMENT_PNQ if value == "pnq" else _n.PLACEMENT_DIRECT
        elif key == "quantize":
            d.quantize = _quantize_bits(value)
        elif key == "format":
            if value not in ("mxfp4", "nvfp4"):
                raise Error(f"format '{value}': expected 'mxfp4' or 'nvfp4'")
            d.format = _n.FORMAT_MXFP4 if value == "mxfp4" else _n.FORMAT_NVFP4
        elif key == "smooth":
            d.smooth = int(bool(value))
        elif key == "allow_non_finite":
            d.allow_non_finite = int(bool(value))
        else:
            raise Error(f"unknown switch '{key}' (expected hadamard, rule, placement, quantize, format, smooth, "
                        "allow_non_finite)")
    d.causal = int(bool(causal))
    d.bc = int(bc or 0)
    d.scale = float(scale or 0.0)
    return d


def attention(q, k, v, recipe="mxattention", device="auto", causal=False, bc=0, scale=None, lse=False,
              reference=False, row_sums=False, **switches):
    """softmax(q k^T * scale) v with an MXFP4 (or NVFP4 / fp32) recipe.

    q: [B, H, Nq, D], [H, Nq, D] or [Nq, D]; k, v: the same rank, Hkv dividing H (GQA).
    float32 or float16 in (float64, numpy's default, and integers are converted once to float32;
    a finite value beyond float32's range raises); float32 out with q's shape. recipe: one of RECIPES. Switches
    override the recipe: hadamard=bool, rule="ocp"|"tfs"|"uos"|"q=7.1", placement="pnq"|"direct",
    quantize="qk,v,p"|"none", format="mxfp4"|"nvfp4", smooth=bool, allow_non_finite=bool.
    bc: key-tile size (0: the device's). scale: softmax scale (None: 1/sqrt(D)).
    lse=True also returns the per-row log-sum-exp (q's shape without D).
    reference=True runs the library's reference implementation (needs bc; default 64)
    instead of a device; row_sums=True (reference only) also returns the per-row sum of
    the attention weights the output was built from.
    Returns o, or a tuple (o, lse?, row_sums?) in that order.
    """
    qa, tq = _as_input(q, "q")
    ka, tk = _as_input(k, "k")
    va, tv = _as_input(v, "v")
    if not (qa.ndim == ka.ndim == va.ndim):
        raise Error(f"q, k and v must have the same rank (got {qa.ndim}, {ka.ndim}, {va.ndim})")
    if row_sums and not reference:
        raise Error("row_sums=True needs reference=True")
    desc = _desc(recipe, causal, bc, scale, switches)
    out = np.empty(qa.shape, dtype=np.float32)
    to = _tensor(out)
    lse_arr = np.empty(qa.shape[:-1] + (1,), dtype=np.float32) if lse else None
    tl = _tensor(lse_arr) if lse else None
    lse_ptr = ctypes.byref(tl) if lse else None
    if reference:
        rows = np.empty(qa.shape[:-1], dtype=np.float32) if row_sums else None
        _check(_lib.mxa_reference_attention(ctypes.byref(desc), int(bc or 64), ctypes.byref(tq), ctypes.byref(tk),
                                            ctypes.byref(tv), ctypes.byref(to), lse_ptr,
                                            rows.ctypes.data_as(ctypes.c_void_p) if row_sums else None),
               "reference attention")
    else:
        info = _n.AttentionInfo()
        _check(_lib.mxa_attention(_device(device), ctypes.byref(desc), ctypes.byref(tq), ctypes.byref(tk),
                                  ctypes.byref(tv), ctypes.byref(to), lse_ptr, ctypes.byref(info)), "attention")
    result = [out]
    if lse:
        result.append(lse_arr[..., 0])
    if row_sums:
        result.append(rows)
    return result[0] if len(result) == 1 else tuple(result)


def quantize(x, rule="uos", device="cpu"):
    """MXFP4 quantization along the last axis (blocks of 32, a tail zero-padded).

    Returns (codes, scales): codes uint8 x.shape[:-1] + (nblocks * 16,), element 2i in the
    low nibble of byte i; scales uint8 E8M0 x.shape[:-1] + (nblocks,). rule: "ocp",
    "tfs", "uos" or "q=<x>" with x in [6, 8]. Bit-exact on every device."""
    a = np.ascontiguousarray(_to_f32(x, "quantize: x"))
    if a.ndim < 1 or a.size == 0:
        raise Error(f"quantize: x must have at least one axis and elements (shape {a.shape})")
    cols = a.shape[-1]
    rows = a.size // cols
    flat = a.reshape(rows, cols)
    nblocks = (cols + 31) // 32
    codes = np.empty((rows, nblocks * 16), dtype=np.uint8)
    scales = np.empty((rows, nblocks), dtype=np.uint8)
    t = _tensor(flat)
    _check(_lib.mxa_quantize(_device(device), ctypes.byref(t), _rule(rule), codes.ctypes.data_as(ctypes.c_void_p),
                             scales.ctypes.data_as(ctypes.c_void_p)), "quantize")
    lead = a.shape[:-1]
    return codes.reshape(lead + (nblocks * 16,)), scales.reshape(lead + (nblocks,))


def dequantize(codes, scales, cols=None):
    """Decodes MXFP4 in the layout of quantize() to float32 [..., cols] (cols defaults to
    nblocks * 32). A 0xFF scale decodes its block to NaN."""
    c = np.ascontiguousarray(np.asarray(codes), dtype=np.uint8)
    s = np.ascontiguousarray(np.asarray(scales), dtype=np.uint8)
    if s.ndim < 1 or c.ndim != s.ndim or c.shape[:-1] != s.shape[:-1] or c.shape[-1] != s.shape[-1] * 16:
        raise Error(f"dequantize: codes {c.shape} and scales {s.shape} do not match "
                    "(codes [..., nblocks*16], scales [..., nblocks])")
    nblocks = s.shape[-1]
    cols = nblocks * 32 if cols is None else int(cols)
    if not (0 < cols <= nblocks * 32) or nblocks == 0:
        raise Error(f"dequantize: cols {cols} must be in [1, {nblocks * 32}]")
    rows = s.size // nblocks
    out = np.empty((rows, cols), dtype=np.float32)
    _check(_lib.mxa_dequantize(c.ctypes.data_as(ctypes.c_void_p), s.ctypes.data_as(ctypes.c_void_p), rows, cols,
                               out.ctypes.data_as(ctypes.c_void_p)), "dequantize")
    return out.reshape(s.shape[:-1] + (cols,))
