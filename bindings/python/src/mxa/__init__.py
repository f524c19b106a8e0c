"""mxa: MXFP4 attention (Hadamard rotation, UOS scaling q = 7.25, Pre-Normalization
Quantization) from Python, through libmxa's C API.

    import mxa
    o = mxa.attention(q, k, v)                          # MXAttention on the best device
    o, lse = mxa.attention(q, k, v, recipe="ocp-direct", device="cpu", lse=True)
    qd = mxa.to_device(q, device="vulkan:0")            # a DeviceArray: uploaded once
    od = mxa.attention(qd, kd, vd)                      # a DeviceArray on the same device
    codes, scales = mxa.quantize(x, rule="uos")
    x_hat = mxa.dequantize(codes, scales, cols=x.shape[-1])
    import mxa.torch                                    # torch's scaled_dot_product_attention

Inputs: numpy, anything with __array_interface__, DLPack producers on the CPU (torch CPU
tensors, read in place), DeviceArrays. Every failure raises mxa.Error carrying the
library's message.
"""
import ctypes

import numpy as np

from . import _native as _n
from ._arrays import host_tensor, to_f32 as _to_f32
from ._core import Error, check as _check, device as _open, lib as _lib, path as _path, runtime as _rt, \
    text as _text
from ._device_array import Buffer, DeviceArray, to_device

__all__ = ["Error", "version", "library_path", "backends", "devices", "attention", "quantize", "dequantize",
           "RECIPES", "Buffer", "DeviceArray", "to_device"]

#: Recipe names attention() accepts: the library's three plus the paper's ablations and baselines.
RECIPES = ("mxattention", "ocp-direct", "fp32", "wo-uos", "wo-pnq-uos", "tfs", "nvfp4", "nvfp4-smooth",
           "mxattention-fp8pv")

#: mxa_pv_format: the format of P and V in the P V product.
_PV_FORMATS = {"mxfp4": 0, "mxfp8": 1}


def __getattr__(name):
    if name == "torch":  # mxa.torch imports torch: only when asked for
        import importlib
        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'mxa' has no attribute '{name}'")


def _device(device_id):
    return _open(device_id)[0]


def version():
    """The library's version string."""
    return _lib.mxa_version_string().decode()


def library_path():
    """The path libmxa was loaded from."""
    return _path


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
                    "default_bc": d.default_bc, "score": d.score,
                    "score_reason": _text(d.score_reason)})
    return out


# ------------------------------------------------------------------ tensors

def _tensor(a):
    """The mxa_tensor of a C-contiguous float32/float16 numpy array of rank <= 4."""
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
            "nvfp4": _n.RECIPE_OCP_DIRECT, "nvfp4-smooth": _n.RECIPE_OCP_DIRECT, "fp32": _n.RECIPE_FP32,
            "mxattention-fp8pv": _n.RECIPE_MXATTENTION}
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
    if recipe == "mxattention-fp8pv":  # P and V in MXFP8 E4M3 (mxa.h, MXA_RECIPE_MXATTENTION_FP8PV)
        d.pv_format = _PV_FORMATS["mxfp8"]
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
        elif key == "pv":
            if value not in _PV_FORMATS:
                raise Error(f"pv '{value}': expected 'mxfp4' or 'mxfp8'")
            d.pv_format = _PV_FORMATS[value]
        elif key == "allow_non_finite":
            d.allow_non_finite = int(bool(value))
        else:
            raise Error(f"unknown switch '{key}' (expected hadamard, rule, placement, quantize, format, smooth, "
                        "pv, allow_non_finite)")
    d.causal = _causal(causal)
    d.bc = int(bc or 0)
    d.scale = float(scale or 0.0)
    return d


def _causal(causal):
    """MXA_CAUSAL_*: False/None, True or "bottom-right" (the KV-cache alignment), "top-left"."""
    names = {"none": _n.CAUSAL_NONE, "bottom-right": _n.CAUSAL_BOTTOM_RIGHT, "top-left": _n.CAUSAL_TOP_LEFT}
    if isinstance(causal, str):
        if causal not in names:
            raise Error(f"causal '{causal}': expected 'none', 'bottom-right' or 'top-left'")
        return names[causal]
    if causal in (0, 1, 2) or isinstance(causal, (bool, np.bool_)):
        return int(causal)
    raise Error(f"causal {causal!r}: expected a bool, 'bottom-right' or 'top-left'")


