"""mlx-lm reads ``rope_traditional`` from config.json where the model's module passes it to ``nn.RoPE`` (llama's:
mlx_lm/models/llama.py:31, :69 in 0.32.2; the table of modules is mlx-lm's own, printed by
tools/golden/mlx_traditional.py): the mlx engine's table of such a config rotates the pairs (2k, 2k+1), the row
names the rule, and a module whose flag posenc does not mirror is refused with the key set (once the key was
ignored, and the mlx row agreed with HF's halves)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import load_file

from .conftest import cli

CONFIG = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 256, "num_attention_heads": 4,
          "num_key_value_heads": 2, "rope_theta": 10000.0, "max_position_embeddings": 512, "num_hidden_layers": 2,
          "intermediate_size": 512, "vocab_size": 100}  # fmt: skip


def _mlx_table(tmp_path, **keys):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({**CONFIG, **keys}))
    out = tmp_path / "mlx.safetensors"
    code, _out, err = cli(["generate", "--hf-config", str(cfg), "--engine", "mlx", "--len", "64", "-o", str(out),
                           "--force"])  # fmt: skip
    assert code == 0, err
    return cfg, load_file(str(out))


def test_rope_traditional_true_rotates_adjacent_pairs(tmp_path):
    cfg, t = _mlx_table(tmp_path, rope_traditional=True)
    # plain numpy: pairs (2k, 2k+1) share the angle t * base^(-2k/d), d = 64
    k = np.arange(32)
    angle = np.arange(64)[:, None] * 10000.0 ** (-2.0 * k / 64)
    expected = np.repeat(np.cos(angle), 2, axis=1)
    assert np.max(np.abs(t["cos"] - expected)) < 2e-5  # mlx's float32 arithmetic at 64 positions
    code, out, err = cli(["compare", f"{cfg}@mlx", str(cfg), "--len", "64", "-q"])
    assert code == 1 and "reads rope_traditional=True" in out.decode() + err


def test_rope_traditional_false_or_absent_is_hf_s_halves(tmp_path):
    for keys in ({}, {"rope_traditional": False}):
        _cfg, t = _mlx_table(tmp_path, **keys)
        angle = np.arange(64)[:, None] * 10000.0 ** (-2.0 * np.arange(32) / 64)
        assert np.max(np.abs(t["cos"] - np.cos(np.concatenate([angle, angle], axis=1)))) < 2e-5


def test_a_module_whose_flag_is_not_mirrored_is_refused_with_the_key_set(tmp_path):
    from posenc_cli.models.engines import _mlx_traditional, model_facts

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({**CONFIG, "rope_traditional": "yes"}))
    with pytest.raises(Exception, match="rope_traditional='yes'"):
        _mlx_traditional(model_facts(str(cfg)))
