"""Tests of the model studies (examples/minilm, examples/mpnet, examples/study) that need no
weights: both forward passes on small random weights, their attention through the binding
and MXA_LIBRARY, against float64 numpy attention; MPNet's position buckets; the gap
arithmetic and the cache of study runs; the long-text builder.

    MXA_LIBRARY=build/libmxa.so python3 examples/study/test_studies.py     (ctest: example_studies)

Needs numpy; when the interpreter it was started with has none, it runs itself again with
Debian's /usr/bin/python3 (python3-numpy, scripts/deps.sh).
"""
import os
import sys
from pathlib import Path

try:
    import numpy as np
except ImportError:
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    raise

import tempfile
import unittest

EXAMPLES = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(EXAMPLES.parent / "bindings" / "python" / "src"), str(EXAMPLES), str(EXAMPLES / "minilm"),
                str(EXAMPLES / "mpnet")]

import mxa  # noqa: E402
from minilm import MiniLM  # noqa: E402
from minilm import numpy_attention as bert_numpy_attention  # noqa: E402
from mpnet import MPNet, numpy_attention, relative_buckets  # noqa: E402
from study import gap, texts  # noqa: E402


class Encoding:
    def __init__(self, ids):
        self.ids, self.type_ids = ids, [0] * len(ids)


class WordTokenizer:
    """Each word a token id (its length), between the two special tokens 0 and 2."""

    def encode(self, text):
        return Encoding([0] + [3 + len(w) % 20 for w in text.split()] + [2])


def random_weights(rng, hidden, heads, layers, names, extra):
    w = {}
    for i in range(layers):
        for name, shape in names(hidden).items():
            w[f"encoder.layer.{i}.{name}"] = rng.standard_normal(shape).astype(np.float32) * (
                1.0 if name.endswith("LayerNorm.weight") else 0.3)
    for name, shape in extra(hidden, heads).items():
        w[name] = rng.standard_normal(shape).astype(np.float32)
    return w


def mpnet_names(h):
    return {"attention.attn.q.weight": (h, h), "attention.attn.q.bias": (h,), "attention.attn.k.weight": (h, h),
            "attention.attn.k.bias": (h,), "attention.attn.v.weight": (h, h), "attention.attn.v.bias": (h,),
            "attention.attn.o.weight": (h, h), "attention.attn.o.bias": (h,), "attention.LayerNorm.weight": (h,),
            "attention.LayerNorm.bias": (h,), "intermediate.dense.weight": (2 * h, h),
            "intermediate.dense.bias": (2 * h,), "output.dense.weight": (h, 2 * h), "output.dense.bias": (h,),
            "output.LayerNorm.weight": (h,), "output.LayerNorm.bias": (h,)}


def bert_names(h):
    return {"attention.self.query.weight": (h, h), "attention.self.query.bias": (h,),
            "attention.self.key.weight": (h, h), "attention.self.key.bias": (h,),
            "attention.self.value.weight": (h, h), "attention.self.value.bias": (h,),
            "attention.output.dense.weight": (h, h), "attention.output.dense.bias": (h,),
            "attention.output.LayerNorm.weight": (h,), "attention.output.LayerNorm.bias": (h,),
            "intermediate.dense.weight": (2 * h, h), "intermediate.dense.bias": (2 * h,),
            "output.dense.weight": (h, 2 * h), "output.dense.bias": (h,), "output.LayerNorm.weight": (h,),
            "output.LayerNorm.bias": (h,)}


def tiny_mpnet(seed=0):
    """2 layers, 2 heads of 64, a relative-position table large enough to matter."""
    rng = np.random.default_rng(seed)
    w = random_weights(rng, 128, 2, 2, mpnet_names, lambda h, n: {
        "embeddings.word_embeddings.weight": (30, h), "embeddings.position_embeddings.weight": (514, h),
        "embeddings.LayerNorm.weight": (h,), "embeddings.LayerNorm.bias": (h,),
        "encoder.relative_attention_bias.weight": (32, n)})
    w["encoder.relative_attention_bias.weight"] *= 3.0
    cfg = {"num_attention_heads": 2, "num_hidden_layers": 2, "layer_norm_eps": 1e-5,
           "relative_attention_num_buckets": 32}
    return MPNet(weights=w, tokenizer=WordTokenizer(), config=cfg)


def tiny_minilm(seed=1):
    """2 layers, 2 heads of 32 (BERT)."""
    rng = np.random.default_rng(seed)
    w = random_weights(rng, 64, 2, 2, bert_names, lambda h, n: {
        "embeddings.word_embeddings.weight": (30, h), "embeddings.position_embeddings.weight": (512, h),
        "embeddings.token_type_embeddings.weight": (2, h), "embeddings.LayerNorm.weight": (h,),
        "embeddings.LayerNorm.bias": (h,)})
    return MiniLM(weights=w, tokenizer=WordTokenizer(),
                  config={"num_attention_heads": 2, "num_hidden_layers": 2, "layer_norm_eps": 1e-12})


