"""PyTorch scaled_dot_product_attention fp16 on the GPU machine: the side-by-side
baseline for the Vulkan and OpenCL benchmarks (run in the same command).

    python3 tests/gpu/sdpa_baseline.py B,H,N,D[,causal] ...     (default 1,40,16384,128,0)

For each shape and each of the cuDNN and flash backends: the median of CUDA-event-timed
calls after warm-up, and effective TFLOP/s = 4 B H N^2 D / t (halved when causal).
"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def median_seconds(fn, iters=20, warmup=3):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    return sorted(times)[len(times) // 2]


def bench(b, h, n, d, causal):
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16) for _ in range(3))
    flops = 4.0 * b * h * n * n * d * (0.5 if causal else 1.0)
    for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        try:
            with sdpa_kernel(backend):
                t = median_seconds(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
        except Exception as ex:  # a backend missing from this PyTorch build: say so, try the next
            print(f"sdpa {name}: unavailable ({type(ex).__name__}: {str(ex)[:120]})", flush=True)
            continue
        print(f"sdpa {name} fp16 B={b} H={h} N={n} D={d} {'causal' if causal else 'non-causal'}: "
              f"{t * 1e3:.3f} ms ({flops / t * 1e-12:.1f} TFLOP/s)", flush=True)


for spec in sys.argv[1:] or ["1,40,16384,128,0"]:
    b, h, n, d, *causal = spec.split(",")
    bench(int(b), int(h), int(n), int(d), bool(causal) and causal[0] == "1")
