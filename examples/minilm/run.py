"""all-MiniLM-L6-v2 with its attention through mxa: the published-behaviour check, the
Q/K/V dumps for `mxa analyze`, and the end-to-end comparison of every recipe.

    python run.py check           numpy forward vs the published similarities, mxa fp32 vs numpy
    python run.py dump  OUTDIR    q/k/v of every layer for a fixed paragraph (.npy)
    python run.py eval  OUTDIR    embeddings for every recipe: cosine vs fp32, paraphrase retrieval
    python run.py sources QKVDIR  attention NMSE of each quantizer alone on the dumps
    python run.py gap OUTDIR [S [T [L]]]  S sentences (200) and T long texts (30, truncated at L tokens:
                                  256, the model's max_seq_length) for every recipe and each
                                  quantizer alone: 1 - cos vs fp32, OCP gap closed, paired 95% intervals
                                  (examples/study; attention on MXA_EXAMPLE_DEVICE, default cpu there)

Attention runs through the mxa binding's reference implementation (bc 64) unless
MXA_EXAMPLE_DEVICE names a device (e.g. cpu).
"""
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

import mxa
from minilm import MiniLM, numpy_attention

HERE = Path(__file__).resolve().parent
sys.path.append(str(HERE.parent))  # examples/: the shared study package
from study import gap, texts  # noqa: E402
DEVICE = os.environ.get("MXA_EXAMPLE_DEVICE", "")

# (label, recipe, switches): the paper's Tables 2-3 rows, TFS, and w/o PNQ alone.
RECIPES = [
    ("fp32", "fp32", {}),
    ("OCP MXFP4 (ocp-direct)", "ocp-direct", {}),
    ("MXAttention (H + UOS + PNQ)", "mxattention", {}),
    ("w/o UOS (H + OCP + PNQ)", "wo-uos", {}),
    ("w/o PNQ (H + UOS, direct)", "mxattention", {"placement": "direct"}),
    ("w/o PNQ and UOS (H + OCP, direct)", "wo-pnq-uos", {}),
    ("TFS (H + TFS + PNQ)", "tfs", {}),
    ("NVFP4 (direct)", "nvfp4", {}),
    ("NVFP4 + smoothing (direct)", "nvfp4-smooth", {}),
]

PUBLISHED = {  # sentence-transformers' usage page, all-MiniLM-L6-v2
    "sentences": ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."],
    "similarity": [[1.0, 0.6660, 0.1046], [0.6660, 1.0, 0.1411], [0.1046, 0.1411, 1.0]],
}

PARAGRAPH = (  # the text whose q/k/v are dumped (about 200 tokens)
    "The river flooded the fields after days of rain, and the farmers, already worried about a dry summer, "
    "watched the water rise over the young wheat. In the city the power went out during the thunderstorm; the "
    "hospital switched to its generators while the printer on the second floor, out of paper as usual, blinked "
    "in the dark. The mayor, who had opened the new swimming pool only a week earlier, promised that the new "
    "bridge would cut commute times in half and that ten thousand trees would be planted along the avenues. "
    "Meanwhile scientists announced a new species of frog from the rainforest, the museum stayed closed on "
    "Monday, and tickets for the final sold out within minutes, to nobody's surprise. At the bakery on the "
    "corner, where the croissants are still the best in town, people talked about little else."
)


def attention_fn(recipe, switches):
    if DEVICE:
        return lambda q, k, v: mxa.attention(q, k, v, recipe=recipe, device=DEVICE, bc=64, **switches)
    return lambda q, k, v: mxa.attention(q, k, v, recipe=recipe, reference=True, bc=64, **switches)


pairs = texts.pairs
docstring_sentences = texts.docstring_sentences


def check():
    m = MiniLM()
    emb = np.stack([m.forward(s, numpy_attention) for s in PUBLISHED["sentences"]])
    sim = emb @ emb.T
    diff = float(np.max(np.abs(sim - np.array(PUBLISHED["similarity"]))))
    print("published similarities (sentence-transformers):", PUBLISHED["similarity"])
    print("this numpy forward pass:                       ", np.round(sim.astype(np.float64), 4).tolist(), f"max diff {diff:.1e}")
    fp32 = np.stack([m.forward(s, attention_fn("fp32", {})) for s in PUBLISHED["sentences"]])
    cos = float(np.min(np.sum(fp32 * emb, axis=1)))
    print(f"mxa fp32 attention vs numpy float64 attention: min embedding cosine {cos:.8f}")
    ok = diff < 5e-4 and cos > 0.99999
    print("check:", "ok" if ok else "FAILED")
    return 0 if ok else 1


def dump(outdir):
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    m = MiniLM()
    layers = []
    m.forward(PARAGRAPH, numpy_attention, dump=layers)
    for i, (q, k, v) in enumerate(layers):
        for name, a in (("q", q), ("k", k), ("v", v)):
            np.save(outdir / f"{name}_l{i}.npy", a)
    print(f"dumped q/k/v of {len(layers)} layers, shape {layers[0][0].shape} (1, heads, tokens, head size), to {outdir}")
    return 0