TEXT = " ".join(["alpha", "be", "gamma", "delta", "epsilonic", "zeta", "etaa", "theta", "iota", "kappa"] * 9)


class Recorder:
    """An attention function that also runs numpy's on the same inputs and keeps the worst gap."""

    def __init__(self, fn, reference):
        self.fn, self.reference, self.worst, self.calls = fn, reference, 0.0, 0

    def __call__(self, q, k, v, bias=None):
        o = self.fn(q, k, v, bias)
        ref = self.reference(q, k, v) if bias is None else self.reference(q, k, v, bias)
        self.worst = max(self.worst, float(np.max(np.abs(o - ref)) / np.max(np.abs(ref))))
        self.calls += 1
        return o


class ForwardPasses(unittest.TestCase):
    def test_mpnet_fp32_through_the_binding_matches_numpy_attention(self):
        m = tiny_mpnet()
        rec = Recorder(gap.attention_fn("fp32", {}, "cpu"), numpy_attention)
        e = m.forward(TEXT, rec)
        e_np = m.forward(TEXT, numpy_attention)
        self.assertEqual(rec.calls, 2)
        self.assertLess(rec.worst, 1e-5)
        self.assertGreater(float(e @ e_np), 0.999999)
        # the bias is the model's: without it the embedding is another one
        no_bias = m.forward(TEXT, lambda q, k, v, b: numpy_attention(q, k, v))
        self.assertLess(float(no_bias @ e_np), 0.9999)

    def test_mpnet_dump_has_the_bias_of_every_layer(self):
        m = tiny_mpnet()
        layers = []
        m.forward("one two three", numpy_attention, dump=layers)
        self.assertEqual(len(layers), 2)
        q, k, v, bias = layers[1]
        self.assertEqual(q.shape, (1, 2, 5, 64))
        self.assertEqual(bias.shape, (1, 2, 5, 5))
        table = m.w["encoder.relative_attention_bias.weight"]
        self.assertEqual(bias[0, 1, 0, 0], table[0, 1])   # distance 0
        self.assertEqual(bias[0, 0, 0, 3], table[19, 0])  # key 3 after the query: 16 + 3
        self.assertEqual(bias[0, 0, 4, 1], table[3, 0])   # key 3 before the query

    def test_minilm_fp32_through_the_binding_matches_numpy_attention(self):
        m = tiny_minilm()
        rec = Recorder(gap.attention_fn("fp32", {}, "cpu"), bert_numpy_attention)
        e = m.forward(TEXT, rec)
        e_np = m.forward(TEXT, bert_numpy_attention)
        self.assertEqual(rec.calls, 2)
        self.assertLess(rec.worst, 1e-5)
        self.assertGreater(float(e @ e_np), 0.999999)

    def test_quantized_recipes_change_the_embedding(self):
        m = tiny_mpnet()
        ref = m.forward(TEXT, numpy_attention)
        for recipe in ("mxattention", "ocp-direct", "mxattention-fp8pv"):
            e = m.forward(TEXT, gap.attention_fn(recipe, {}, "cpu"))
            cos = float(e @ ref)
            self.assertLess(cos, 0.999999, recipe)
            self.assertGreater(cos, 0.5, recipe)

    def test_the_device_and_the_reference_agree(self):
        m = tiny_mpnet()
        e_dev = m.forward(TEXT, gap.attention_fn("mxattention", {}, "cpu"))
        e_ref = m.forward(TEXT, gap.attention_fn("mxattention", {}, "reference"))
        self.assertGreater(float(e_dev @ e_ref), 0.99999)


class PositionBuckets(unittest.TestCase):
    def test_hand_values(self):
        b = relative_buckets(300)
        # (query, key): key - query = 0, +1, -1, +7, -8, +12, -40, -100, +127, +128, -250. Past 8 the
        # bucket is 8 + floor(8 log(dist/8) / log 16), at most 15: 12 -> 9, 40 -> 12, 100 -> 15;
        # keys after the query add 16.
        cases = {(0, 0): 0, (5, 6): 17, (6, 5): 1, (10, 17): 23, (20, 12): 8, (0, 12): 25, (60, 20): 12,
                 (150, 50): 15, (0, 127): 31, (0, 128): 31, (250, 0): 15}
        for (i, j), want in cases.items():
            self.assertEqual(int(b[i, j]), want, (i, j))

    def test_shape_and_range(self):
        b = relative_buckets(40)
        self.assertEqual(b.shape, (40, 40))
        self.assertTrue(np.all((b >= 0) & (b < 32)))
        self.assertTrue(np.all(np.diag(b) == 0))


