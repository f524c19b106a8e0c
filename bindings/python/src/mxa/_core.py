"""The loaded library, its errors, and the process's one runtime with its open devices.

Devices are opened once and shared: "auto" and the id it resolves to ("vulkan:0") give the
same handle, so a DeviceArray made with one can be used with the other. At exit the live
device buffers are freed first, then the devices, then the runtime."""
import atexit
import ctypes
import threading
import weakref

from . import _native as _n

lib, path = _n.load()


class Error(Exception):
    """A failure of libmxa (or a bad argument caught before the call). `status` is the
    library's status name ("MXA_ERR_INVALID_ARGUMENT"), or None for a Python-side check."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


def check(status, what):
    if status != 0:
        name = lib.mxa_status_string(status).decode()
        msg = (lib.mxa_last_error_message() or b"").decode(errors="replace")
        raise Error(f"{what}: {msg or name}", name)


def text(b):
    return bytes(b).split(b"\0", 1)[0].decode(errors="replace")


_lock = threading.RLock()
_runtime = None
_handles = {}        # canonical id ("cpu", "vulkan:0") -> device handle
_aliases = {}        # id as asked ("auto", "vulkan") -> canonical id
_buffers = weakref.WeakSet()  # owners of live mxa_buffers (their release() frees them)


def runtime():
    global _runtime
    with _lock:
        if _runtime is None:
            h = ctypes.c_void_p()
            check(lib.mxa_runtime_create(None, ctypes.byref(h)), "runtime")
            _runtime = h
        return _runtime


def device(device_id):
    """(handle, canonical id) of an open device, opening it on first use."""
    device_id = str(device_id)
    rt = runtime()
    with _lock:
        canonical = _aliases.get(device_id)
        if canonical is None:
            h = ctypes.c_void_p()
            check(lib.mxa_device_open(rt, device_id.encode(), ctypes.byref(h)), f"device '{device_id}'")
            info = _n.DeviceInfo()
            check(lib.mxa_device_info_of(h, ctypes.byref(info)), f"device '{device_id}'")
            canonical = text(info.id)
            if canonical in _handles:
                lib.mxa_device_close(h)  # the same device is open already: one handle per device
            else:
                _handles[canonical] = h
            _aliases[device_id] = _aliases[canonical] = canonical
        return _handles[canonical], canonical


def device_info(device_id):
    h, _ = device(device_id)
    info = _n.DeviceInfo()
    check(lib.mxa_device_info_of(h, ctypes.byref(info)), f"device '{device_id}'")
    return info


def track_buffer(owner):
    """Registers an object whose release() frees an mxa_buffer, so that exit frees it before
    its device is closed."""
    _buffers.add(owner)


@atexit.register
def _shutdown():
    global _runtime
    with _lock:
        for owner in list(_buffers):
            owner.release()
        for h in _handles.values():
            lib.mxa_device_close(h)
        _handles.clear()
        _aliases.clear()
        if _runtime is not None:
            lib.mxa_runtime_destroy(_runtime)
            _runtime = None
