"""Inputs read in place (numpy strides, DLPack, bfloat16), DeviceArrays on every present
device, the extras (bias, mask, key lengths, top-left causal), and where the library was
loaded from."""
import ctypes
import os
from pathlib import Path

import numpy as np
import pytest

import mxa
from mxa import _arrays

from test_mxa import attention_inputs


def devices_with_buffers():
    return [d["id"] for d in mxa.devices() if d["backend"] in ("cpu", "vulkan", "opencl")]


def test_library_is_the_packaged_one_unless_mxa_library_says_otherwise():
    env = os.environ.get("MXA_LIBRARY")
    if env:
        assert mxa.library_path() == env
    else:  # an installed wheel: the libmxa.so inside the package, no environment needed
        assert Path(mxa.library_path()).parent == Path(mxa.__file__).parent
        assert Path(mxa.library_path()).name == "libmxa.so"


class DLPackOnly:
    """Only the DLPack protocol, from numpy's own implementation."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kwargs):
        return self.a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


class ArrayInterfaceOnly:
    def __init__(self, a):
        self.__array_interface__ = a.__array_interface__
        self.a = a


def test_dlpack_and_array_interface_are_read_in_place():
    q, k, v = attention_inputs(21)
    ref = mxa.attention(q, k, v, recipe="fp32", device="cpu")
    t, shape, view = _arrays.host_tensor(DLPackOnly(q), "q")
    assert t.data == q.ctypes.data and shape == q.shape  # the producer's memory, no copy
    o = mxa.attention(DLPackOnly(q), ArrayInterfaceOnly(k), DLPackOnly(v), recipe="fp32", device="cpu")
    assert np.array_equal(o, ref)
    # float64 through DLPack: converted once, as numpy float64 is
    o64 = mxa.attention(DLPackOnly(q.astype(np.float64)), k, v, recipe="fp32", device="cpu")
    assert np.array_equal(o64, ref)


def test_strided_views_are_read_in_place():
    q, k, v = attention_inputs(22)
    qt = np.ascontiguousarray(np.swapaxes(q, 1, 2))  # [B, N, H, D], as many models keep it
    view = np.swapaxes(qt, 1, 2)                       # [B, H, N, D] view, not contiguous
    t, _, _ = _arrays.host_tensor(view, "q")
    assert t.data == view.ctypes.data and list(t.strides) == [s // 4 for s in view.strides]
    assert np.array_equal(mxa.attention(view, k, v, recipe="fp32", device="cpu"),
                          mxa.attention(q, k, v, recipe="fp32", device="cpu"))


def test_bfloat16_bits_are_read_as_bfloat16():
    """A DLPack producer of bfloat16 (as torch is): the library reads the bits as bf16."""
    q, k, v = attention_inputs(23)
    bits = (q.view(np.uint32) >> 16).astype(np.uint16)  # truncated to bfloat16
    widened = (bits.astype(np.uint32) << 16).view(np.float32)
    view = _arrays._View(bits.ctypes.data, mxa._n.BF16, bits.shape, [s // 2 for s in bits.strides], bits)
    t = _arrays.tensor_of(view, "q")
    assert t.dtype == mxa._n.BF16
    out = np.empty(q.shape, np.float32)
    tk, _, keep_k = _arrays.host_tensor(k, "k")
    tv, _, keep_v = _arrays.host_tensor(v, "v")
    desc = mxa._desc("fp32", False, 0, None, {})
    dev = mxa._device("cpu")
    to = mxa._tensor(out)
    assert mxa._lib.mxa_attention(dev, ctypes.byref(desc), ctypes.byref(t), ctypes.byref(tk), ctypes.byref(tv),
                                  ctypes.byref(to), None, None) == 0
    assert np.array_equal(out, mxa.attention(widened, k, v, recipe="fp32", device="cpu"))


@pytest.mark.parametrize("device", devices_with_buffers())
def test_device_arrays_stay_on_their_device(device):
    q, k, v = attention_inputs(24, h=4, hkv=2)
    qd, kd, vd = (mxa.to_device(x, device=device) for x in (q, k, v))
    assert qd.shape == q.shape and qd.dtype == np.float32 and np.array_equal(qd.numpy(), q)
    od, lse, info = mxa.attention(qd, kd, vd, recipe="mxattention", lse=True, info=True)
    assert isinstance(od, mxa.DeviceArray) and od.device == qd.device and od.shape == q.shape
    assert isinstance(lse, mxa.DeviceArray) and lse.shape == q.shape[:-1]
    host, host_lse = mxa.attention(q, k, v, recipe="mxattention", device=qd.device, lse=True)
    assert np.array_equal(od.numpy(), host) and np.array_equal(lse.numpy(), host_lse)
    assert info["device"] == qd.device and info["bc"] > 0
    # written into given arrays: nothing allocated, the same result
    again = mxa.DeviceArray(q.shape, "float32", device=device)
    mxa.attention(qd, kd, vd, recipe="mxattention", out=again)
    assert np.array_equal(again.numpy(), host)
    half = mxa.attention(qd, kd, vd, recipe="fp32", out_dtype="float16")
    assert half.dtype == np.float16
    assert np.max(np.abs(half.numpy() - mxa.attention(q, k, v, recipe="fp32", device="cpu"))) < 2e-3


def test_device_array_errors():
    q, k, v = attention_inputs(25)
    qd = mxa.to_device(q, device="cpu")
    devs = devices_with_buffers()
    if len(devs) > 1:
        other = mxa.to_device(k, device=[d for d in devs if d != "cpu"][0])
        with pytest.raises(mxa.Error, match="different devices"):
            mxa.attention(qd, other, v)
    with pytest.raises(mxa.Error, match="reference"):
        mxa.attention(qd, k, v, reference=True)
    with pytest.raises(mxa.Error, match="out="):
        mxa.attention(q, k, v, out=qd)
    with pytest.raises(mxa.Error, match="reshape"):
        qd.reshape(3, 5)
    with pytest.raises(mxa.Error, match="dtype"):
        mxa.DeviceArray((4, 32), "int8", device="cpu")


def test_the_same_device_by_any_name():
    a = mxa.to_device(np.ones((2, 32, 32), np.float32), device="auto")
    b = mxa.to_device(np.ones((2, 32, 32), np.float32), device=a.device)
    assert mxa._device("auto").value == mxa._device(a.device).value
    mxa.attention(a, b, b, device=a.device)


def masked_reference(q, k, v, visible=None, bias=None, top_left=False):
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if bias is not None:
        s = s + bias
    nq, nk = s.shape[-2:]
    hidden = np.zeros(s.shape, bool)
    if visible is not None:
        hidden |= ~visible
    if top_left:
        hidden |= np.arange(nk)[None, :] > np.arange(nq)[:, None]
    s = np.where(hidden, -np.inf, s)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return p @ v / p.sum(axis=-1, keepdims=True)


def test_bias_mask_top_left_and_key_lengths():
    q, k, v = attention_inputs(26, b=2, h=2, hkv=2, nq=40, nk=72, d=64)
    rng = np.random.default_rng(3)
    bias = rng.standard_normal((1, 2, 40, 72)).astype(np.float32)
    visible = rng.random((2, 1, 40, 72)) > 0.3
    visible[..., 0] = True
    o = mxa.attention(q, k, v, recipe="fp32", device="cpu", bias=bias, mask=visible)
    assert np.max(np.abs(o - masked_reference(q, k, v, visible, bias))) < 2e-5
    o = mxa.attention(q, k, v, recipe="fp32", device="cpu", causal="top-left")
    assert np.max(np.abs(o - masked_reference(q, k, v, top_left=True))) < 2e-5
    bottom = mxa.attention(q, k, v, recipe="fp32", device="cpu", causal="bottom-right")
    assert np.array_equal(bottom, mxa.attention(q, k, v, recipe="fp32", device="cpu", causal=True))
    assert not np.allclose(bottom, o)
    o = mxa.attention(q, k, v, recipe="fp32", device="cpu", key_lengths=[72, 33])
    alone = mxa.attention(q[1:], k[1:, :, :33], v[1:, :, :33], recipe="fp32", device="cpu")
    assert np.array_equal(o[1:], alone)
    with pytest.raises(mxa.Error, match="mask must be bool"):
        mxa.attention(q, k, v, device="cpu", mask=bias)
    with pytest.raises(mxa.Error, match="causal"):
        mxa.attention(q, k, v, device="cpu", causal="left")
