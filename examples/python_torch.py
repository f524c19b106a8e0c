#!/usr/bin/env python3
"""MXFP4 attention in PyTorch: mxa.torch's scaled_dot_product_attention as a drop-in, then
an unmodified model run through mxa with patch(). CUDA tensors stay on the GPU (mxa's
Vulkan backend on the same GPU); CPU tensors are read in place.

    pip install .            # at the repository root: builds libmxa into the package
    python3 examples/python_torch.py
Exits 77 (skipped) without torch."""
import sys

try:
    import torch
except ImportError:
    print("python_torch.py: torch is not installed (pip install torch)")
    sys.exit(77)
import torch.nn.functional as F

import mxa.torch

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)

# 1. The drop-in: torch's arguments and layout [B, H, N, D], MXAttention by default.
q, k, v = (torch.randn(1, 8, 512, 128, device=device, dtype=torch.float16) for _ in range(3))
exact = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)
out = mxa.torch.scaled_dot_product_attention(q, k, v, is_causal=True)                   # mxattention
ocp = mxa.torch.scaled_dot_product_attention(q, k, v, is_causal=True, recipe="ocp-direct")
out2, lse = mxa.torch.scaled_dot_product_attention(q, k, v, is_causal=True, return_lse=True)
info = mxa.torch.last_info()
rel = lambda a: ((a.float() - exact).norm() / exact.norm()).item()  # noqa: E731
print(f"drop-in on {device}: path {info['path']}, device {info['device']}, variant {info['variant']}")
print(f"  relative error vs fp32: mxattention {rel(out):.4f}, ocp-direct {rel(ocp):.4f}; lse {tuple(lse.shape)}")


# 2. patch(): an unmodified model's F.scaled_dot_product_attention runs through mxa.
class Block(torch.nn.Module):
    def __init__(self, dim=256, heads=2):
        super().__init__()
        self.heads, self.qkv, self.proj = heads, torch.nn.Linear(dim, 3 * dim), torch.nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        return self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, c))


model = Block().to(device).eval()
x = torch.randn(2, 256, 256, device=device)
with torch.no_grad():
    reference = model(x)
    calls = mxa.torch.last_info()["calls"]
    with mxa.torch.patch(recipe="mxattention"):   # or mxa.torch.patch() ... mxa.torch.unpatch()
        quantized = model(x)
print(f"patched model: {mxa.torch.last_info()['calls'] - calls} attention call(s) through mxa, "
      f"relative error {((quantized - reference).norm() / reference.norm()).item():.4f}")