class GapArithmetic(unittest.TestCase):
    def test_half_the_error_closes_half_the_gap(self):
        err_ocp = np.array([0.02, 0.01, 0.04, 0.03])
        closed, lo, hi = gap.gap_closed(err_ocp / 2, err_ocp)
        self.assertAlmostEqual(closed, 0.5)
        self.assertAlmostEqual(lo, 0.5)
        self.assertAlmostEqual(hi, 0.5)

    def test_interval_is_paired_and_contains_the_estimate(self):
        rng = np.random.default_rng(3)
        err_ocp = rng.uniform(0.01, 0.03, 50)
        err = err_ocp * rng.uniform(0.3, 0.9, 50)
        closed, lo, hi = gap.gap_closed(err, err_ocp)
        self.assertLess(lo, closed)
        self.assertLess(closed, hi)
        self.assertAlmostEqual(closed, 1 - err.sum() / err_ocp.sum())
        self.assertLess(hi - lo, 0.2)

    def test_difference_of_two_configurations(self):
        rng = np.random.default_rng(4)
        err_ocp = rng.uniform(0.01, 0.03, 40)
        err_a, err_b = err_ocp * rng.uniform(0.2, 0.5, 40), err_ocp * rng.uniform(0.5, 0.9, 40)
        d, lo, hi = gap.closed_difference(err_a, err_b, err_ocp)
        self.assertAlmostEqual(d, gap.gap_closed(err_a, err_ocp)[0] - gap.gap_closed(err_b, err_ocp)[0])
        self.assertTrue(0 < lo < d < hi)
        self.assertEqual(gap.closed_difference(err_a, err_a, err_ocp), (0.0, 0.0, 0.0))

    def test_only_the_configurations_asked_for(self):
        old = os.environ.get("MXA_STUDY_ONLY")
        try:
            os.environ["MXA_STUDY_ONLY"] = "fp8pv,mxa_v"
            self.assertEqual([c[0] for c in gap.selected()], ["fp32", "ocp", "fp8pv", "mxa_v"])
            os.environ["MXA_STUDY_ONLY"] = "fp8pv,typo"
            with self.assertRaises(SystemExit):
                gap.selected()
            del os.environ["MXA_STUDY_ONLY"]
            self.assertEqual(gap.selected(), gap.CONFIGS)
        finally:
            if old is not None:
                os.environ["MXA_STUDY_ONLY"] = old

    def test_run_caches_and_reports_what_it_cannot_run(self):
        m = tiny_mpnet()
        calls = []

        def embed(text, fn):
            calls.append(text)
            return m.forward(text, fn)
        sets = {"a": ["one two three", "four five six seven"], "b": ["eight nine"]}
        configs = [c for c in gap.CONFIGS if c[0] in ("fp32", "ocp", "mxattention")]
        configs.append(("nope", "an unknown recipe", "no-such-recipe", {}))
        with tempfile.TemporaryDirectory() as d:
            lines = []
            embs = gap.run(embed, sets, d, configs, log=lambda *a, **k: lines.append(a[0]))
            self.assertEqual(len(calls), 3 * 3 + 1)  # the unknown recipe fails on its first text
            self.assertIn("no-such-recipe", embs["nope"]["skipped"])
            again = gap.run(embed, sets, d, configs, log=lambda *a, **k: None)
            self.assertEqual(len(calls), 3 * 3 + 2)  # the rest came from the cache
            np.testing.assert_array_equal(again["mxattention"]["a"], embs["mxattention"]["a"])
            changed = {"a": ["one two three", "four five six"], "b": sets["b"]}  # same length, other text
            gap.run(embed, changed, d, configs[:1], log=lambda *a, **k: None)
            self.assertEqual(calls[-2:], changed["a"])  # set a computed again, b from the cache
            self.assertFalse((Path(d) / "emb" / "a" / "ocp.npy").exists())  # of the old texts: removed
            rows = gap.summarize(embs, sets, configs)
            self.assertEqual(rows[1]["a"]["closed"], 0.0)  # OCP closes none of its own gap
            self.assertGreater(rows[2]["a"]["err_mean"], 0.0)
            md = gap.table(rows, sets)
            self.assertIn("| an unknown recipe | not run", md)
            (a, b, d), = gap.compare(embs, sets, [("mxattention", "ocp"), ("nope", "ocp")])
            self.assertAlmostEqual(d["a"][0], rows[2]["a"]["closed"])


class Texts(unittest.TestCase):
    def test_long_texts_have_the_asked_lengths_and_follow_each_other(self):
        count = lambda t: len(t.split())  # noqa: E731
        a = texts.long_texts(4, count, 60, 90)
        self.assertEqual(len(a), 4)
        self.assertTrue(all(60 <= count(t) <= 90 for t in a))
        self.assertEqual(len(set(a)), 4)
        self.assertEqual(texts.long_texts(4, count, 60, 90), a)

    def test_sentences_start_with_the_pairs(self):
        s, n = texts.sentences(130)
        a, b = texts.pairs()
        self.assertEqual(len(s), 130)
        self.assertEqual(s[:2 * n], a + b)


if __name__ == "__main__":
    print("mxa", mxa.version(), "from", mxa.library_path())
    unittest.main(verbosity=2)
