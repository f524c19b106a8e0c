"""Every recipe (and each quantizer alone) end to end: the embedding error 1 - cos(e, e_fp32)
of each text, and the fraction of the OCP-to-fp32 gap a configuration closes,

    closed = 1 - sum_i err_config(i) / sum_i err_ocp(i),

with a 95% interval from a paired bootstrap: the same resampled texts for every
configuration (2000 resamples, percentiles). For a quantizer alone, 1 - closed is the share
of OCP's whole error that this one quantizer leaves.

Embeddings are cached per configuration (OUTDIR/emb/<set>/<key>.npy, with the digest of
the texts they are of in OUTDIR/emb/<set>/texts.md5), so a run that was stopped, or a recipe that a later build adds, computes only what is missing;
MXA_STUDY_ONLY=key,key,... runs only those configurations (with fp32 and ocp).
"""
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

import mxa

# (key, label, recipe, switches), most important first: a run cut short still has them.
CONFIGS = [
    ("fp32", "fp32", "fp32", {}),
    ("ocp", "OCP MXFP4 (ocp-direct)", "ocp-direct", {}),
    ("mxattention", "MXAttention (H + UOS + PNQ)", "mxattention", {}),
    ("fp8pv", "mxattention-fp8pv (MXFP8 P, V)", "mxattention-fp8pv", {}),
    ("nvfp4", "NVFP4 (direct)", "nvfp4", {}),
    ("ocp_qk", "OCP, Q/K alone", "ocp-direct", {"quantize": "qk"}),
    ("ocp_v", "OCP, V alone", "ocp-direct", {"quantize": "v"}),
    ("ocp_p", "OCP, P alone", "ocp-direct", {"quantize": "p"}),
    ("mxa_qk", "MXAttention, Q/K alone", "mxattention", {"quantize": "qk"}),
    ("mxa_v", "MXAttention, V alone", "mxattention", {"quantize": "v"}),
    ("mxa_p", "MXAttention, P alone", "mxattention", {"quantize": "p"}),
    ("fp8pv_v", "fp8pv, V alone (MXFP8)", "mxattention-fp8pv", {"quantize": "v"}),
    ("fp8pv_p", "fp8pv, P alone (MXFP8)", "mxattention-fp8pv", {"quantize": "p"}),
    ("wo_uos", "w/o UOS (H + OCP + PNQ)", "wo-uos", {}),
    ("wo_pnq", "w/o PNQ (H + UOS, direct)", "mxattention", {"placement": "direct"}),
    ("wo_pnq_uos", "w/o PNQ and UOS (H + OCP, direct)", "wo-pnq-uos", {}),
    ("tfs", "TFS (H + TFS + PNQ)", "tfs", {}),
    ("nvfp4_smooth", "NVFP4 + smoothing (direct)", "nvfp4-smooth", {}),
]
# Pairs whose difference in gap closed gets its own paired interval.
COMPARISONS = [("fp8pv", "mxattention"), ("nvfp4", "mxattention"), ("fp8pv", "nvfp4"), ("mxattention", "wo_pnq")]
BC = 64  # the key tile (PNQ depends on it); the studies' MiniLM tables used 64 too
RESAMPLES = 2000


def device():
    """The mxa device of the attention calls: MXA_EXAMPLE_DEVICE, default the CPU;
    'reference' runs the library's reference implementation instead."""
    return os.environ.get("MXA_EXAMPLE_DEVICE", "cpu")


def attention_fn(recipe, switches, dev=None):
    """attention(q, k, v, bias=None) through the binding with `recipe` and `switches`."""
    dev = dev or device()
    where = {"reference": True} if dev == "reference" else {"device": dev}

    def attention(q, k, v, bias=None):
        return mxa.attention(q, k, v, recipe=recipe, bc=BC, bias=bias, **where, **switches)
    return attention


def embed_all(embed, texts, fn):
    return np.stack([embed(t, fn) for t in texts])


def texts_digest(texts):
    return hashlib.md5("\n".join(texts).encode()).hexdigest()


