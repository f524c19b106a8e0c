"""PyTorch SDPA fp16 (cuDNN backend when available) at the benchmark shape, for the ratio in the OpenCL note.
Median of CUDA-event-timed calls after warm-up; effective TFLOP/s = 4 B H N N D / t."""
import sys
import torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend

B, H, N, D = (int(x) for x in (sys.argv[1] if len(sys.argv) > 1 else "1,40,16384,128").split(","))
q, k, v = (torch.randn(B, H, N, D, device="cuda", dtype=torch.float16) for _ in range(3))
for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
    try:
        with sdpa_kernel(backend):
            for _ in range(3):
                F.scaled_dot_product_attention(q, k, v)
            times = []
            for _ in range(10):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                F.scaled_dot_product_attention(q, k, v)
                e.record()
                torch.cuda.synchronize()
                times.append(s.elapsed_time(e) / 1e3)
        t = sorted(times)[len(times) // 2]
        print(f"sdpa {name} fp16 B={B} H={H} N={N} D={D}: median {t*1e3:.3f} ms, {4*B*H*N*N*D/t/1e12:.1f} TFLOP/s")
    except Exception as ex:  # a backend missing on this build: say so, try the next
        print(f"sdpa {name}: unavailable ({type(ex).__name__}: {str(ex)[:120]})")
