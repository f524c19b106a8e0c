#!/usr/bin/env python3
"""mxa.torch on CUDA tensors (exported Vulkan memory imported into CUDA) on an NVIDIA GPU:
the outputs against the host path on the same Vulkan device (they must be identical), and
the time per call of the CUDA path against the kernel's own time and the host path's.

    MXA_LIBRARY=$PWD/build/libmxa.so python3 tests/gpu/torch_cuda_check.py [--n 16384] [--reps 10]

The library comes from MXA_LIBRARY, else the installed package (pip install .), else a
checkout's build/ (the binding's source is put on sys.path when mxa is not installed). Needs
PyTorch with CUDA and a libmxa built with the Vulkan backend. Plain lines on stdout; exit 1
when an output differs or the CUDA path did not run."""
import argparse
import os
import statistics
import sys
import time

import torch

try:
    import mxa
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bindings", "python", "src"))
    import mxa
import mxa.torch as mt
from mxa import _torch_cuda


def inputs(b, h, hkv, n, d, dtype, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    mk = lambda heads: torch.randn(b, heads, n, d, generator=g, device="cuda").to(dtype)  # noqa: E731
    return mk(h), mk(hkv), mk(hkv)


def check_identical(vk, name, q, k, v, **kw):
    """The CUDA path vs the numpy path (host arrays, the same Vulkan device): identical."""
    out = mt.scaled_dot_product_attention(q, k, v, **kw)
    path = mt.last_info()["path"]
    kw.pop("enable_gqa", None)  # mxa.attention does GQA whenever Hkv divides H
    causal = "top-left" if kw.pop("is_causal", False) else False
    mask = kw.pop("attn_mask", None)
    host = [t.cpu().numpy() for t in (q, k, v)]
    ref = mxa.attention(*host, device=vk, causal=causal, mask=None if mask is None else mask.cpu().numpy(), **kw)
    ref = torch.from_numpy(ref).to(q.dtype)
    diff = (out.cpu().float() - ref.float()).abs().max().item()
    same = path == "cuda" and torch.equal(out.cpu(), ref)
    print(f"{name:<34} path {path:<5} max abs diff vs numpy path {diff:.3e}  {'identical' if same else 'DIFFERENT'}")
    return same


def cuda_events_ms(fn, reps, warmup=2):
    for _ in range(warmup):
        fn()
    times, kernel = [], []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
        kernel.append(mt.last_info().get("kernel_seconds", -1) * 1e3)
    return statistics.median(times), statistics.median(kernel), times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--heads", type=int, default=40)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--host-reps", type=int, default=3)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print(f"FAIL: torch {torch.__version__} sees no CUDA device")
        return 1
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, GPU {torch.cuda.get_device_name(0)}")
    print(f"mxa {mxa.version()} from {mxa.library_path()}")
    try:
        vk = _torch_cuda.vulkan_device_for(torch.device("cuda", 0))
    except _torch_cuda.Unavailable as e:
        print(f"FAIL: the CUDA path is unavailable: {e}")
        return 1
    info = mxa._core.device_info(vk)
    print(f"matched: cuda:0 <-> {vk} ({mxa._core.text(info.name)}, variant {mxa._core.text(info.variant)}) "
          f"by an exported-memory round trip")
    ok = True
    torch.manual_seed(0)
    q, k, v = inputs(2, 8, 8, 1024, 128, torch.float32, 1)
    ok &= check_identical(vk, "mxattention B2 H8 N1024 D128", q, k, v)
    ok &= check_identical(vk, "  is_causal (top-left)", q, k, v, is_causal=True)
    q2, k2, v2 = inputs(2, 8, 2, 1024, 128, torch.float32, 2)
    ok &= check_identical(vk, "  GQA H8 / Hkv2", q2, k2, v2, enable_gqa=True)
    mask = torch.rand(2, 1, 1024, 1024, device="cuda") > 0.2
    ok &= check_identical(vk, "  bool attn_mask [B,1,N,N]", q, k, v, attn_mask=mask)
    ok &= check_identical(vk, "  float16 in and out", q.half(), k.half(), v.half())
    ok &= check_identical(vk, "  fp32 recipe", q, k, v, recipe="fp32")
    # the drop-in against torch's own SDPA (fp32 recipe: the same function)
    ours = mt.scaled_dot_product_attention(q, k, v, recipe="fp32")
    theirs = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    print(f"fp32 recipe vs torch SDPA on cuda: max abs diff {(ours - theirs).abs().max().item():.3e}")

    h, n, d = args.heads, args.n, 128
    flops = 4.0 * h * n * n * d
    print(f"\ntiming B1 H{h} N{n} D{d} mxattention, float16 inputs already on the GPU, median of {args.reps}")
    q, k, v = inputs(1, h, h, n, d, torch.float16, 3)

    def cuda_call():
        return mt.scaled_dot_product_attention(q, k, v)

    cuda_call()
    slots_before = {key: {n: id(e) for n, e in s.items()} for key, s in _torch_cuda._slots.items()}
    e2e, kernel, times = cuda_events_ms(cuda_call, args.reps)
    assert mt.last_info()["path"] == "cuda", mt.last_info()
    slots_after = {key: {n: id(e) for n, e in s.items()} for key, s in _torch_cuda._slots.items()}
    print(f"cuda path end to end (CUDA events)  {e2e:.3f} ms  ({flops / e2e / 1e9:.1f} TFLOP/s)  "
          f"all: {' '.join(f'{t:.2f}' for t in times)}")
    print(f"kernel (mxa_attention_info.kernel_seconds, Vulkan timestamps)  {kernel:.3f} ms  "
          f"({flops / kernel / 1e9:.1f} TFLOP/s), variant {mt.last_info()['variant']}")
    print(f"end to end / kernel                  {e2e / kernel:.3f}x  (target <= 1.15x)")
    print(f"exported buffers reused across calls: {'yes' if slots_before == slots_after else 'NO'} "
          f"({len(slots_after)} shape(s) cached)")
    ok &= slots_before == slots_after

    def host_call():  # what a CUDA tensor took before: to the host, mxa on host arrays, back
        qh, kh, vh = (t.cpu() for t in (q, k, v))
        o = mxa.attention(qh, kh, vh, device=vk)
        return torch.from_numpy(o).to("cuda", torch.float16)

    hst, _, htimes = cuda_events_ms(host_call, args.host_reps, warmup=1)
    qh, kh, vh = (t.cpu().numpy() for t in (q, k, v))
    wall = []
    for _ in range(args.host_reps):
        t0 = time.perf_counter()
        mxa.attention(qh, kh, vh, device=vk)
        wall.append((time.perf_counter() - t0) * 1e3)
    print(f"host path from cuda tensors (to host, numpy call, back; CUDA events)  {hst:.3f} ms  "
          f"= {hst / e2e:.2f}x the cuda path")
    print(f"numpy call alone (host arrays, uploads + read-back; wall)  {statistics.median(wall):.3f} ms")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
