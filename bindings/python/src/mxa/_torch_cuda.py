"""CUDA tensors through mxa's Vulkan backend on the same GPU: the data never leaves the GPU.

mxa allocates exportable Vulkan memory (mxa_vulkan_buffer_create_exportable), exports it as
an opaque file descriptor, and the CUDA runtime torch has loaded imports it
(cudaImportExternalMemory, cudaExternalMemoryGetMappedBuffer; through ctypes, nothing is
built against CUDA); torch sees the memory as tensors (__cuda_array_interface__). One call:
  1. copies q, k, v (and the mask or bias) into those tensors: device-to-device copies on
     torch's current stream, converting to float32 (what mxa reads from device buffers);
  2. torch.cuda.current_stream().synchronize(): those copies have finished;
  3. mxa_attention on the Vulkan device; it returns once the GPU has written o and lse;
  4. copies o (written in q's dtype) and lse into new tensors on the current stream, so
     later work on that stream sees them in order.
The exported buffers are cached per shape (the last few shapes), so repeated calls allocate
nothing. The Vulkan device is matched to the tensors' GPU by a round trip: bytes mxa uploads
into an exported buffer must read back through CUDA on that GPU.

Everything CUDA does here goes through one importer object (_CudaImport); the tests put
lavapipe's exported memory (a memfd) behind the same interface to run the rest on a CPU.
"""
import collections
import ctypes
import os
import threading

import numpy as np
import torch

from . import attention as _mxa_attention
from ._core import Error, check, device_info, lib, text
from ._device_array import Buffer, DeviceArray

_OPAQUE_FD = 1  # cudaExternalMemoryHandleTypeOpaqueFd
_CACHE_SHAPES = 4


class Unavailable(Exception):
    """Why CUDA tensors cannot go through Vulkan here (the caller takes the host path)."""


class _Handle(ctypes.Union):
    _fields_ = [("fd", ctypes.c_int), ("win32", ctypes.c_void_p * 2), ("nvSciBufObject", ctypes.c_void_p)]


class _MemoryDesc(ctypes.Structure):  # cudaExternalMemoryHandleDesc (reserved: CUDA 12 and later, zeroed)
    _fields_ = [("type", ctypes.c_int), ("handle", _Handle), ("size", ctypes.c_ulonglong),
                ("flags", ctypes.c_uint), ("reserved", ctypes.c_uint * 16)]


class _BufferDesc(ctypes.Structure):  # cudaExternalMemoryBufferDesc
    _fields_ = [("offset", ctypes.c_ulonglong), ("size", ctypes.c_ulonglong), ("flags", ctypes.c_uint),
                ("reserved", ctypes.c_uint * 16)]


class _CudaImport:
    """The CUDA runtime torch loaded (found in this process's mappings), by ctypes: imports
    exported memory as torch tensors on a CUDA device, and the stream synchronisation."""

    def __init__(self):
        torch.cuda.init()
        path = _loaded("libcudart.so")
        try:
            self.lib = ctypes.CDLL(path or "libcudart.so")
        except OSError as e:
            raise Unavailable(f"no CUDA runtime library to call ({e})") from None
        P, vp = ctypes.POINTER, ctypes.c_void_p
        for name, res, args in (("cudaImportExternalMemory", ctypes.c_int, [P(vp), P(_MemoryDesc)]),
                                ("cudaExternalMemoryGetMappedBuffer", ctypes.c_int, [P(vp), vp, P(_BufferDesc)]),
                                ("cudaDestroyExternalMemory", ctypes.c_int, [vp]),
                                ("cudaFree", ctypes.c_int, [vp]),
                                ("cudaGetErrorString", ctypes.c_char_p, [ctypes.c_int])):
            fn = getattr(self.lib, name, None)
            if fn is None:
                raise Unavailable(f"the CUDA runtime {path} has no {name}")
            fn.restype, fn.argtypes = res, args
        self.path = path

    def call(self, name, *args):
        r = getattr(self.lib, name)(*args)
        if r != 0:
            raise Error(f"{name}: CUDA error {r} ({(self.lib.cudaGetErrorString(r) or b'').decode()})")

    def map(self, fd, allocation_size, nbytes, device):
        """(uint8 tensor over the first nbytes, mapping) of the memory behind an opaque fd."""
        md = _MemoryDesc(type=_OPAQUE_FD, size=allocation_size)
        md.handle.fd = fd
        ext, ptr = ctypes.c_void_p(), ctypes.c_void_p()
        with torch.cuda.device(device):
            try:
                self.call("cudaImportExternalMemory", ctypes.byref(ext), ctypes.byref(md))
            except Error:
                os.close(fd)  # CUDA owns the fd only once the import succeeded
                raise
            try:
                self.call("cudaExternalMemoryGetMappedBuffer", ctypes.byref(ptr), ext,
                          ctypes.byref(_BufferDesc(offset=0, size=nbytes)))
                return torch.as_tensor(_CudaBytes(ptr.value, nbytes), device=device), (ext, ptr)
            except Exception:
                self.unmap((ext, ptr))
                raise

    def unmap(self, mapping):
        ext, ptr = mapping
        if ptr.value:
            self.call("cudaFree", ptr)
        if ext.value:
            self.call("cudaDestroyExternalMemory", ext)

    def on(self, device):
        return torch.cuda.device(device)

    def synchronize(self, device, everything=False):
        if everything:
            torch.cuda.synchronize(device)
        else:
            torch.cuda.current_stream(device).synchronize()

    def index(self, device):
        index = torch.device(device).index
        return torch.cuda.current_device() if index is None else index

    def name(self, device):
        return torch.cuda.get_device_name(self.index(device))