def _cache_of(folder, texts):
    """Makes `folder` the cache of `texts`: embeddings of other texts in it are removed."""
    folder.mkdir(parents=True, exist_ok=True)
    stamp, digest = folder / "texts.md5", texts_digest(texts)
    if stamp.exists() and stamp.read_text().strip() != digest:
        for old in folder.glob("*.npy"):
            old.unlink()
    stamp.write_text(digest + "\n")


def run(embed, sets, outdir, configs=CONFIGS, log=print):
    """Embeddings of every text set for every configuration. embed(text, attention) returns a
    unit vector. Returns {key: {set: array}}; a configuration the library or binding refuses
    (an unknown recipe, MXA_ERR_UNSUPPORTED) is left out and its reason put in
    {key: {"skipped": message}}."""
    outdir = Path(outdir)
    for name, texts in sets.items():
        _cache_of(outdir / "emb" / name, texts)
    out = {}
    for key, label, recipe, switches in configs:
        out[key] = {}
        for name, texts in sets.items():
            path = outdir / "emb" / name / f"{key}.npy"
            if path.exists():
                out[key][name] = np.load(path)
                continue
            t0 = time.time()
            try:
                e = embed_all(embed, texts, attention_fn(recipe, switches))
            except mxa.Error as err:
                out[key] = {"skipped": str(err)}
                log(f"{label:40s} skipped: {err}", flush=True)
                break
            path.parent.mkdir(parents=True, exist_ok=True)
            np.save(path, e)
            out[key][name] = e
            log(f"{label:40s} {name:10s} {len(texts)} texts, {time.time() - t0:.1f} s", flush=True)
    return out


def errors(embs, key, name):
    """1 - cos(e, e_fp32) per text, float64."""
    e, ref = embs[key][name].astype(np.float64), embs["fp32"][name].astype(np.float64)
    return 1.0 - np.sum(e * ref, axis=1) / (np.linalg.norm(e, axis=1) * np.linalg.norm(ref, axis=1))


def gap_closed(err, err_ocp, resamples=RESAMPLES, seed=0):
    """(closed, lo, hi): 1 - sum(err) / sum(err_ocp) and its paired-bootstrap 95% interval."""
    err, err_ocp = np.asarray(err, np.float64), np.asarray(err_ocp, np.float64)
    idx = np.random.default_rng(seed).integers(0, len(err), size=(resamples, len(err)))
    boot = 1.0 - err[idx].sum(axis=1) / err_ocp[idx].sum(axis=1)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return float(1.0 - err.sum() / err_ocp.sum()), float(lo), float(hi)


def closed_difference(err_a, err_b, err_ocp, resamples=RESAMPLES, seed=0):
    """(d, lo, hi): closed(a) - closed(b) = (sum err_b - sum err_a) / sum err_ocp, and its
    paired-bootstrap 95% interval (the resamples of gap_closed: same seed, same texts)."""
    err_a, err_b, err_ocp = (np.asarray(x, np.float64) for x in (err_a, err_b, err_ocp))
    idx = np.random.default_rng(seed).integers(0, len(err_a), size=(resamples, len(err_a)))
    boot = (err_b[idx].sum(axis=1) - err_a[idx].sum(axis=1)) / err_ocp[idx].sum(axis=1)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return float((err_b.sum() - err_a.sum()) / err_ocp.sum()), float(lo), float(hi)


def compare(embs, sets, pairs=COMPARISONS):
    """[(a, b, {set: (d, lo, hi)})] for the pairs whose both configurations ran."""
    ok = [(a, b) for a, b in pairs if a in embs and b in embs and "skipped" not in embs[a] and "skipped" not in embs[b]]
    return [(a, b, {n: closed_difference(errors(embs, a, n), errors(embs, b, n), errors(embs, "ocp", n)) for n in sets})
            for a, b in ok]


