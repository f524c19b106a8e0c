"""The MXFP8 P V recipe through the binding (issue 20): the name, the pv switch, the reference."""
import numpy as np
import pytest

import mxa


def _data(seed=3):
    r = np.random.default_rng(seed)
    return tuple(r.standard_normal((2, 96, 64)).astype(np.float32) for _ in range(3))


def _nmse(a, b):
    return float(((a - b) ** 2).sum() / (b ** 2).sum())


def test_recipe_name_and_switch():
    assert "mxattention-fp8pv" in mxa.RECIPES
    q, k, v = _data()
    by_name = mxa.attention(q, k, v, recipe="mxattention-fp8pv", device="cpu", bc=128)
    by_switch = mxa.attention(q, k, v, recipe="mxattention", pv="mxfp8", device="cpu", bc=128)
    assert np.array_equal(by_name, by_switch)
    # the device matches the library's reference for the recipe, and the recipe is not mxattention's
    ref = mxa.attention(q, k, v, recipe="mxattention-fp8pv", reference=True, bc=128)
    assert _nmse(by_name, ref) < 1e-10
    fp4 = mxa.attention(q, k, v, recipe="mxattention", device="cpu", bc=128)
    exact = mxa.attention(q, k, v, recipe="fp32", device="cpu")
    assert _nmse(by_name, exact) < 0.8 * _nmse(fp4, exact)
    # pv="mxfp4" gives mxattention back
    assert np.array_equal(mxa.attention(q, k, v, recipe="mxattention-fp8pv", pv="mxfp4", device="cpu", bc=128), fp4)


def test_bad_pv_value():
    q, k, v = _data()
    with pytest.raises(mxa.Error, match="pv"):
        mxa.attention(q, k, v, pv="mxfp6", device="cpu")
