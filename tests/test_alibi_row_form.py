"""A model's own ALiBi tensor, heads x 1 x len (Bloom, Falcon, MPT: one bias per key, broadcast over queries), is
read by ``toeplitz`` and ``monotone`` as the matrix the softmax sees (``b[j] - b[i]`` for the keys the causal mask
keeps): the published configs' tables are ALiBi, and a per-key bias that is not linear in the key (built with plain
numpy) is not. Before, both checks were "not measurable" on these tensors, and an audit of a BLOOM config checked
only that its table was finite."""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import save_file

from .conftest import ROOT, cli

POSITIONS = ROOT / "tests" / "data" / "configs" / "positions"


def _results(args: list[str]) -> tuple[int, dict[str, dict]]:
    code, out, _err = cli(["check", *args, "--json"])
    (report,) = json.loads(out)
    return code, {r["name"]: r for r in report["results"]}


@pytest.mark.parametrize("config", ["pos_bloom_560m", "pos_falcon_rw_1b", "pos_mpt_30b"])
def test_a_model_s_own_alibi_row_is_alibi(config):
    code, results = _results([str(POSITIONS / f"{config}.json"), "--len", "300"])
    assert code == 0
    assert results["toeplitz"]["status"] == "PASS" and results["monotone"]["status"] == "PASS"


def test_a_per_key_bias_that_is_not_linear_is_not_alibi(tmp_path):
    heads, n = 4, 64
    slopes = 1.0 / (3.0 + np.arange(heads))  # values no coarser dtype holds exactly (float32 is their arithmetic)
    j = np.arange(n, dtype=np.float64)
    metadata = {"kind": "alibi", "posenc_version": "0.2.0", "length": str(n), "dim": str(heads),
                "dtype": "float32", "causal": "false", "max_bias": "8.0", "form": "bloom", "divide_by": "1.0",
                "slopes": "paper"}  # fmt: skip
    for bias, broken in ((slopes[:, None] * j**1.1, "toeplitz"), (-slopes[:, None] * j, "monotone")):
        path = tmp_path / f"{broken}.safetensors"
        save_file({"bias": bias.astype(np.float32)[:, None, :], "slopes": slopes.astype(np.float32)}, str(path),
                  metadata=metadata)  # fmt: skip
        code, results = _results([str(path)])
        assert code == 1 and results[broken]["status"] == "FAIL", results[broken]
