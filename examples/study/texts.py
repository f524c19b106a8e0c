"""The texts the studies embed, made at run time and deterministic for a given Python:

- sentences: the 60 paraphrase pairs of examples/minilm/pairs.tsv (written for these
  studies) followed by first sentences of standard-library docstrings, 200 in all;
- long texts: consecutive prose paragraphs of standard-library docstrings joined until the
  model's tokenizer counts 300-384 tokens (the docstrings ship with the interpreter, PSF
  licence; the repository holds none of their text).
"""
import importlib
import inspect
import warnings
from pathlib import Path

import numpy as np

PAIRS = Path(__file__).resolve().parents[1] / "minilm" / "pairs.tsv"

SENTENCE_MODULES = [
    "os", "os.path", "json", "re", "string", "collections", "itertools", "functools", "math", "random", "statistics",
    "textwrap", "datetime", "calendar", "pathlib", "shutil", "subprocess", "threading", "queue", "heapq", "bisect",
    "csv", "zipfile", "tarfile", "gzip", "hashlib", "secrets", "base64", "urllib.parse", "logging", "argparse",
    "inspect", "decimal", "fractions", "socket", "tempfile", "glob", "fnmatch", "difflib", "pprint", "copy", "enum",
    "dataclasses", "contextlib", "operator", "uuid", "locale", "codecs", "struct", "weakref", "sched",
    "email.message", "http.cookies", "wave"]

PARAGRAPH_MODULES = [
    "argparse", "subprocess", "json", "logging", "threading", "unittest", "email", "http.client", "urllib.request",
    "collections", "itertools", "functools", "pathlib", "shutil", "tempfile", "zipfile", "tarfile", "csv", "sqlite3",
    "asyncio", "multiprocessing", "socket", "ssl", "datetime", "decimal", "random", "statistics", "textwrap",
    "difflib", "inspect", "dataclasses", "enum", "typing", "contextlib", "pickle", "copy", "heapq", "bisect",
    "struct", "codecs"]


def pairs():
    """(side a, side b) of the paraphrase pairs."""
    rows = [l.split("\t") for l in PAIRS.read_text(encoding="utf-8").splitlines() if l.strip() and not l.startswith("#")]
    return [r[0] for r in rows], [r[1] for r in rows]


def _docs(modules):
    """Every docstring of the public members of `modules`, in a fixed order."""
    for name in modules:
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        yield inspect.getdoc(mod) or ""
        for attr in sorted(dir(mod)):
            if not attr.startswith("_"):
                with warnings.catch_warnings():  # typing.io and typing.re warn when read
                    warnings.simplefilter("ignore", DeprecationWarning)
                    doc = inspect.getdoc(getattr(mod, attr, None)) or ""
                yield doc


def _prose(text):
    """Plain English prose: letters, spaces and sentence punctuation only, capitalized, ended."""
    plain = sum(c.isalpha() or c in " ,.;'" for c in text)
    return (plain > 0.93 * len(text) and text[:1].isupper() and text.endswith(".") and
            not any(s in text for s in ("=", ">>>", "::", "--", "()", "[", "{")))


def docstring_sentences(count):
    """`count` first sentences of docstrings, 40-200 characters of plain words, spread over
    the modules (the MiniLM study's sentences since its first version)."""
    out, seen = [], set()
    for name in SENTENCE_MODULES:
        mod = importlib.import_module(name)
        for attr in sorted(dir(mod)):
            if attr.startswith("_"):
                continue
            doc = inspect.getdoc(getattr(mod, attr, None)) or ""
            first = doc.split("\n\n")[0].replace("\n", " ").strip()
            first = first.split(". ")[0].rstrip(".") + "."
            letters = sum(c.isalpha() or c == " " for c in first)
            if 40 <= len(first) <= 200 and letters > 0.9 * len(first) and first not in seen and "(" not in first:
                seen.add(first)
                out.append(first)
    idx = np.random.default_rng(0).permutation(len(out))[:count]
    return [out[i] for i in sorted(idx)]


def sentences(count=200):
    """The paraphrase pairs (side a, then side b) and docstring sentences up to `count`."""
    a, b = pairs()
    return (a + b + docstring_sentences(max(0, count - len(a) - len(b))))[:count], len(a)


def long_texts(count, n_tokens, lo=300, hi=384):
    """`count` texts of lo..hi tokens (n_tokens(text) counts them, special tokens included):
    consecutive docstring paragraphs, each text starting where the previous one ended."""
    # A package lists its imported submodules among its members (email.message once imported):
    # import the sentences' modules first, as the studies did, so that the texts do not depend
    # on what the caller imported before.
    for name in SENTENCE_MODULES:
        importlib.import_module(name)
    paras, seen = [], set()
    for doc in _docs(PARAGRAPH_MODULES):
        for p in doc.split("\n\n"):
            p = " ".join(p.split())
            if len(p) >= 80 and _prose(p) and p not in seen:
                seen.add(p)
                paras.append(p)
    texts, cur = [], []
    for p in paras:
        t = " ".join(cur + [p])
        if n_tokens(t) > hi:
            if cur and n_tokens(" ".join(cur)) >= lo:
                texts.append(" ".join(cur))
                if len(texts) == count:
                    return texts
            cur = [p] if n_tokens(p) <= hi else []
        else:
            cur.append(p)
    raise RuntimeError(f"the docstrings give only {len(texts)} texts of {lo}-{hi} tokens, not {count}")
