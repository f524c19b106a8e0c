"""mxa.torch against torch's own scaled_dot_product_attention (recipe fp32: the same
function to 1e-5), the arguments torch takes, and patch() routing a model through mxa.
Skipped without torch unless MXA_TEST_REQUIRE_TORCH=1 (CI installs torch and sets it)."""
import collections
import contextlib
import ctypes
import mmap
import os

import numpy as np
import pytest

if os.environ.get("MXA_TEST_REQUIRE_TORCH") == "1":
    import torch
else:
    torch = pytest.importorskip("torch")
import torch.nn.functional as F

import mxa
import mxa.torch as mt

DEV = "cpu"


def qkv(seed, b=2, h=4, hkv=4, lq=48, lk=80, d=64, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    mk = lambda *s: torch.randn(*s, generator=g).to(dtype)  # noqa: E731
    return mk(b, h, lq, d), mk(b, hkv, lk, d), mk(b, hkv, lk, d)


def close(a, b, tol=1e-5):
    assert a.shape == b.shape and a.dtype == b.dtype
    assert (a.float() - b.float()).abs().max().item() < tol


def test_matches_torch_plain_causal_scale():
    q, k, v = qkv(1)
    close(mt.scaled_dot_product_attention(q, k, v, recipe="fp32", device=DEV), F.scaled_dot_product_attention(q, k, v))
    q, k, v = qkv(2, lq=80)  # torch's is_causal is top-left aligned; square here and below
    close(mt.scaled_dot_product_attention(q, k, v, is_causal=True, recipe="fp32", device=DEV),
          F.scaled_dot_product_attention(q, k, v, is_causal=True))
    q, k, v = qkv(3, lq=32, lk=96)  # Nq < Nk: top-left differs from bottom-right
    ours = mt.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.07, recipe="fp32", device=DEV)
    close(ours, F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.07))


def test_matches_torch_gqa():
    q, k, v = qkv(4, h=8, hkv=2)
    close(mt.scaled_dot_product_attention(q, k, v, enable_gqa=True, recipe="fp32", device=DEV),
          F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
    with pytest.raises(mxa.Error, match="enable_gqa"):
        mt.scaled_dot_product_attention(q, k, v, recipe="fp32", device=DEV)


@pytest.mark.parametrize("shape", [(2, 4, 48, 80), (2, 1, 48, 80), (1, 4, 48, 80), (48, 80), (2, 1, 1, 80), (1, 80)])
def test_matches_torch_bool_mask(shape):
    q, k, v = qkv(5)
    g = torch.Generator().manual_seed(6)
    mask = torch.rand(*shape, generator=g) > 0.3
    mask[..., 0] = True  # no fully masked row (torch gives NaN there, mxa 0)
    close(mt.scaled_dot_product_attention(q, k, v, attn_mask=mask, recipe="fp32", device=DEV),
          F.scaled_dot_product_attention(q, k, v, attn_mask=mask))


@pytest.mark.parametrize("shape", [(2, 4, 48, 80), (1, 4, 48, 80), (48, 80), (2, 1, 1, 80)])
def test_matches_torch_additive_mask(shape):
    q, k, v = qkv(7)
    g = torch.Generator().manual_seed(8)
    bias = torch.randn(*shape, generator=g)
    bias[..., 3] = float("-inf")
    close(mt.scaled_dot_product_attention(q, k, v, attn_mask=bias, recipe="fp32", device=DEV),
          F.scaled_dot_product_attention(q, k, v, attn_mask=bias))


def test_ranks_dtypes_lse_and_strided_inputs():
    q, k, v = qkv(9)
    # [B, N, H, D] storage seen as [B, H, N, D]: read in place through DLPack with its strides
    qs, ks, vs = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in (q, k, v))
    assert not qs.is_contiguous()
    close(mt.scaled_dot_product_attention(qs, ks, vs, recipe="fp32", device=DEV), F.scaled_dot_product_attention(q, k, v))
    close(mt.scaled_dot_product_attention(q[0], k[0], v[0], recipe="fp32", device=DEV),
          F.scaled_dot_product_attention(q[0], k[0], v[0]))
    q5, k5, v5 = (t.reshape(2, 1, *t.shape[1:]).expand(2, 3, *t.shape[1:]).contiguous() for t in (q, k, v))
    close(mt.scaled_dot_product_attention(q5, k5, v5, recipe="fp32", device=DEV), F.scaled_dot_product_attention(q5, k5, v5))
    for dtype, tol in ((torch.float16, 2e-3), (torch.bfloat16, 2e-2), (torch.float64, 1e-5)):
        a, b, c = (t.to(dtype) for t in (q, k, v))
        close(mt.scaled_dot_product_attention(a, b, c, recipe="fp32", device=DEV), F.scaled_dot_product_attention(a, b, c), tol)
    out, lse = mt.scaled_dot_product_attention(q, k, v, recipe="fp32", device=DEV, return_lse=True)
    s = (q @ k.transpose(-1, -2)) / 8.0
    close(lse, torch.logsumexp(s, dim=-1), 1e-4)