def _loaded(stem):
    """The path of a shared library this process has mapped whose name starts with stem."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                p = line.split(None, 5)[-1].strip()
                if os.path.basename(p).startswith(stem):
                    return p
    except OSError:
        pass
    return None


class _CudaBytes:
    """__cuda_array_interface__ of raw device bytes, so torch.as_tensor aliases them."""

    def __init__(self, ptr, nbytes):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False), "version": 3}


class _Exported:
    """One exportable mxa buffer of a Vulkan device, imported into CUDA and seen by torch."""

    def __init__(self, importer, vk_device, nbytes, device):
        self.importer, self.nbytes, self.raw, self.mapping = importer, nbytes, None, None
        self.buffer = Buffer(vk_device, nbytes, exportable=True)
        fd, alloc = ctypes.c_int(-1), ctypes.c_uint64(0)
        try:
            check(lib.mxa_vulkan_buffer_export_fd(self.buffer.handle, ctypes.byref(fd), ctypes.byref(alloc)),
                  "export")
            self.raw, self.mapping = importer.map(fd.value, alloc.value, nbytes, device)
        except Exception:
            self.release()
            raise

    def tensor(self, shape, dtype):
        """A torch view of the first bytes as `shape` of `dtype`."""
        n = int(np.prod(shape, dtype=np.int64)) * torch.empty((), dtype=dtype).element_size()
        return self.raw[:n].view(dtype).view(shape)

    def array(self, shape, dtype):
        """The same bytes as an mxa DeviceArray."""
        return DeviceArray(shape, dtype, buffer=self.buffer)

    def release(self):
        self.raw = None
        if self.mapping is not None:
            mapping, self.mapping = self.mapping, None
            self.importer.unmap(mapping)
        self.buffer.release()


_importer = None
_lock = threading.Lock()               # one call at a time uses the cached buffers
_matched = {}                          # (cuda index, device asked) -> Vulkan device id
_slots = collections.OrderedDict()     # call shape -> {name: _Exported}, most recent last


def _runtime():
    global _importer
    if not hasattr(lib, "mxa_vulkan_buffer_export_fd"):
        raise Unavailable("this libmxa has no Vulkan backend (mxa_vulkan_buffer_export_fd)")
    if _importer is None:
        if not torch.cuda.is_available():
            raise Unavailable("torch.cuda is not available")
        _importer = _CudaImport()
    return _importer


def vulkan_device_for(cuda_device, asked=None):
    """The mxa Vulkan device id whose memory is the GPU of `cuda_device` (proved by a round
    trip of random bytes), trying `asked` alone when given."""
    importer = _runtime()
    index = importer.index(cuda_device)
    key = (index, asked)
    if key in _matched:
        return _matched[key]
    if asked is not None:
        candidates = [asked]
    else:  # opening vulkan:i loads the Vulkan backend alone (listing every device would load them all)
        name, vk = importer.name(cuda_device), []
        while True:
            try:
                vk.append((f"vulkan:{len(vk)}", text(device_info(f"vulkan:{len(vk)}").name)))
            except Error:
                break
        candidates = [i for i, n in vk if n == name] + [i for i, n in vk if n != name]
    why = []
    for dev_id in candidates:
        try:
            probe = _Exported(importer, dev_id, 4096, cuda_device)
            try:
                pattern = np.frombuffer(os.urandom(4096), dtype=np.uint8).copy()
                check(lib.mxa_buffer_upload(probe.buffer.handle, 0, pattern.ctypes.data_as(ctypes.c_void_p), 4096),
                      "upload")
                same = np.array_equal(probe.raw.cpu().numpy(), pattern)
            finally:
                probe.release()
        except Error as e:
            why.append(f"{dev_id}: {e}")
            continue
        if same:
            _matched[key] = dev_id
            return dev_id
        why.append(f"{dev_id}: its exported memory reads differently on {cuda_device}")
    raise Unavailable(f"no mxa Vulkan device shares memory with {cuda_device}"
                      f" ({'; '.join(why) if why else 'no Vulkan device'})")


def _slot(key, specs, importer, vk_device, cuda_device):
    """The cached exported buffers of one call shape: {name: _Exported} for specs {name: nbytes}."""
    if key in _slots:
        _slots.move_to_end(key)
        return _slots[key]
    while len(_slots) >= _CACHE_SHAPES:
        importer.synchronize(cuda_device, everything=True)  # copies out of the oldest may still be queued
        for e in _slots.popitem(last=False)[1].values():
            e.release()
    made = {}
    try:
        for name, nbytes in specs.items():
            made[name] = _Exported(importer, vk_device, max(int(nbytes), 4), cuda_device)
    except Exception:
        for e in made.values():
            e.release()
        raise
    _slots[key] = made
    return made


def attention(q, k, v, mask, bias, causal, scale, recipe, device, return_lse, switches):
    """mxa attention of 4-D CUDA tensors on the Vulkan device of their GPU: (out, lse, info)."""
    with _lock:
        return _attention(q, k, v, mask, bias, causal, scale, recipe, device, return_lse, switches)


def _attention(q, k, v, mask, bias, causal, scale, recipe, device, return_lse, switches):
    importer = _runtime()
    if device is not None and not str(device).startswith("vulkan"):
        raise Unavailable(f"device '{device}' is not a Vulkan device")
    cuda_device = q.device
    vk = vulkan_device_for(cuda_device, device)
    out_dtype = q.dtype if q.dtype in (torch.float16, torch.bfloat16) else torch.float32
    shapes = {"q": q.shape, "k": k.shape, "v": v.shape}
    specs = {name: 4 * s.numel() for name, s in shapes.items()}
    specs["o"] = q.numel() * (2 if out_dtype != torch.float32 else 4)
    if return_lse:
        specs["lse"] = 4 * q.numel() // q.shape[-1]
    extra = mask if mask is not None else bias
    if extra is not None:
        specs["mask" if mask is not None else "bias"] = extra.numel() * (1 if mask is not None else 4)
    key = (vk, cuda_device, tuple(q.shape), tuple(k.shape), tuple(v.shape), out_dtype, return_lse,
           None if extra is None else (tuple(extra.shape), extra.dtype == torch.bool))
    slot = _slot(key, specs, importer, vk, cuda_device)
    with importer.on(cuda_device):
        for name, t in (("q", q), ("k", k), ("v", v)):
            slot[name].tensor(t.shape, torch.float32).copy_(t)
        if mask is not None:
            slot["mask"].tensor(mask.shape, torch.bool).copy_(mask)
        if bias is not None:
            slot["bias"].tensor(bias.shape, torch.float32).copy_(bias)
        importer.synchronize(cuda_device)  # the copies in are done before Vulkan reads the memory
        arrays = {name: slot[name].array(tuple(shapes[name]), "float32") for name in ("q", "k", "v")}
        o_arr = slot["o"].array(tuple(q.shape), str(out_dtype).replace("torch.", ""))
        lse_arr = slot["lse"].array(tuple(q.shape[:-1]) + (1,), "float32") if return_lse else None
        m_arr = slot["mask"].array(tuple(mask.shape), "bool") if mask is not None else None
        b_arr = slot["bias"].array(tuple(bias.shape), "float32") if bias is not None else None
        r = _mxa_attention(arrays["q"], arrays["k"], arrays["v"], recipe=recipe, device=vk, causal=causal,
                           scale=scale, mask=m_arr, bias=b_arr, info=True, out=o_arr, lse_out=lse_arr, **switches)
        info = r[-1]
        out = torch.empty(q.shape, dtype=q.dtype, device=cuda_device)
        out.copy_(slot["o"].tensor(q.shape, out_dtype))
        lse = None
        if return_lse:
            lse = torch.empty(q.shape[:-1], dtype=torch.float32, device=cuda_device)
            lse.copy_(slot["lse"].tensor(q.shape[:-1], torch.float32))
    return out, lse, info
