"""all-mpnet-base-v2 with its attention through mxa: the behaviour check and the end-to-end
comparison of every recipe (and each quantizer alone) on sentences and long texts.

    python run.py check                 numpy forward: paraphrases rank first; mxa fp32 vs numpy attention
    python run.py gap OUTDIR [S [T]]    S sentences (200) and T texts of 300-384 tokens (30):
                                        1 - cos vs fp32 and the OCP gap closed, paired 95% intervals

The relative-position bias goes to mxa as the attention bias input ([1, 12, N, N], added to
the scaled scores). Attention runs on MXA_EXAMPLE_DEVICE (default cpu; 'reference' for the
library's reference implementation), Bc 64.
"""
import sys
from pathlib import Path

import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[1]))  # examples/: the shared study package
from mpnet import MPNet, numpy_attention  # noqa: E402
from study import gap, texts  # noqa: E402

SIMILAR = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]


def token_counter(m):
    tok = m.tok.__class__.from_str(m.tok.to_str())  # a copy without the 384-token truncation
    tok.no_truncation()
    return lambda t: len(tok.encode(t).ids)


def check():
    m = MPNet()
    emb = np.stack([m.forward(s, numpy_attention) for s in SIMILAR])
    sim = emb @ emb.T
    print("similarities of", SIMILAR, ":", np.round(sim[0, 1], 4), np.round(sim[0, 2], 4), np.round(sim[1, 2], 4))
    a, b = texts.pairs()
    ea = np.stack([m.forward(s, numpy_attention) for s in a])
    eb = np.stack([m.forward(s, numpy_attention) for s in b])
    top1 = float(np.mean(np.argmax(ea @ eb.T, axis=1) == np.arange(len(a))))
    print(f"paraphrase retrieval (each of {len(a)} sentences finds its partner among the other side's): top-1 {top1:.4f}")
    fp32 = np.stack([m.forward(s, gap.attention_fn("fp32", {})) for s in SIMILAR + a[:5]])
    cos = float(np.min(np.sum(fp32 * np.concatenate([emb, ea[:5]]), axis=1)))
    print(f"mxa fp32 attention (with the bias input) vs numpy float64 attention: min embedding cosine {cos:.8f}")
    ok = sim[0, 1] > sim[0, 2] + 0.3 and sim[0, 1] > sim[1, 2] + 0.3 and top1 >= 0.95 and cos > 0.99999
    print("check:", "ok" if ok else "FAILED")
    return 0 if ok else 1


def run_gap(outdir, n_sentences=200, n_texts=30):
    m = MPNet()
    sents, _ = texts.sentences(n_sentences)
    count = token_counter(m)
    long = texts.long_texts(n_texts, count)
    lengths = [len(m.tokens(t)) for t in long]
    sets = {"sentences": sents, "long texts": long}
    meta = {"long_text_tokens": [min(lengths), max(lengths), float(np.mean(lengths))],
            "sentence_tokens_mean": float(np.mean([len(m.tokens(s)) for s in sents]))}
    print(gap.study("all-mpnet-base-v2 (D = 64, 12 layers)", m.forward, sets, outdir, meta))
    return 0


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else "check"
    if cmd == "check":
        sys.exit(check())
    if cmd == "gap" and 3 <= len(sys.argv) <= 5:
        sys.exit(run_gap(sys.argv[2], *(int(x) for x in sys.argv[3:])))
    print(__doc__)
    sys.exit(2)
