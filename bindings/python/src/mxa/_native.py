"""ctypes declarations of include/mxa/mxa.h (kept in the header's order) and
the lookup of libmxa.so: MXA_LIBRARY, then the libmxa.so installed inside this package
(`pip install .` at the repository root), then a checkout's build/, then the system."""
import ctypes
import ctypes.util
import os
from pathlib import Path

c_int, c_float, c_double = ctypes.c_int, ctypes.c_float, ctypes.c_double
c_int64, c_uint32, c_uint64 = ctypes.c_int64, ctypes.c_uint32, ctypes.c_uint64
c_size_t, c_void_p, c_char_p = ctypes.c_size_t, ctypes.c_void_p, ctypes.c_char_p

NAME_LEN, REASON_LEN = 128, 256
F32, F16, BF16, BOOL = 0, 1, 2, 3
CAUSAL_NONE, CAUSAL_BOTTOM_RIGHT, CAUSAL_TOP_LEFT = 0, 1, 2
RULE_OCP, RULE_CEIL = 0, 1
PLACEMENT_PNQ, PLACEMENT_DIRECT = 0, 1
QUANT_QK, QUANT_V, QUANT_P = 1, 2, 4
FORMAT_MXFP4, FORMAT_NVFP4 = 0, 1
RECIPE_MXATTENTION, RECIPE_OCP_DIRECT, RECIPE_FP32 = 0, 1, 2


class Tensor(ctypes.Structure):
    _fields_ = [("dtype", c_int), ("shape", c_int64 * 4), ("strides", c_int64 * 4), ("data", c_void_p),
                ("buffer", c_void_p), ("offset", c_size_t)]


class Rule(ctypes.Structure):
    _fields_ = [("kind", c_int), ("q", c_float)]


class AttentionDesc(ctypes.Structure):
    _fields_ = [("hadamard", c_int), ("rule", Rule), ("placement", c_int), ("quantize", c_uint32),
                ("scale", c_float), ("causal", c_int), ("bc", c_int), ("allow_non_finite", c_int),
                ("format", c_int), ("smooth", c_int),
                # the optional inputs (bias, mask: mxa_tensor *; key_lengths: int32 *; kv: mxa_kv *)
                ("bias", c_void_p), ("mask", c_void_p), ("key_lengths", c_void_p), ("kv", c_void_p),
                ("pv_format", c_int)]  # mxa_pv_format: 0 MXFP4, 1 MXFP8


class AttentionInfo(ctypes.Structure):
    _fields_ = [("bc", c_int), ("variant", ctypes.c_char * 48), ("kernel_seconds", c_double)]


class BackendInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 16), ("built", c_int), ("present", c_int), ("device_count", c_int),
                ("reason", ctypes.c_char * REASON_LEN)]


class DeviceInfo(ctypes.Structure):
    _fields_ = [("id", ctypes.c_char * 32), ("backend", ctypes.c_char * 16), ("index", c_int),
                ("name", ctypes.c_char * NAME_LEN), ("vendor", ctypes.c_char * 64),
                ("driver", ctypes.c_char * NAME_LEN), ("memory_bytes", c_uint64), ("compute_units", c_uint32),
                ("subgroup_min", c_uint32), ("subgroup_max", c_uint32), ("shared_memory_bytes", c_uint64),
                ("caps", c_uint32), ("capabilities", ctypes.c_char * REASON_LEN), ("variant", ctypes.c_char * 48),
                ("variant_reason", ctypes.c_char * REASON_LEN), ("default_bc", c_int), ("score", c_int),
                ("score_reason", ctypes.c_char * REASON_LEN)]


def _candidates():
    env = os.environ.get("MXA_LIBRARY")
    if env:
        yield env
        return  # an explicit choice is never second-guessed
    here = Path(__file__).resolve().parent
    yield from sorted(str(p) for p in here.glob("libmxa.so*"))
    repo = here.parents[3] if len(here.parents) > 3 else None  # src/mxa -> bindings/python -> repo
    if repo is not None and (repo / "include" / "mxa" / "mxa.h").exists():
        yield str(repo / "build" / "libmxa.so")
    found = ctypes.util.find_library("mxa")
    yield found or "libmxa.so.0"


def load():
    """Loads libmxa and declares its functions. Raises OSError naming every path tried."""
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path} (missing)")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
            continue
        _declare(lib)
        return lib, path
    raise OSError("mxa: cannot load libmxa.so; tried " + "; ".join(tried) +
                  ". Build mxa and set MXA_LIBRARY=/path/to/libmxa.so")


def _declare(lib):
    P = ctypes.POINTER
    sigs = {
        "mxa_status_string": (c_char_p, [c_int]),
        "mxa_last_error_message": (c_char_p, []),
        "mxa_version_string": (c_char_p, []),
        "mxa_tensor_init": (c_int, [P(Tensor), c_int, c_int64, c_int64, c_int64, c_int64, c_void_p]),
        "mxa_runtime_create": (c_int, [c_void_p, P(c_void_p)]),
        "mxa_runtime_destroy": (None, [c_void_p]),
        "mxa_backend_count": (c_int, [c_void_p, P(c_int)]),
        "mxa_backend_get_info": (c_int, [c_void_p, c_int, P(BackendInfo)]),
        "mxa_device_count": (c_int, [c_void_p, P(c_int)]),
        "mxa_device_get_info": (c_int, [c_void_p, c_int, P(DeviceInfo)]),
        "mxa_device_open": (c_int, [c_void_p, c_char_p, P(c_void_p)]),
        "mxa_device_close": (None, [c_void_p]),
        "mxa_device_info_of": (c_int, [c_void_p, P(DeviceInfo)]),
        "mxa_dtype_size": (c_size_t, [c_int]),
        "mxa_buffer_create": (c_int, [c_void_p, c_size_t, P(c_void_p)]),
        "mxa_buffer_destroy": (None, [c_void_p]),
        "mxa_buffer_upload": (c_int, [c_void_p, c_size_t, c_void_p, c_size_t]),
        "mxa_buffer_download": (c_int, [c_void_p, c_size_t, c_void_p, c_size_t]),
        "mxa_rule_parse": (c_int, [c_char_p, P(Rule)]),
        "mxa_quantize": (c_int, [c_void_p, P(Tensor), Rule, c_void_p, c_void_p]),
        "mxa_dequantize": (c_int, [c_void_p, c_void_p, c_int64, c_int64, c_void_p]),
        "mxa_attention_desc_init": (c_int, [P(AttentionDesc), c_int]),
        "mxa_attention": (c_int, [c_void_p, P(AttentionDesc), P(Tensor), P(Tensor), P(Tensor), P(Tensor),
                                  P(Tensor), P(AttentionInfo)]),
        "mxa_reference_attention": (c_int, [P(AttentionDesc), c_int, P(Tensor), P(Tensor), P(Tensor), P(Tensor),
                                            P(Tensor), c_void_p]),
    }
    # Only in a library built with the Vulkan backend (mxa_vulkan.h): CUDA interop.
    optional = {
        "mxa_vulkan_buffer_create_exportable": (c_int, [c_void_p, c_size_t, P(c_void_p)]),
        "mxa_vulkan_buffer_export_fd": (c_int, [c_void_p, P(c_int), P(c_uint64)]),
    }
    for name, (res, args) in list(sigs.items()) + list(optional.items()):
        fn = getattr(lib, name, None)
        if fn is None and name in optional:
            continue
        fn.restype = res
        fn.argtypes = args