def summarize(embs, sets, configs=CONFIGS):
    """Per configuration and set: mean and max error, gap closed with its interval."""
    rows = []
    for key, label, recipe, switches in configs:
        row = {"key": key, "label": label, "recipe": recipe, "switches": switches}
        if "skipped" in embs.get(key, {}):
            row["skipped"] = embs[key]["skipped"]
        else:
            for name in sets:
                err = errors(embs, key, name)
                closed = gap_closed(err, errors(embs, "ocp", name)) if key != "fp32" else (None, None, None)
                row[name] = {"err_mean": float(err.mean()), "err_max": float(err.max()),
                             "cos_mean": float(1.0 - err.mean()), "closed": closed[0], "lo": closed[1], "hi": closed[2]}
        rows.append(row)
    return rows


def _pct(c):
    return "-" if c["closed"] is None else f"{100 * c['closed']:.1f}% [{100 * c['lo']:.1f}, {100 * c['hi']:.1f}]"


def table(rows, sets):
    """A markdown table: one row per configuration, two columns per text set."""
    head = "| configuration | " + " | ".join(f"{n}: 1 - cos (mean / max) | {n}: OCP gap closed [95%]" for n in sets) + " |"
    lines = [head, "|---|" + "---|---|" * len(sets)]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['label']} | " + " | ".join(["not run", "-"] * len(sets)) + " |")
            continue
        cells = []
        for n in sets:
            c = r[n]
            cells += [f"{c['err_mean']:.3e} / {c['err_max']:.3e}", _pct(c)]
        lines.append(f"| {r['label']} | " + " | ".join(cells) + " |")
    skipped = [f"{r['label']}: {r['skipped']}" for r in rows if "skipped" in r]
    return "\n".join(lines) + ("\n\nNot run: " + "; ".join(skipped) if skipped else "") + "\n"


def selected(configs=CONFIGS):
    """The configurations MXA_STUDY_ONLY names (comma-separated keys; fp32 and ocp always), or all."""
    only = os.environ.get("MXA_STUDY_ONLY", "")
    if not only:
        return configs
    keys = set(only.split(",")) | {"fp32", "ocp"}
    unknown = keys - {c[0] for c in configs}
    if unknown:
        raise SystemExit(f"MXA_STUDY_ONLY: unknown configuration(s) {', '.join(sorted(unknown))}")
    return [c for c in configs if c[0] in keys]


def study(model_name, embed, sets, outdir, meta, configs=None):
    """Runs, summarizes and writes OUTDIR/gap.json and OUTDIR/gap.md; returns the markdown."""
    configs = selected() if configs is None else configs
    outdir = Path(outdir)
    embs = run(embed, sets, outdir, configs)
    rows = summarize(embs, sets, configs)
    diffs = compare(embs, sets)
    doc = dict(meta, model=model_name, python=sys.version.split()[0], mxa=mxa.version(), attention=device(), bc=BC,
               resamples=RESAMPLES, sets={n: len(t) for n, t in sets.items()},
               texts_md5={n: texts_digest(t) for n, t in sets.items()}, rows=rows,
               differences=[{"a": a, "b": b, **{n: dict(zip(("d", "lo", "hi"), v)) for n, v in d.items()}}
                            for a, b, d in diffs])
    (outdir / "gap.json").write_text(json.dumps(doc, indent=1))
    label = {c[0]: c[1] for c in configs}
    lines = [f"- {label[a]} minus {label[b]}: " + "; ".join(
        f"{n} {100 * v[0]:+.1f} points [{100 * v[1]:+.1f}, {100 * v[2]:+.1f}]" for n, v in d.items()) for a, b, d in diffs]
    md = (f"{model_name}: " + ", ".join(f"{len(t)} {n}" for n, t in sets.items()) +
          f"; attention on {device()} (Bc {BC}), mxa {doc['mxa']}, Python {doc['python']}\n\n" + table(rows, sets) +
          ("\nDifferences in gap closed (paired 95% intervals):\n\n" + "\n".join(lines) + "\n" if lines else ""))
    (outdir / "gap.md").write_text(md)
    return md
