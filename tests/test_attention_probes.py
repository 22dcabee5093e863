"""Issue 36.5: a pairing or layer rule observed at a type's default config is re-derived from the config at hand,
or refused by name when the config holds a value the observation does not cover.

The inventory's ``attention_probes`` (tools/inventory/make_inventory.py ``--attention-probes``) record, per type,
which config keys the attention reads change the apply function it calls (the pairing) or which layers rotate.
tests/data/inventory/attention_pairing.npz is made once by tools/golden/attention_pairing_probe.py from
transformers' own glm4_moe_lite code: the unit vectors rotated by the function its attention calls for
``rope_interleave`` true and false (modeling_glm4_moe_lite.py:326), with its rotary class's cos/sin at positions 7
and 2, as the scores of unit queries at 7 with unit keys at 2.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from posenc_cli.checks.rotary import rotate
from posenc_cli.errors import ParameterError
from posenc_cli.models.hf_config import read_model_config

from .conftest import ROOT, cli
from .each import each

GOLDEN = ROOT / "tests" / "data" / "inventory" / "attention_pairing.npz"


@pytest.fixture(scope="module")
def golden():
    with np.load(GOLDEN) as z:
        return {k: z[k] for k in z.files}


def _scores(inv_freq: np.ndarray, pairing: str) -> np.ndarray:
    """Unit queries at position 7 against unit keys at 2, rotated the way a reading's pairing says (posenc's
    rotate, angles in plain numpy)."""

    def rotated(p: float) -> np.ndarray:
        angle = p * inv_freq
        per = np.concatenate([angle, angle]) if pairing == "half" else np.repeat(angle, 2)
        return rotate(np.eye(2 * inv_freq.size), np.cos(per)[None], np.sin(per)[None], pairing)

    return rotated(7.0) @ rotated(2.0).T


def test_rope_interleave_re_derives_the_pairing(golden):
    each([True, False], lambda c: _rope_interleave_re_derives_the_pairing(golden, c))


def _rope_interleave_re_derives_the_pairing(golden, value):
    """GLM-4.7-Flash's architecture: rope_interleave true calls apply_rotary_pos_emb_interleave, false
    apply_rotary_pos_emb; the reading's pairing rotates the unit vectors as that function does."""
    called = json.loads(str(golden["called"]))
    assert called == {"true": "apply_rotary_pos_emb_interleave", "false": "apply_rotary_pos_emb"}
    cfg = {"model_type": "glm4_moe_lite", "rope_interleave": value}
    reading = read_model_config(cfg)
    want = golden[f"{str(value).lower()}_scores"]
    np.testing.assert_allclose(_scores(golden["inv_freq"], reading.family.pairing), want, atol=1e-5)
    assert not np.allclose(_scores(golden["inv_freq"], "half" if value else "interleaved"), want, atol=1e-3)


def test_a_probed_key_at_a_value_the_probes_do_not_cover_is_refused_by_name(tmp_path):
    """rope_interleave (a key GLM-4.7-Flash's attention reads, whose other value the inventory saw change the
    function it calls) at a value neither observed: one line naming the key, exit 2, not the default's pairing."""
    with pytest.raises(ParameterError, match=r"config key rope_interleave='no' changes the pairing or which layers"):
        read_model_config({"model_type": "glm4_moe_lite", "rope_interleave": "no"})
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "glm4_moe_lite", "rope_interleave": "no"}))
    code, out, err = cli(["kinds", str(cfg)])
    assert code == 2 and out == b"" and "rope_interleave" in err and "Traceback" not in err