def attention(q, k, v, recipe="mxattention", device="auto", causal=False, bc=0, scale=None, lse=False,
              reference=False, row_sums=False, bias=None, mask=None, key_lengths=None, info=False, out_dtype=None,
              out=None, lse_out=None, **switches):
    """softmax(q k^T * scale) v with an MXFP4 (or NVFP4 / fp32) recipe.

    q: [B, H, Nq, D], [H, Nq, D] or [Nq, D]; k, v: the same rank, Hkv dividing H (GQA).
    Host inputs (numpy, __array_interface__, DLPack on the CPU) are read in place when float32,
    float16 or bfloat16 (any strides); float64 and integers are converted once to float32 (a
    finite value beyond float32's range raises). DeviceArray inputs (mxa.to_device) make the
    call on their device and return DeviceArrays there (out_dtype: "float32", "float16" or
    "bfloat16"); host inputs return float32 numpy arrays with q's shape. recipe: one of RECIPES. Switches
    override the recipe: hadamard=bool, rule="ocp"|"tfs"|"uos"|"q=7.1", placement="pnq"|"direct",
    quantize="qk,v,p"|"none", format="mxfp4"|"nvfp4", smooth=bool, pv="mxfp4"|"mxfp8" (the format of P and
    V: "mxattention-fp8pv" is mxattention with pv="mxfp8"), allow_non_finite=bool.
    bc: key-tile size (0: the device's). scale: softmax scale (None: 1/sqrt(D)).
    bias: an additive float bias on the scaled scores, [B|1, H|1, Nq, Nk], [H|1, Nq, Nk] or
    [Nq, Nk] (1 broadcasts; -inf hides a key), or None.
    mask: bool (0/False hides a key), same shapes as bias. key_lengths: B ints, batch b as if
    it had only its first key_lengths[b] keys. causal: False, True or "bottom-right" (the
    last query row sees every key: a KV cache), "top-left" (torch's is_causal).
    lse=True also returns the per-row log-sum-exp (q's shape without D).
    reference=True runs the library's reference implementation (needs bc; default 64)
    instead of a device; row_sums=True (reference only) also returns the per-row sum of
    the attention weights the output was built from.
    out=, lse_out= (DeviceArray inputs): DeviceArrays to write o and lse ([..., Nq, 1]) into
    instead of new ones (nothing is allocated).
    info=True also returns a dict of what ran: device, variant, bc, kernel_seconds (the
    device's own timing where it has one, else host wall time).
    Returns o, or a tuple (o, lse?, row_sums?, info?) in that order.
    """
    on_device = [x for x in (q, k, v) if isinstance(x, DeviceArray)]
    if row_sums and not reference:
        raise Error("row_sums=True needs reference=True")
    if on_device and reference:
        raise Error("reference=True runs on the host: pass host arrays, not DeviceArrays")
    if on_device:
        device = _same_device(on_device, device)
    keep = []  # host views and tensors the call reads: alive until it returns
    (tq, sq), (tk, sk), (tv, sv) = (_input_tensor(x, name, keep) for x, name in ((q, "q"), (k, "k"), (v, "v")))
    shapes = [sq, sk, sv]
    if not (len(shapes[0]) == len(shapes[1]) == len(shapes[2])):
        raise Error(f"q, k and v must have the same rank (got {len(shapes[0])}, {len(shapes[1])}, {len(shapes[2])})")
    desc = _desc(recipe, causal, bc, scale, switches)
    for x, name in ((bias, "bias"), (mask, "mask")):
        if x is not None:
            t, _ = _input_tensor(x, name, keep, mask=name == "mask", ranks=(2, 3, 4))
            setattr(desc, name, ctypes.cast(ctypes.pointer(t), ctypes.c_void_p))
    if key_lengths is not None:
        lens = np.ascontiguousarray(np.asarray(key_lengths).reshape(-1), dtype=np.int32)
        keep.append(lens)
        desc.key_lengths = lens.ctypes.data_as(ctypes.c_void_p)
    qshape = tuple(shapes[0])
    lse = lse or lse_out is not None
    if (out is not None or lse_out is not None) and not on_device:
        raise Error("out= and lse_out= are DeviceArrays for DeviceArray inputs")
    if on_device:
        out = out if out is not None else DeviceArray(qshape, out_dtype or "float32", device)
        if lse:
            lse_out = lse_out if lse_out is not None else DeviceArray(qshape[:-1] + (1,), "float32", device)
        to = out.tensor("o")
        tl = lse_out.tensor("lse") if lse else None
    else:
        if out_dtype not in (None, "float32", np.float32):
            raise Error("out_dtype: host outputs are float32")
        out = np.empty(qshape, dtype=np.float32)
        lse_out = np.empty(qshape[:-1] + (1,), dtype=np.float32) if lse else None
        to = _tensor(out)
        tl = _tensor(lse_out) if lse else None
    lse_ptr = ctypes.byref(tl) if lse else None
    ran = {"device": "reference" if reference else None, "variant": "reference", "bc": int(bc or 64),
           "kernel_seconds": -1.0}
    if reference:
        rows = np.empty(qshape[:-1], dtype=np.float32) if row_sums else None
        _check(_lib.mxa_reference_attention(ctypes.byref(desc), int(bc or 64), ctypes.byref(tq), ctypes.byref(tk),
                                            ctypes.byref(tv), ctypes.byref(to), lse_ptr,
                                            rows.ctypes.data_as(ctypes.c_void_p) if row_sums else None),
               "reference attention")
    else:
        handle, ran["device"] = _open(device)
        ai = _n.AttentionInfo()
        _check(_lib.mxa_attention(handle, ctypes.byref(desc), ctypes.byref(tq), ctypes.byref(tk),
                                  ctypes.byref(tv), ctypes.byref(to), lse_ptr, ctypes.byref(ai)), "attention")
        ran.update(variant=_text(ai.variant), bc=ai.bc, kernel_seconds=ai.kernel_seconds)
    result = [out]
    if lse:
        result.append(lse_out.reshape(qshape[:-1]) if on_device else lse_out[..., 0])
    if row_sums:
        result.append(rows)
    if info:
        result.append(ran)
    return result[0] if len(result) == 1 else tuple(result)


def _same_device(arrays, device):
    """The one device the DeviceArray inputs live on (and `device`, unless "auto", must name it)."""
    where = {x.device for x in arrays}
    if len(where) > 1:
        raise Error(f"the DeviceArray inputs live on different devices ({', '.join(sorted(where))})")
    (dev,) = where
    if device != "auto" and _open(device)[1] != dev:
        raise Error(f"device '{device}': the DeviceArray inputs live on '{dev}'")
    return dev


def _input_tensor(x, name, keep, mask=False, ranks=(2, 3, 4)):
    """(mxa_tensor, shape) of an input (DeviceArray or host array); what it reads goes to `keep`."""
    if isinstance(x, DeviceArray):
        t, shape = x.tensor(name, ranks), x.shape
    else:
        t, shape, v = host_tensor(x, name, mask=mask, ranks=ranks)
        keep.append(v)
    keep.append(t)
    return t, tuple(shape)


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
