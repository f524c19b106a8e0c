"""Arrays that live in an mxa device buffer (host memory on the CPU device), so repeated
attention calls on them move no data between the host and the device.

    x = mxa.to_device(q, device="vulkan:0")     # uploaded once, as float32
    o = mxa.attention(x, k_dev, v_dev)          # a DeviceArray on vulkan:0
    o.numpy()                                   # downloaded when asked

The library reads device-buffer inputs as float32, so to_device converts once on the host
(float16, bfloat16, float64 alike); an output may be float32, float16 or bfloat16."""
import ctypes

import numpy as np

from . import _native as _n
from ._arrays import tensor_of, view, _View
from ._core import Error, check, device, lib, track_buffer

_CODES = {"float32": _n.F32, "float16": _n.F16, "bfloat16": _n.BF16, "bool": _n.BOOL}


def dtype_name(dtype):
    """'float32', 'float16' or 'bfloat16' for a numpy dtype, a torch dtype or a name."""
    name = str(dtype).replace("torch.", "")
    if name in _CODES:
        return name
    try:
        name = np.dtype(dtype).name
    except TypeError:
        pass
    if name not in _CODES:
        raise Error(f"dtype {dtype}: a device array is float32, float16, bfloat16 (or bool, a mask)")
    return name


class Buffer:
    """One mxa_buffer of a device; freed when the last array over it goes (or at exit)."""

    def __init__(self, device_id, nbytes, exportable=False):
        self.device_handle, self.device = device(device_id)
        h = ctypes.c_void_p()
        if exportable:
            fn = getattr(lib, "mxa_vulkan_buffer_create_exportable", None)
            if fn is None:
                raise Error("exportable buffers need a library built with the Vulkan backend")
            check(fn(self.device_handle, nbytes, ctypes.byref(h)), "exportable buffer")
        else:
            check(lib.mxa_buffer_create(self.device_handle, nbytes, ctypes.byref(h)), "buffer")
        self.handle, self.nbytes = h, nbytes
        track_buffer(self)

    def release(self):
        if self.handle:
            lib.mxa_buffer_destroy(self.handle)
            self.handle = None

    def __del__(self):
        self.release()

    def live(self):
        if not self.handle:
            raise Error("the buffer was freed (interpreter exit)")
        return self.handle


class DeviceArray:
    """An array in an mxa device buffer: `shape`, `dtype` (np.float32, np.float16, the name
    'bfloat16', or np.bool_ for a mask), `device` (the id it lives on, e.g. 'vulkan:0'),
    `.numpy()`."""

    def __init__(self, shape, dtype="float32", device="auto", buffer=None, exportable=False):
        self.shape = tuple(int(s) for s in shape)
        name = dtype_name(dtype)
        self.dtype = np.dtype(name) if name != "bfloat16" else "bfloat16"
        self._code = _CODES[name]
        self.itemsize = {"float32": 4, "bool": 1}.get(name, 2)
        self.size = int(np.prod(self.shape, dtype=np.int64))
        self.nbytes = self.size * self.itemsize
        if buffer is None:
            buffer = Buffer(device, max(self.nbytes, 4), exportable)
        elif buffer.nbytes < self.nbytes:
            raise Error(f"a {buffer.nbytes}-byte buffer cannot hold {self.shape} {name}")
        self.buffer = buffer
        self.device = buffer.device

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        return f"mxa.DeviceArray(shape={self.shape}, dtype={getattr(self.dtype, 'name', self.dtype)}, device='{self.device}')"

    def reshape(self, *shape):
        """The same buffer seen with another shape of as many elements."""
        shape = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else shape
        if int(np.prod(shape, dtype=np.int64)) != self.size:
            raise Error(f"cannot reshape {self.shape} to {shape}")
        return DeviceArray(shape, self.dtype, buffer=self.buffer)

    def tensor(self, name, ranks=(2, 3, 4)):
        """The mxa_tensor over this array (contiguous, in the device buffer)."""
        strides = [int(np.prod(self.shape[i + 1:], dtype=np.int64)) for i in range(self.ndim)]
        t = tensor_of(_View(1, self._code, self.shape, strides, None), name, ranks)
        t.data = None
        t.strides = (ctypes.c_int64 * 4)(0, 0, 0, 0)
        t.buffer, t.offset = self.buffer.live(), 0
        return t

    def numpy(self):
        """A host copy: float32 or float16 as stored; bfloat16 widened exactly to float32."""
        raw = np.empty(self.shape, dtype={_n.F32: np.float32, _n.BOOL: np.bool_}.get(self._code, np.uint16))
        check(lib.mxa_buffer_download(self.buffer.live(), 0, raw.ctypes.data_as(ctypes.c_void_p), self.nbytes),
              "download")
        if self._code == _n.F16:
            return raw.view(np.float16)
        if self._code == _n.BF16:
            return (raw.astype(np.uint32) << 16).view(np.float32)
        return raw

    def upload(self, x):
        """Copies a host array of this shape in (converted once to this array's float32)."""
        if self._code != _n.F32:
            raise Error("upload: only float32 device arrays are written from the host")
        a = np.ascontiguousarray(host_float32(x, "upload"))
        if a.shape != self.shape:
            raise Error(f"upload: shape {a.shape} is not {self.shape}")
        check(lib.mxa_buffer_upload(self.buffer.live(), 0, a.ctypes.data_as(ctypes.c_void_p), self.nbytes), "upload")
        return self


def host_float32(x, name):
    """x on the host as a float32 numpy array (bfloat16 widened exactly, float64 rounded once)."""
    from ._arrays import to_f32
    v = view(x, name)
    if v.dtype == _n.BF16:
        bits = np.ctypeslib.as_array(ctypes.cast(v.ptr, ctypes.POINTER(ctypes.c_uint16)),
                                     shape=(max(_span(v), 1),))
        raw = np.lib.stride_tricks.as_strided(bits, v.shape, [s * 2 for s in v.strides])
        return (raw.astype(np.uint32) << 16).view(np.float32)
    if isinstance(v.keep, np.ndarray):
        return v.keep.astype(np.float32, copy=False)
    return to_f32(np.from_dlpack(x), name)


def _span(v):
    return 1 + sum((n - 1) * s for n, s in zip(v.shape, v.strides))


def to_device(x, device="auto"):
    """x (numpy, __array_interface__, DLPack on the CPU, or a DeviceArray) in a float32
    DeviceArray on `device`. A DeviceArray already there is returned as it is."""
    if isinstance(x, DeviceArray):
        if device in ("auto", x.device) and x.dtype == np.float32:
            return x
        x = x.numpy()
    a = host_float32(x, "to_device")
    return DeviceArray(a.shape, "float32", device).upload(a)
