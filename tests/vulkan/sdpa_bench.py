# cuDNN fp16 scaled_dot_product_attention on the shapes of vk_bench, timed with CUDA
# events (median after warm-up), for the side-by-side ratio in the Vulkan report.
import sys
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

def bench(b, h, n, d, causal, iters=20):
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16) for _ in range(3))
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        for _ in range(3):
            torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        times = []
        for _ in range(iters):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e) * 1e-3)
    t = sorted(times)[len(times) // 2]
    flops = 4.0 * b * h * n * n * d * (0.5 if causal else 1.0)
    print(f"sdpa cudnn fp16 B={b} H={h} N={n} D={d} {'causal' if causal else 'non-causal'}: "
          f"{t * 1e3:.3f} ms ({flops / t * 1e-12:.1f} TFLOP/s)", flush=True)

for spec in sys.argv[1:]:
    b, h, n, d, c = spec.split(",")
    bench(int(b), int(h), int(n), int(d), c == "1")