def test_recipes_and_switches_are_mxas():
    q, k, v = qkv(10, h=2, hkv=2)
    ours = mt.scaled_dot_product_attention(q, k, v, device=DEV)  # default: mxattention
    direct = mxa.attention(q.numpy(), k.numpy(), v.numpy(), recipe="mxattention", device=DEV)
    assert np.array_equal(ours.numpy(), direct)
    ocp = mt.scaled_dot_product_attention(q, k, v, recipe="mxattention", rule="ocp", device=DEV)
    assert np.array_equal(ocp.numpy(), mxa.attention(q.numpy(), k.numpy(), v.numpy(), rule="ocp", device=DEV))
    assert mt.last_info()["path"] == "host" and mt.last_info()["device"] == DEV


def test_torch_cpu_tensors_against_the_c_reference():
    """MXAttention on torch CPU tensors (read in place) against the library's reference at the
    same Bc: torch's top-left causal and GQA reach the C code as they should."""
    q, k, v = qkv(12, h=4, hkv=2, lq=64, lk=96)
    ours = mt.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True, device=DEV, bc=64)
    ref = mxa.attention(q.numpy(), k.numpy(), v.numpy(), causal="top-left", reference=True, bc=64)
    err = float(((ours.numpy() - ref) ** 2).sum() / (ref ** 2).sum())
    assert err < 1e-10
    wrong = mxa.attention(q.numpy(), k.numpy(), v.numpy(), causal="bottom-right", reference=True, bc=64)
    assert float(((ours.numpy() - wrong) ** 2).sum() / (wrong ** 2).sum()) > 1e-4


def test_what_mxa_does_not_do_is_a_clear_error():
    q, k, v = qkv(11)
    with pytest.raises(mxa.Error, match="dropout"):
        mt.scaled_dot_product_attention(q, k, v, dropout_p=0.1)
    with pytest.raises(mxa.Error, match="is_causal"):
        mt.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(48, 80, dtype=torch.bool), is_causal=True)
    with pytest.raises(mxa.Error, match="broadcast"):
        mt.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(3, 48, 80, dtype=torch.bool))
    with pytest.raises(mxa.Error, match="bool"):
        mt.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(48, 80, dtype=torch.int32))
    with pytest.raises(mxa.Error, match="head size"):
        mt.scaled_dot_product_attention(q, k, v[..., :32])
    with pytest.raises(mxa.Error, match="backward"):
        mt.scaled_dot_product_attention(q.requires_grad_(), k, v)


