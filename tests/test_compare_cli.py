"""`posenc compare` through the command line: every tensor, and why two tables differ (tables built with plain
NumPy from the published formulas, not with posenc's generator and a flag flipped)."""

from __future__ import annotations

import json

import numpy as np

from .conftest import cli


def test_a_layout_swap_is_named_with_its_residual(tmp_path):
    t = np.arange(64)[:, None]
    w = 10000.0 ** (-np.arange(0, 16, 2) / 16)
    interleaved = np.repeat(np.cos(t * w), 2, axis=1).astype(np.float32)  # GPT-J / RoFormer pairs (2k, 2k+1)
    np.save(tmp_path / "cos.npy", interleaved)
    code, out, err = cli(["compare", str(tmp_path / "cos.npy"), "rope", "--len", "64", "--dim", "16"])
    assert code == 1
    assert "why: " in out.decode() and "interleaved" in out.decode() and "half" in out.decode(), out
    assert "DIFFERENT" in err and "interleaved" in err  # the verdict line says why too
    code, out, _ = cli(["compare", str(tmp_path / "cos.npy"), "rope", "--len", "64", "--dim", "16", "--json"])
    (pe,) = json.loads(out)["tensors"]
    best, structural = pe["diagnosis"]["explanations"][:2]
    # in parameters first (the file identified exactly as rope layout interleaved), then the column map
    assert best["accounts"] and best["residual_ulp"] <= 2 and best["name"] == "parameter-layout+qk-permutation"
    assert best["steps"][0]["detail"] == {"parameter": "layout", "a": "interleaved", "b": "half"}
    assert structural["accounts"] and structural["residual_ulp"] <= 2 and "interleaved" in structural["name"]


def test_a_tensor_on_one_side_only_is_a_difference(tmp_path):
    cli(["generate", "--kind", "rope", "-n", "8", "-d", "8", "-o", str(tmp_path / "full.safetensors")])
    cli(
        [
            "export",
            str(tmp_path / "full.safetensors"),
            "-t",
            "cos",
            "-t",
            "inv_freq",
            "-o",
            str(tmp_path / "part.safetensors"),
        ]
    )
    code, out, err = cli(["compare", str(tmp_path / "part.safetensors"), str(tmp_path / "full.safetensors")])
    assert code == 1 and "only in" in out.decode() and "sin" in out.decode(), (out, err)
    code, _, _ = cli(["compare", str(tmp_path / "part.safetensors"), str(tmp_path / "full.safetensors"), "-t", "cos"])
    assert code == 0  # narrowed to one tensor on purpose


def test_a_negated_sin_fails_compare(tmp_path):
    """The first tensor alone would compare SAME: every tensor is compared."""
    from posenc_cli.formats import ArrayTensor, read_table, write_table

    cli(["generate", "--kind", "rope", "-n", "16", "-d", "8", "-o", str(tmp_path / "good.safetensors")])
    table = read_table(str(tmp_path / "good.safetensors"))
    bad = {k: np.array(v) for k, v in table.tensors.items()}
    bad["sin"] = -bad["sin"]
    write_table(
        str(tmp_path / "bad.safetensors"), {k: ArrayTensor(k, v) for k, v in bad.items()}, table.metadata, "safetensors"
    )
    code, out, _ = cli(["compare", str(tmp_path / "bad.safetensors"), str(tmp_path / "good.safetensors"), "--json"])
    data = json.loads(out)
    assert code == 1 and [t["same"] for t in data["tensors"]] == [True, False, True]


def test_a_rotary_pair_is_diagnosed_once_and_named_for_each_tensor(tmp_path):
    """cos and sin of a rotary pair are diagnosed as one table (api.compare diagnoses it once): each tensor's
    diagnosis names that tensor, and says what the other's says."""
    half, inter = str(tmp_path / "half.safetensors"), str(tmp_path / "inter.safetensors")
    for spec, path in (("rope", half), ("rope:layout=interleaved", inter)):
        assert cli(["generate", spec, "--len", "64", "--dim", "16", "-o", path])[0] == 0
    code, out, _ = cli(["compare", inter, half, "--json"])
    data = json.loads(out)
    assert code == 1 and [t["a"] for t in data["tensors"] if not t["same"]] == ["cos", "sin"]
    texts = {t["a"]: json.dumps(t["diagnosis"]) for t in data["tensors"] if not t["same"]}
    assert "with its pairs in two halves" in texts["cos"] and "\\u0000" not in texts["cos"] + texts["sin"]
    assert "[cos]" in texts["cos"] and "[sin]" not in texts["cos"]
    assert texts["sin"] == texts["cos"].replace("[cos]", "[sin]")
