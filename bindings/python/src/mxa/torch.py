"""torch.nn.functional.scaled_dot_product_attention through mxa: MXFP4 attention in a
PyTorch model without changing it.

    import mxa.torch
    out = mxa.torch.scaled_dot_product_attention(q, k, v, is_causal=True)         # MXAttention
    out, lse = mxa.torch.scaled_dot_product_attention(q, k, v, return_lse=True)   # (out, lse) for xDiT/yunchang
    with mxa.torch.patch(recipe="mxattention"):     # F.scaled_dot_product_attention is mxa's here
        y = model(x)                                # (or patch() ... unpatch())

Same layout and semantics as torch's: q [..., Hq, L, E], k and v [..., Hkv, S, E] (Hkv = Hq,
or dividing it with enable_gqa=True); is_causal is torch's top-left alignment (query i sees
keys j <= i; mxa's MXA_CAUSAL_TOP_LEFT), not the bottom-right one of a KV cache; attn_mask
is boolean (True takes part) or additive (added to the scaled scores, -inf hides), of any
shape that broadcasts to [..., Hq, L, S]. The output has q's dtype and shape; lse is float32
[..., Hq, L] (natural log). Differences from torch: there is no dropout (dropout_p != 0 is
an error) and no backward (inputs that require grad, with grad enabled, are an error); a row
whose every key is masked gives 0 (lse -inf) where torch gives NaN; v's head size must equal
q's, a multiple of 32.

CPU tensors are read in place (DLPack) and computed on `device` (None: mxa's "auto"). CUDA
tensors run on the Vulkan device of the same GPU without leaving it: see mxa._torch_cuda;
where that is not possible the host path runs, with one warning saying why.
"""
import threading
import warnings

import torch
import torch.nn.functional as F

from . import Error, attention as _mxa_attention

__all__ = ["scaled_dot_product_attention", "patch", "unpatch", "last_info"]

_original_sdpa = F.scaled_dot_product_attention
_local = threading.local()
_calls = [0]
_warned = set()


def last_info():
    """What this thread's last call did: path ("cuda" or "host"), device, variant, bc,
    kernel_seconds (the device's own timing), calls (every call of this process so far)."""
    return dict(getattr(_local, "info", {}), calls=_calls[0])


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False, *, recipe="mxattention", device=None, return_lse=False,
                                 **switches):
    """torch's scaled_dot_product_attention computed by mxa with `recipe` (and any mxa switch:
    rule=, placement=, quantize=, hadamard=, bc=, ...). device: an mxa device id (None: for
    CUDA tensors the Vulkan device of their GPU, else "auto"). Returns out, or (out, lse)."""
    q, k, v = query, key, value
    for t, name in ((q, "query"), (k, "key"), (v, "value")):
        if not isinstance(t, torch.Tensor):
            raise Error(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if dropout_p:
        raise Error(f"dropout_p={dropout_p}: mxa has no attention dropout (pass 0.0, as torch does in eval mode)")
    if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (q, k, v, attn_mask)):
        raise Error("mxa has no backward pass: call it under torch.no_grad() or torch.inference_mode()")
    if q.device != k.device or q.device != v.device or (attn_mask is not None and attn_mask.device != q.device):
        raise Error(f"query, key, value and attn_mask must be on one device (got {q.device}, {k.device}, "
                    f"{v.device}{', ' + str(attn_mask.device) if attn_mask is not None else ''})")
    if is_causal and attn_mask is not None:
        raise Error("is_causal=True with an attn_mask: pass one of them (as torch requires)")
    q4, k4, v4, lead = _as_4d(q, k, v, enable_gqa)
    mask, bias = _mask_inputs(attn_mask, q, k, lead)
    causal = "top-left" if is_causal else False
    _calls[0] += 1
    if q.is_cuda:
        from . import _torch_cuda
        try:
            out, lse, info = _torch_cuda.attention(q4, k4, v4, mask, bias, causal, scale, recipe, device,
                                                   return_lse, switches)
            return _result(out, lse, q, lead, return_lse, dict(info, path="cuda"))
        except _torch_cuda.Unavailable as e:
            _warn_once(f"mxa.torch: CUDA tensors go through the host ({e})")
    out, lse, info = _host(q4, k4, v4, mask, bias, causal, scale, recipe, device, return_lse, switches)
    out = torch.from_numpy(out).to(device=q.device, dtype=q.dtype)
    lse = torch.from_numpy(lse).to(q.device) if return_lse else None
    return _result(out, lse, q, lead, return_lse, dict(info, path="host"))


