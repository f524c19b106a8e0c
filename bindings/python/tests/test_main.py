"""python -m mxa probe|demo, as a user runs them."""
import json
import subprocess
import sys

import mxa


def run(*args):
    p = subprocess.run([sys.executable, "-m", "mxa", *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def test_probe_lists_what_the_library_lists():
    rc, out, err = run("probe", "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["library"] == mxa.library_path() and doc["version"] == mxa.version()
    assert [d["id"] for d in doc["devices"]] == [d["id"] for d in mxa.devices()]
    assert doc["auto"] in [d["id"] for d in doc["devices"]]
    rc, out, _ = run("probe")
    assert rc == 0 and "backends:" in out and "cpu" in out and f"auto -> {doc['auto']}" in out


def test_demo_shows_pnq_row_sums_of_one():
    rc, out, err = run("demo", "--device", "cpu")
    assert rc == 0, err
    lines = {line.split()[0]: line.split() for line in out.splitlines() if line.split()[:1] in
             (["fp32"], ["ocp-direct"], ["mxattention"])}
    assert float(lines["fp32"][1]) == 0.0
    assert lines["mxattention"][5:8] == ["1.000000", "[1.000000,", "1.000000]"]
    assert float(lines["ocp-direct"][5]) < 0.999  # direct placement's row sums drift below 1
    assert 0 < float(lines["mxattention"][1]) < 0.1
    rc, _, err = run("demo", "--device", "no-such:3")
    assert rc == 1 and err.startswith("mxa: ")
    rc, _, _ = run("bogus")
    assert rc == 2
