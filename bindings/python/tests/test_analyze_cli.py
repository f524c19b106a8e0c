"""`mxa analyze` end to end on seeded tensors: the UOS minimum, row sums that match the
library's reference and split exactly, the ablation table, and well-formed outputs."""
import csv
import json
import os
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
import pytest

CLI = os.environ.get("MXA_CLI", "")
pytestmark = pytest.mark.skipif(not (CLI and os.access(CLI, os.X_OK)), reason="MXA_CLI (the mxa binary) not given")


def run(*args, ok=True):
    p = subprocess.run([CLI, "analyze", *map(str, args)], capture_output=True, text=True, timeout=120)
    if ok:
        assert p.returncode == 0, p.stderr
    return p


@pytest.fixture(scope="module")
def tensors(tmp_path_factory):
    d = tmp_path_factory.mktemp("qkv")
    rng = np.random.default_rng(11)
    boost = np.where(np.arange(64) % 17 == 3, 3.0, 1.0)
    q = (rng.standard_normal((1, 2, 160, 64)) * boost).astype(np.float32)
    k = (rng.standard_normal((1, 2, 160, 64)) * boost + np.where(np.arange(64) % 8 == 1, 2.0, 0.0)).astype(np.float32)
    v = rng.standard_normal((1, 2, 160, 64)).astype(np.float32)
    paths = {}
    for name, x in (("q_0", q), ("k_0", k), ("v_0", v)):
        paths[name] = d / f"{name}.npy"
        np.save(paths[name], x)
    return d, paths


def test_uos_minimum_and_figure(tmp_path):
    p = run("uos", "--svg", tmp_path / "fig2.svg", "--json", tmp_path / "uos.json")
    assert "q* = 7.25 " in p.stdout
    doc = json.loads((tmp_path / "uos.json").read_text())
    for row in doc["tables"]["objective"]:
        assert abs(row["argmin J (numeric)"] - 7.25) < 1e-3, row
        assert row["J(6)/J(7.25)"] > 1 and row["J(8)/J(7.25)"] > 1
    pieces = doc["tables"]["delta"]
    assert [p["constant"] for p in pieces] == [-0.125, 97.875]  # -1/8 and (4q-29)(4q-27)/8 = 2q^2 - 28q + 97.875
    assert ET.parse(tmp_path / "fig2.svg").getroot().tag.endswith("svg")


def test_uos_tensors(tensors, tmp_path):
    d, paths = tensors
    run("uos", paths["q_0"], paths["k_0"], "--hadamard", "--csv", tmp_path / "u.csv", "--svg-mse", tmp_path / "m.svg",
        "--svg-blocks", tmp_path / "b.svg")
    rows = list(csv.reader(open(tmp_path / "u.csv")))
    table4 = [r for r in rows if r[0] == "table4"]
    assert [r[1] for r in table4] == ["all", "q", "k"]
    for r in table4:
        assert abs(sum(float(x) for x in r[3:7]) - 100.0) < 0.2
    mse = [r for r in rows if r[0] == "mse"]
    assert len(mse) == 2 * 41
    blocks = [r for r in rows if r[0] == "blocks"]
    assert len(blocks) == 20
    # blocks whose normalized maximum is near 8 must prefer the larger scale
    assert float(blocks[-1][7]) > 0.9 and float(blocks[0][7]) < 0.1
    for svg in ("m.svg", "b.svg"):
        ET.parse(tmp_path / svg)
    bad = run("uos", paths["v_0"], "--svg-mse", tmp_path / "x.svg", "--axis", "sideways", ok=False)
    assert bad.returncode == 2 and bad.stderr.startswith("mxa: ")


def test_rowsum_split_and_reference(tensors, tmp_path):
    d, paths = tensors
    run("rowsum", "--q", paths["q_0"], "--k", paths["k_0"], "--json", tmp_path / "r.json", "--svg", tmp_path / "r.svg")
    rows = {r["configuration"]: r for r in json.loads((tmp_path / "r.json").read_text())["tables"]["rowsums"]}
    mx = [r for name, r in rows.items() if "direct" in name and "NVFP4" not in name]
    assert len(mx) == 4
    for r in mx:
        assert r["max |sum - reference|"] == 0  # the same row sums as mxa_reference_attention
        parts = r["zeroing"] + r["saturation"] + r["down rounding"] + r["up rounding"]
        assert abs(parts - (r["mean"] - 1.0)) < 1e-5
        assert r["mean"] < 1.0 and r["zeroing"] < 0 and r["up rounding"] > 0
    tfs = [r for name, r in rows.items() if "TFS" in name][0]
    assert tfs["saturation"] == 0  # q = 6 never clips
    pnq = rows["MXAttention (Hadamard + UOS + PNQ)"]
    assert pnq["mean"] == pnq["min"] == pnq["max"] == 1
    ET.parse(tmp_path / "r.svg")


def test_ablation(tensors, tmp_path):
    d, paths = tensors
    run("ablation", "--q", paths["q_0"], "--k", paths["k_0"], "--v", paths["v_0"], "--csv", tmp_path / "a.csv",
        "--svg", tmp_path / "a.svg")
    rows = {r[1]: r for r in csv.reader(open(tmp_path / "a.csv")) if r[0] == "ablation"}
    assert len(rows) == 8
    full, ocp = rows["MXAttention (Hadamard + UOS + PNQ)"], rows["OCP MXFP4 (ocp-direct)"]
    assert float(full[3]) < float(ocp[3])
    assert float(full[7]) == 1.0 and float(ocp[7]) < 1.0
    ET.parse(tmp_path / "a.svg")
    missing = run("ablation", "--q", paths["q_0"], ok=False)
    assert missing.returncode == 2