def _host(q, k, v, mask, bias, causal, scale, recipe, device, return_lse, switches):
    """The host path: CPU tensors are read in place; others are copied to the host once."""
    q, k, v, mask, bias = (None if t is None else t.detach().cpu() for t in (q, k, v, mask, bias))
    r = _mxa_attention(q, k, v, recipe=recipe, device=device or "auto", causal=causal, scale=scale,
                       lse=return_lse, bias=bias, mask=mask, info=True, **switches)
    return (r[0], r[1], r[2]) if return_lse else (r[0], None, r[1])


def _result(out, lse, q, lead, return_lse, info):
    _local.info = info
    out = out.reshape(q.shape)
    if not return_lse:
        return out
    return out, lse.reshape(q.shape[:-1])


def _as_4d(q, k, v, enable_gqa):
    """q, k, v as [B, H, N, D] views (leading axes beyond three folded into B) after torch's
    checks of their shapes, and q's leading shape."""
    if q.dim() < 2 or k.dim() != q.dim() or v.dim() != q.dim():
        raise Error(f"query, key and value must have one rank >= 2 (got {q.dim()}, {k.dim()}, {v.dim()})")
    if k.shape[-1] != q.shape[-1] or v.shape[-2] != k.shape[-2] or v.shape[-1] != q.shape[-1]:
        raise Error(f"shapes query {tuple(q.shape)}, key {tuple(k.shape)}, value {tuple(v.shape)}: mxa needs "
                    "key and value with query's head size and as many keys as each other")
    if q.dim() >= 3:
        hq, hkv = q.shape[-3], k.shape[-3]
        if hq != hkv and not enable_gqa:
            raise Error(f"query has {hq} heads and key/value {hkv}: pass enable_gqa=True for grouped-query attention")
        if hq % hkv:
            raise Error(f"enable_gqa: key/value's {hkv} heads do not divide query's {hq}")
        if q.shape[:-3] != k.shape[:-3] or k.shape[:-3] != v.shape[:-3]:
            raise Error(f"query, key and value must have the same leading (batch) shape "
                        f"({tuple(q.shape[:-3])}, {tuple(k.shape[:-3])}, {tuple(v.shape[:-3])})")
    lead = tuple(q.shape[:-3]) if q.dim() > 4 else None
    if lead is not None:
        q, k, v = (t.reshape(-1, *t.shape[-3:]) for t in (q, k, v))
    return q, k, v, lead


def _mask_inputs(attn_mask, q, k, lead):
    """(mask, bias): torch's attn_mask as mxa's bool mask or additive bias, [B|1, H|1, L, S]
    (L and S materialised where torch would broadcast them; B and H broadcast by mxa)."""
    if attn_mask is None:
        return None, None
    m = attn_mask
    if m.dtype != torch.bool and not m.dtype.is_floating_point:
        raise Error(f"attn_mask: dtype {m.dtype}; expected bool (True takes part) or a float additive mask")
    target = tuple(q.shape[:-1]) + (k.shape[-2],)
    if m.dim() > len(target) or any(a not in (1, b) for a, b in zip(m.shape[::-1], target[::-1])):
        raise Error(f"attn_mask: shape {tuple(m.shape)} does not broadcast to {target}")
    m = m.reshape((1,) * (len(target) - m.dim()) + tuple(m.shape))
    m = m.expand(*m.shape[:-2], *target[-2:])
    if lead is not None:  # the leading axes folded into B: all of them or none broadcast
        folded = 1 if all(a == 1 for a in m.shape[:-3]) else -1
        m = m.expand(*(target[:-3] if folded == -1 else m.shape[:-3]), *m.shape[-3:]).reshape(folded, *m.shape[-3:])
    m = m.contiguous()
    return (m, None) if m.dtype == torch.bool else (None, m)


def _warn_once(message):
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


# ---------------------------------------------------------------------- patch

class _Patch:
    """The handle patch() returns: unpatches when used as a context manager's exit."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        unpatch()
        return False


def patch(**defaults):
    """torch.nn.functional.scaled_dot_product_attention becomes mxa's, with these defaults
    for recipe=, device= and the mxa switches, until unpatch() (or the end of a `with`).
    Models that call F.scaled_dot_product_attention (or torch.nn.MultiheadAttention's
    Python path) then run MXFP4 attention unmodified."""
    def sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False,
             **kwargs):
        return scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa,
                                            **{**defaults, **kwargs})
    sdpa.__doc__ = f"mxa's scaled_dot_product_attention (mxa.torch.patch, defaults {defaults})"
    sdpa._mxa_patch = True
    F.scaled_dot_product_attention = sdpa
    return _Patch()


def unpatch():
    """Restores torch's own scaled_dot_product_attention."""
    F.scaled_dot_product_attention = _original_sdpa
