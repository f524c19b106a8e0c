"""python -m mxa probe [--json] | demo [--device ID]: the CLI's first two commands.

probe: the library loaded, every backend (present or absent, and why), every device with
its capabilities, the kernel variant it would run and why, and the device "auto" opens.
demo: seeded attention-like data (B=1 H=4 N=512 D=128, K with outlier channels) through
the fp32, ocp-direct and mxattention recipes on a device: accuracy against fp32, the row
sums of the attention weights (PNQ makes them exactly 1) and time.
Exit status: 0, 1 (probe: no device; a failure), 2 (a usage mistake)."""
import argparse
import json
import sys
import time

import numpy as np

import mxa


def probe(as_json):
    backends, devices = mxa.backends(), mxa.devices()
    try:
        auto = mxa._core.device("auto")[1]
    except mxa.Error:
        auto = None
    if as_json:
        print(json.dumps({"version": mxa.version(), "library": mxa.library_path(), "auto": auto,
                          "backends": backends, "devices": devices}, indent=2))
        return 0 if devices else 1
    print(f"mxa {mxa.version()} ({mxa.library_path()})\n\nbackends:")
    for b in backends:
        state = "present" if b["present"] else "absent "
        why = b["reason"] or (f"{b['device_count']} device(s)" if b["present"] else "no device")
        print(f"  {b['name']:<8} {state}  {'' if b['built'] else 'not built: '}{why}")
    print(f"\ndevices:{'' if devices else ' none'}")
    for d in devices:
        print(f"  {d['id']}: {d['name']}{'   <- auto' if d['id'] == auto else ''}")
        print(f"    {'vendor':<16} {d['vendor']}\n    {'driver':<16} {d['driver']}")
        print(f"    {'capabilities':<16} {d['capabilities'] or '(none)'}")
        print(f"    {'variant':<16} {d['variant']} (Bc {d['default_bc']}, score {d['score']})")
        print(f"    {'why':<16} {d['variant_reason']}")
    print(f"\n  auto -> {auto or '(none)'}")
    return 0 if devices else 1


def demo_data(b=1, h=4, n=512, d=128, seed=20250101):
    """q and k share a direction (logits with a spread like trained models'); k carries
    +-12 outlier channels (what the Hadamard rotation spreads out); v is unit noise around
    a per-channel mean."""
    rng = np.random.default_rng(seed)
    direction, mean = rng.standard_normal(d), rng.standard_normal(d)
    outlier = np.where(np.arange(d) % 16 == 5, np.where(rng.standard_normal(d) > 0, 12.0, -12.0), 0.0)
    sq = 1.0 + 0.3 * rng.standard_normal((b, h, n, 1))
    sk = 0.3 + 0.2 * rng.standard_normal((b, h, n, 1))
    q = rng.standard_normal((b, h, n, d)) + sq * direction
    k = rng.standard_normal((b, h, n, d)) + sk * direction + outlier
    v = mean + rng.standard_normal((b, h, n, d))
    return (x.astype(np.float32) for x in (q, k, v))


def demo(device):
    q, k, v = demo_data()
    rows = []
    for recipe in ("fp32", "ocp-direct", "mxattention"):
        t0 = time.perf_counter()
        o, info = mxa.attention(q, k, v, recipe=recipe, device=device, info=True)
        seconds = time.perf_counter() - t0
        ref = o if recipe == "fp32" else rows[0][1]
        err = o.astype(np.float64) - ref
        nmse = float(np.sum(err ** 2) / np.sum(ref.astype(np.float64) ** 2))
        cos = float(np.sum(o * ref) / (np.linalg.norm(o) * np.linalg.norm(ref)))
        if recipe == "fp32":
            sums, placed = np.ones(1), "-"
        else:  # the reference at the device's Bc, each recipe at its own placement
            _, sums = mxa.attention(q, k, v, recipe=recipe, reference=True, bc=info["bc"], row_sums=True)
            placed = "pnq" if recipe == "mxattention" else "direct"
        rows.append((recipe, o, nmse, cos, float(np.max(np.abs(err))), placed, sums, seconds, info))
    info = rows[2][8]
    print(f"mxa demo: seeded attention-like data, B=1 H=4 N=512 D=128\n"
          f"device:   {info['device']}, kernel variant {info['variant']}, Bc {info['bc']}\n")
    print(f"{'recipe':<12} {'NMSE':<10} {'cosine':<9} {'max err':<10} {'P placed':<8} "
          f"{'row sums: mean [min, max]':<32} time")
    for recipe, _, nmse, cos, mx, placed, s, seconds, _ in rows:
        sums = f"{s.mean():.6f} [{s.min():.6f}, {s.max():.6f}]"
        print(f"{recipe:<12} {nmse:<10.3e} {cos:<9.6f} {mx:<10.3e} {placed:<8} {sums:<32} {seconds:.3f} s")
    print("\nNMSE, cosine and max error are against fp32. PNQ normalizes by the row sums of the quantized\n"
          "weights, so they are exactly 1; direct placement normalizes by the unquantized sum, so they drift.")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m mxa", description="mxa from Python: probe devices, run the demo")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("probe", help="backends, devices, the kernel each would run and why")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    d = sub.add_parser("demo", help="the three recipes on seeded attention-like data")
    d.add_argument("--device", default="auto", help="auto (default), cpu, vulkan:0, opencl:0, hip:0")
    args = ap.parse_args(argv)
    try:
        return probe(args.json) if args.command == "probe" else demo(args.device)
    except mxa.Error as e:
        print(f"mxa: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