def eval_all(outdir):
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    m = MiniLM()
    side_a, side_b = pairs()
    docs = docstring_sentences(240)
    sentences = side_a + side_b + docs
    paragraphs = [" ".join(docs[i:i + 8]) for i in range(0, len(docs), 8)]
    n_pairs = len(side_a)
    results, embs = [], {}
    for label, recipe, switches in RECIPES:
        t0 = time.time()
        fn = attention_fn(recipe, switches)
        e = np.stack([m.forward(s, fn) for s in sentences])
        embs[label] = e
        row = {"recipe": label}
        cos = np.sum(e * embs["fp32"], axis=1)
        row["cos_mean"], row["cos_min"] = float(cos.mean()), float(cos.min())
        # ranking: each pair sentence retrieves its partner among all other sentences
        sim = e @ e.T
        np.fill_diagonal(sim, -np.inf)
        partner = np.concatenate([np.arange(n_pairs, 2 * n_pairs), np.arange(n_pairs)])
        ranks = np.array([int(np.sum(sim[i] > sim[i, partner[i]])) + 1 for i in range(2 * n_pairs)])
        row["top1"] = float(np.mean(ranks == 1))
        row["mrr"] = float(np.mean(1.0 / ranks))
        # fidelity of the similarity structure: nearest neighbours and pairwise similarities vs fp32
        ref_sim = embs["fp32"] @ embs["fp32"].T
        np.fill_diagonal(ref_sim, -np.inf)
        row["nn_agree"] = float(np.mean(np.argmax(sim, axis=1) == np.argmax(ref_sim, axis=1)))
        iu = np.triu_indices(len(sentences), 1)
        row["sim_abs_err"] = float(np.mean(np.abs((e @ e.T)[iu] - (embs["fp32"] @ embs["fp32"].T)[iu])))
        # long inputs: paragraphs of 8 docstring sentences (about 100-200 tokens, several key tiles)
        pe = np.stack([m.forward(t, fn) for t in paragraphs])
        embs[label + " (paragraphs)"] = pe
        pc = np.sum(pe * embs["fp32 (paragraphs)"], axis=1)
        row["para_cos_mean"], row["para_cos_min"] = float(pc.mean()), float(pc.min())
        pub = np.stack([m.forward(s, fn) for s in PUBLISHED["sentences"]])
        ps = pub @ pub.T
        row["published_sims"] = [round(float(ps[0, 1]), 4), round(float(ps[0, 2]), 4), round(float(ps[1, 2]), 4)]
        results.append(row)
        row["seconds"] = round(time.time() - t0, 1)
        print(f"{label:36s} cos vs fp32 {row['cos_mean']:.6f} (min {row['cos_min']:.6f}), paragraphs "
              f"{row['para_cos_mean']:.6f}, top-1 {row['top1']:.4f}, NN agree {row['nn_agree']:.4f}, "
              f"|sim err| {row['sim_abs_err']:.5f} ({row['seconds']} s)", flush=True)
    by = {r["recipe"]: r for r in results}
    fp, ocp, full = by["fp32"], by["OCP MXFP4 (ocp-direct)"], by["MXAttention (H + UOS + PNQ)"]
    gap = {"embedding_error_gap_closed": 1.0 - (1.0 - full["cos_mean"]) / (1.0 - ocp["cos_mean"]),
           "paragraph_error_gap_closed": 1.0 - (1.0 - full["para_cos_mean"]) / (1.0 - ocp["para_cos_mean"]),
           "sim_error_gap_closed": 1.0 - full["sim_abs_err"] / ocp["sim_abs_err"]}
    for key in ("top1", "mrr", "nn_agree"):
        denom = fp[key] - ocp[key]
        gap[f"{key}_gap_closed"] = (full[key] - ocp[key]) / denom if denom != 0 else None
    doc = {"sentences": len(sentences), "pairs": n_pairs, "python": sys.version.split()[0], "mxa": mxa.version(),
           "attention": DEVICE or "mxa reference (bc 64)", "results": results, "gap": gap}
    (outdir / "results.json").write_text(json.dumps(doc, indent=1))
    doc["paragraphs"] = len(paragraphs)
    (outdir / "results.json").write_text(json.dumps(doc, indent=1))
    lines = [f"{len(sentences)} sentences ({n_pairs} paraphrase pairs + {len(docs)} stdlib docstring sentences) and "
             f"{len(paragraphs)} paragraphs of 8 of those sentences; Python {doc['python']}, mxa {doc['mxa']}, "
             f"attention: {doc['attention']}", "",
             "| recipe | sentence cos vs fp32 (mean / min) | paragraph cos vs fp32 (mean / min) | mean abs error of "
             "pairwise similarities | nearest neighbour = fp32's | paraphrase top-1 / MRR | published sims "
             "(0.6660 0.1046 0.1411) |", "|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['recipe']} | {r['cos_mean']:.6f} / {r['cos_min']:.6f} | {r['para_cos_mean']:.6f} / "
                     f"{r['para_cos_min']:.6f} | {r['sim_abs_err']:.5f} | {r['nn_agree']:.4f} | {r['top1']:.4f} / "
                     f"{r['mrr']:.4f} | {' '.join(f'{x:.4f}' for x in r['published_sims'])} |")

    def pct(x):
        return "no OCP gap to close" if x is None else f"{100 * x:.1f}%"
    g = gap
    lines += ["", "Fraction of the OCP-to-fp32 gap that MXAttention closes: sentence embedding error (1 - cos) "
              f"{pct(g['embedding_error_gap_closed'])}, paragraph embedding error {pct(g['paragraph_error_gap_closed'])}, "
              f"pairwise-similarity error {pct(g['sim_error_gap_closed'])}, nearest-neighbour agreement "
              f"{pct(g['nn_agree_gap_closed'])}, paraphrase top-1 {pct(g['top1_gap_closed'])}, MRR "
              f"{pct(g['mrr_gap_closed'])}."]
    (outdir / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def sources(outdir):
    """Where the attention error comes from on the dumped q/k/v: each quantizer alone."""
    outdir = Path(outdir)
    layers = sorted(outdir.glob("q_l*.npy"))
    cases = [("Q, K only", "qk"), ("V only", "v"), ("P only", "p"), ("all", "all")]
    lines = ["| quantized | OCP, direct | Hadamard + OCP | Hadamard + UOS | UOS + PNQ, no rotation | "
             "MXAttention (H + UOS + PNQ) |", "|---|---|---|---|---|---|"]
    for label, bits in cases:
        cols = []
        for recipe, sw in (("ocp-direct", {}), ("ocp-direct", {"hadamard": True}), ("ocp-direct", {"hadamard": True, "rule": "uos"}),
                           ("mxattention", {"hadamard": False}), ("mxattention", {})):
            err = num = 0.0
            for qp in layers:
                q, k, v = (np.load(qp.with_name(qp.name.replace("q_", n + "_"))) for n in "qkv")
                ref = mxa.attention(q, k, v, recipe="fp32", reference=True, bc=64)
                o = mxa.attention(q, k, v, recipe=recipe, reference=True, bc=64, quantize=bits, **sw)
                err += float(np.sum((o.astype(np.float64) - ref) ** 2))
                num += float(np.sum(ref.astype(np.float64) ** 2))
            cols.append(f"{err / num:.3e}")
        lines.append(f"| {label} | " + " | ".join(cols) + " |")
    text = ("Attention-output NMSE vs fp32, pooled over the layers in " + str(outdir) +
            ", one quantizer at a time (placement matters only when P is quantized)\n\n" + "\n".join(lines) + "\n")
    (outdir.parent / "sources.md").write_text(text)
    print(text)
    return 0


def run_gap(outdir, n_sentences=200, n_texts=30, max_tokens=256):
    """The texts of the MPNet study (examples/study/texts.py): 300-384 tokens counted by this
    model's tokenizer, which then truncates them at max_tokens: by default its max_seq_length,
    256, as sentence-transformers does; 384 keeps them whole (its position table has 512)."""
    m = MiniLM()
    m.tok.enable_truncation(max_length=max_tokens)
    sents, _ = texts.sentences(n_sentences)
    full = m.tok.__class__.from_str(m.tok.to_str())
    full.no_truncation()
    long = texts.long_texts(n_texts, lambda t: len(full.encode(t).ids))
    lengths = [len(m.tokens(t)[0]) for t in long]
    sets = {"sentences": sents, "long texts": long}
    meta = {"long_text_tokens": [min(lengths), max(lengths), float(np.mean(lengths))],
            "sentence_tokens_mean": float(np.mean([len(m.tokens(s)[0]) for s in sents]))}
    name = "all-MiniLM-L6-v2 (D = 32, 6 layers)" + (f", texts truncated at {max_tokens} tokens" if max_tokens != 256 else "")
    print(gap.study(name, lambda t, fn: m.forward(t, fn), sets, outdir, meta))
    return 0


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else "check"
    if cmd == "check":
        sys.exit(check())
    if cmd == "gap" and 3 <= len(sys.argv) <= 6:
        sys.exit(run_gap(sys.argv[2], *(int(x) for x in sys.argv[3:])))
    if cmd in ("dump", "eval", "sources") and len(sys.argv) == 3:
        sys.exit({"dump": dump, "eval": eval_all, "sources": sources}[cmd](sys.argv[2]))
    print(__doc__)
    sys.exit(2)