class TinyAttention(torch.nn.Module):
    """A MultiheadAttention-style block: projections, F.scaled_dot_product_attention, output."""

    def __init__(self, dim=128, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.out = torch.nn.Linear(dim, dim)

    def forward(self, x, causal=False):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return self.out(y.transpose(1, 2).reshape(b, n, c))


def test_patch_routes_a_model_through_mxa():
    torch.manual_seed(0)
    model = TinyAttention().eval()
    x = torch.randn(2, 64, 128)
    with torch.no_grad():
        plain = model(x, causal=True)
        calls = mt.last_info()["calls"]
        with mt.patch(recipe="fp32", device=DEV):
            assert getattr(F.scaled_dot_product_attention, "_mxa_patch", False)
            same = model(x, causal=True)
        assert mt.last_info()["calls"] == calls + 1
        assert F.scaled_dot_product_attention is mt._original_sdpa
        close(same, plain)
        mt.patch(device=DEV)  # mxattention: MXFP4 attention in the unmodified model
        try:
            quantized = model(x)
            mha = torch.nn.MultiheadAttention(128, 2, batch_first=True).eval()
            mha_calls = mt.last_info()["calls"]
            mha(x, x, x, need_weights=False)
            mha_routed = mt.last_info()["calls"] - mha_calls
        finally:
            mt.unpatch()
        assert mt.last_info()["calls"] == calls + 1 + 1 + mha_routed
        err = ((quantized - model(x)).norm() / model(x).norm()).item()
        assert 0 < err < 0.2


# ------------------------------------------------- the CUDA path, on lavapipe

class MemfdImport:
    """What CUDA does in mxa._torch_cuda, on lavapipe: its exported Vulkan memory is a memfd
    (the bytes after a header of `offset` bytes), so mapping it shows the CPU the very bytes
    mxa's kernels read and write."""

    def __init__(self, name, offset):
        self.device_name, self.offset, self.unmapped, self.syncs = name, offset, 0, 0

    def map(self, fd, allocation_size, nbytes, device):
        mm = mmap.mmap(fd, 0)
        os.close(fd)
        return torch.frombuffer(mm, dtype=torch.uint8, count=nbytes, offset=self.offset), mm

    def unmap(self, mapping):
        self.unmapped += 1  # the mmap goes with the last tensor over it

    def on(self, device):
        return contextlib.nullcontext()

    def synchronize(self, device, everything=False):
        self.syncs += 1

    def index(self, device):
        return 0

    def name(self, device):
        return self.device_name


@pytest.fixture
def lavapipe_import(monkeypatch):
    from mxa import _torch_cuda
    vk = [d for d in mxa.devices() if d["backend"] == "vulkan"]
    if not vk or not hasattr(mxa._lib, "mxa_vulkan_buffer_export_fd"):
        pytest.skip("no Vulkan device")
    probe = mxa.Buffer(vk[0]["id"], 256, exportable=True)
    pattern = np.random.default_rng(1).integers(0, 256, 256, dtype=np.uint8)
    mxa._check(mxa._lib.mxa_buffer_upload(probe.handle, 0, pattern.ctypes.data_as(ctypes.c_void_p), 256), "upload")
    fd, alloc = ctypes.c_int(-1), ctypes.c_uint64(0)
    mxa._check(mxa._lib.mxa_vulkan_buffer_export_fd(probe.handle, ctypes.byref(fd), ctypes.byref(alloc)), "export")
    kind = os.readlink(f"/proc/self/fd/{fd.value}")
    with open(fd.value, "rb") as f:  # closes the fd
        offset = f.read().find(pattern.tobytes()) if "memfd" in kind else -1
    probe.release()
    if offset < 0:
        pytest.skip(f"{vk[0]['name']} exports {kind}: not host memory that shows the buffer")
    importer = MemfdImport(vk[0]["name"], offset)
    monkeypatch.setattr(_torch_cuda, "_importer", importer)
    monkeypatch.setattr(_torch_cuda, "_matched", {})
    monkeypatch.setattr(_torch_cuda, "_slots", collections.OrderedDict())
    return _torch_cuda, importer, vk[0]["id"]


def test_the_cuda_path_on_exported_memory(lavapipe_import):
    """The CUDA path's own code (export, the per-shape buffers, copies in and out, device
    matching, eviction) with the memory seen through lavapipe's memfd instead of CUDA: the
    outputs are the host path's on the same device, bit for bit."""
    tc, importer, vk = lavapipe_import
    assert tc.vulkan_device_for("cpu") == vk  # the round trip through the exported memory
    q, k, v = qkv(13, b=1, h=4, hkv=2, lq=64, lk=96)
    g = torch.Generator().manual_seed(14)
    mask = (torch.rand(1, 1, 64, 96, generator=g) > 0.3) | (torch.arange(96) == 0)
    bias = torch.randn(1, 4, 64, 96, generator=g)
    cases = [({}, {}), ({"causal": "top-left"}, {"causal": "top-left"}), ({"mask": mask}, {"mask": mask.numpy()}),
             ({"bias": bias}, {"bias": bias.numpy()})]
    for extra, host_extra in cases:
        for dtype in (torch.float32, torch.float16):
            a, b, c = (t.to(dtype) for t in (q, k, v))
            out, lse, info = tc.attention(a, b, c, extra.get("mask"), extra.get("bias"), extra.get("causal", False),
                                          None, "mxattention", None, True, {})
            ref, ref_lse = mxa.attention(a.numpy(), b.numpy(), c.numpy(), device=vk, lse=True, **host_extra)
            assert out.dtype == dtype and info["device"] == vk
            assert torch.equal(out, torch.from_numpy(ref).to(dtype)), (extra.keys(), dtype)
            assert torch.equal(lse, torch.from_numpy(ref_lse))
    tc.attention(q, k, v, None, None, False, None, "mxattention", None, True, {})
    kept = {key: {n: id(e) for n, e in s.items()} for key, s in tc._slots.items()}
    syncs = importer.syncs
    tc.attention(q, k, v, None, None, False, None, "mxattention", None, True, {})
    assert {key: {n: id(e) for n, e in s.items()} for key, s in tc._slots.items()} == kept  # nothing allocated
    assert importer.syncs == syncs + 1  # one stream sync per call, before mxa reads
    before = importer.unmapped
    for n in (32, 33, 34, 35):  # more shapes than the cache keeps: the oldest are freed
        tc.attention(q[..., :n, :], k, v, None, None, False, None, "fp32", None, False, {})
    assert len(tc._slots) == tc._CACHE_SHAPES and importer.unmapped > before
