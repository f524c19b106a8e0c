"""Host arrays as mxa tensors, without a copy where the library can read them as they are.

Accepted: numpy arrays, anything with __array_interface__, and DLPack producers whose data
is on the CPU (a torch CPU tensor, a JAX CPU array). float32, float16 and bfloat16 are read
in place with their strides; float64 (numpy's default) and integers are converted once to
float32, rounding to nearest, and a finite value beyond float32's range is refused (as the
library refuses Inf) instead of becoming Inf. Masks are bool (or uint8: 0 hides a key)."""
import ctypes

import numpy as np

from . import _native as _n
from ._core import Error, check, lib

# --------------------------------------------------------------------- DLPack

_DL_CPU, _DL_CUDA_HOST = 1, 3  # device types whose memory the CPU reads
_DL_INT, _DL_UINT, _DL_FLOAT, _DL_BFLOAT, _DL_BOOL = 0, 1, 2, 4, 6


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class _View:
    """What a tensor reads: pointer, dtype code, shape and element strides, and the objects
    that keep the memory alive while the call runs."""

    def __init__(self, ptr, dtype, shape, strides, keep):
        self.ptr, self.dtype, self.shape, self.strides, self.keep = ptr, dtype, tuple(shape), tuple(strides), keep


def _dlpack_view(x, name, mask):
    """A view of a DLPack producer's CPU memory, or None when its dtype needs a conversion
    (float64, integers: numpy reads those). The capsule is never consumed: it stays alive
    with the view and its producer frees it as an unused capsule."""
    dev_type, _ = x.__dlpack_device__()
    if dev_type not in (_DL_CPU, _DL_CUDA_HOST):
        raise Error(f"{name}: the data is on a DLPack device of type {int(dev_type)}, not the CPU "
                    "(for torch CUDA tensors use mxa.torch; else copy it to the host first)")
    try:
        capsule = x.__dlpack__()
    except (RuntimeError, TypeError, BufferError) as e:
        raise Error(f"{name}: cannot export it through DLPack ({e})") from None
    dl = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    code, bits, lanes = dl.dtype.code, dl.dtype.bits, dl.dtype.lanes
    if mask:
        kinds = {(_DL_BOOL, 8): _n.BOOL, (_DL_UINT, 8): _n.BOOL}
    else:
        kinds = {(_DL_FLOAT, 32): _n.F32, (_DL_FLOAT, 16): _n.F16, (_DL_BFLOAT, 16): _n.BF16}
    if lanes != 1 or (code, bits) not in kinds:
        return None
    shape = [dl.shape[i] for i in range(dl.ndim)]
    if dl.strides:
        strides = [dl.strides[i] for i in range(dl.ndim)]
    else:
        strides = [int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(dl.ndim)]
    return _View((dl.data or 0) + dl.byte_offset, kinds[(code, bits)], shape, strides, (capsule, x))


# ---------------------------------------------------------------------- numpy

def to_f32(x, name):
    """float16 and float32 as they are; other real types converted once to float32."""
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


def _numpy_view(a, name, mask):
    if mask:
        if a.dtype not in (np.bool_, np.uint8):
            raise Error(f"{name}: a mask must be bool (or uint8), not {a.dtype}")
        code = _n.BOOL
    elif a.dtype.name == "bfloat16" and a.itemsize == 2:  # ml_dtypes' bfloat16
        a, code = a.view(np.uint16), _n.BF16
    else:
        a = to_f32(a, name)
        code = _n.F16 if a.dtype == np.float16 else _n.F32
    if a.size and any(s < 0 or s % a.itemsize for s in a.strides):
        a = np.ascontiguousarray(a)  # negative or unaligned strides: the library takes neither
    strides = [s // a.itemsize for s in a.strides]
    return _View(a.ctypes.data, code, a.shape, strides, a)


def view(x, name, mask=False):
    """The host view of x: DLPack producers in place, everything else through numpy."""
    if not isinstance(x, np.ndarray) and hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        v = _dlpack_view(x, name, mask)
        if v is not None:
            return v
        x = np.from_dlpack(x)  # float64, integers (or a wrong type): numpy converts or refuses below
    return _numpy_view(np.asarray(x), name, mask)


def tensor_of(v, name, ranks=(2, 3, 4)):
    """The mxa_tensor over a view (rank 2..4, leading axes padded with 1)."""
    if len(v.shape) not in ranks:
        want = {(2, 3, 4): "[N, D], [H, N, D] or [B, H, N, D]", (4,): "[B, H, N, D]"}.get(tuple(ranks), str(ranks))
        raise Error(f"{name}: shape {v.shape} has rank {len(v.shape)}; expected {want}")
    pad = 4 - len(v.shape)
    shape = (1,) * pad + v.shape
    strides = (0,) * pad + v.strides
    t = _n.Tensor()
    check(lib.mxa_tensor_init(ctypes.byref(t), v.dtype, *shape, ctypes.c_void_p(v.ptr)), name)
    if any(strides):
        t.strides = (ctypes.c_int64 * 4)(*strides)
    elif int(np.prod(shape)) > 1:  # every stride 0 (one broadcast value): the library reads 0s as dense
        raise Error(f"{name}: every stride is 0; pass a materialised array")
    return t


def host_tensor(x, name, mask=False, ranks=(2, 3, 4)):
    """(mxa_tensor, shape, keepalive) of a host array."""
    v = view(x, name, mask)
    return tensor_of(v, name, ranks), v.shape, v
