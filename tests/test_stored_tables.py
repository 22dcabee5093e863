"""Fixed tables kept in weights and T5-family relative bias (posenc_cli/models/stored_tables.py), held against arrays
each model's own transformers code made once (tests/data/golden/fixed_relative.npz and the tiny model folders, by
tools/golden/make_fixed_relative_golden.py in the side environment). Mistaken stored copies are built here with
plain NumPy from those arrays.
"""

from __future__ import annotations

import json
import shutil

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import save_file

import posenc_cli as pe
from posenc_cli.errors import ParameterError
from posenc_cli.formats import read_table
from posenc_cli.inspect import tolerance
from posenc_cli.models.readers import from_model_config

from .conftest import ROOT, UNDRAWN, cli
from .each import each

MODELS = ROOT / "tests" / "data" / "models"
GOLDEN = dict(np.load(ROOT / "tests" / "data" / "golden" / "fixed_relative.npz"))
N = 24  # the window the golden compute_bias arrays were made for


def formula(config: dict, layer_type: str | None = None):
    kind, params, _, _ = from_model_config(config, layer_type=layer_type)
    return pe.generate(kind, **params, dtype="float64")


def model_dir(tmp_path, name: str, tensors: dict[str, np.ndarray]):
    """A copy of tiny model ``name``'s config.json beside a model.safetensors holding ``tensors``."""
    out = tmp_path / name
    out.mkdir()
    shutil.copy(MODELS / name / "config.json", out / "config.json")
    save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()}, str(out / "model.safetensors"))
    return out


# ----- the formulas against the models' own code --------------------------------------------------------------------
def test_ctrl_buffer_within_its_float32_arithmetic():
    # CTRL computes 1 / pow(10000, 2k/d) and t * w in float32: an ulp or so of the float32 angle apart from posenc's
    # float32 frequencies, which the error model of float32 formulas bounds
    gold = GOLDEN["ctrl_pos_encoding"]
    enc = formula({"model_type": "ctrl", "n_embd": 32, "n_positions": 256})
    x = enc.array("pe")
    assert x.shape == gold.shape
    rows = np.arange(gold.shape[0])
    v = tolerance.formula_check(gold, x, rows, enc.angle_terms("pe"), np.float32, np.float64, np.float32)
    assert v.ok, v.ratio
    assert np.max(np.abs(gold[:8] - x[:8])) < 1e-6  # the first rows are equal to float32 rounding


def test_vit_mae_tables_are_transformers_init():
    for lt in ("encoder", "decoder"):
        code, out, err = cli(["generate", "--hf-config", str(MODELS / "tiny_vit_mae"), "--layer-type", lt,
                              "-o", "-", "--format", "npy"])  # fmt: skip
        assert code == 0, err
        got = np.load(__import__("io").BytesIO(out))
        np.testing.assert_array_equal(got, GOLDEN[f"vit_mae_{lt}"])  # float64 formula rounded once: bit for bit
        assert "note: stored copy:" in err and "equals the formula" in err


def test_audio_encoder_buffers():
    # Qwen2.5-Omni's SinusoidsPositionEmbedding buffer and Whisper's sinusoids: float32 torch, within 2 ulps
    enc = formula({"model_type": "qwen2_5_omni_audio_encoder", "d_model": 16, "max_source_positions": 64})
    np.testing.assert_allclose(enc.array("pe"), GOLDEN["omni_audio"], rtol=0, atol=2 * 2.0**-24)
    enc = formula(json.loads((MODELS / "tiny_qwen2_audio_encoder" / "config.json").read_text()))
    np.testing.assert_allclose(enc.array("pe"), GOLDEN["whisper_sinusoids"], rtol=0, atol=2 * 2.0**-24)


# ----- stored copies: equal, and each named difference ---------------------------------------------------------------
def test_stored_copies_equal():
    for name, lts in (("tiny_vit_mae", ["encoder", "decoder"]), ("tiny_qwen2_audio_encoder", ["default"]),
                      ("tiny_whisper", ["encoder"])):  # fmt: skip
        copies = pe.stored_tables(MODELS / name)
        assert [c.layer_type for c in copies] == lts
        assert all(c.verdict == "equal" for c in copies), [c.why for c in copies]


SIN = GOLDEN["whisper_sinusoids"]  # what the tiny Qwen2-Audio encoder stores (10 x 16)


#: a copy of Whisper's sinusoids, its verdict and the words that name it, by case
STORED_COPIES = {
    "bf16": (SIN.astype(ml_dtypes.bfloat16), "equal", "a bfloat16 copy of the float32 table"),
    "bf16-widened": (SIN.astype(ml_dtypes.bfloat16).astype(np.float32), "differ", "a bfloat16 copy widened to float32"),
    "zeros": (np.zeros_like(SIN), "differ", "all zeros"),
    "trained": (
        SIN + np.float32(0.05) * np.random.default_rng(0).standard_normal(SIN.shape, np.float32),
        "differ",
        "trained away from its init",
    ),
    "random": (np.random.default_rng(1).standard_normal(SIN.shape).astype(np.float32), "differ", "not this formula"),
    "shuffled": (np.concatenate([SIN[:, 1::2], SIN[:, ::2]], axis=1), "differ", "not this formula"),
}


def test_stored_copy_differences_named(tmp_path_factory):
    """Every copy in STORED_COPIES (tests/each.py names each failing one)."""
    each(
        STORED_COPIES, lambda name: _stored_copy_differences_named(tmp_path_factory.mktemp(name), *STORED_COPIES[name])
    )


def _stored_copy_differences_named(tmp_path, table, verdict, words):
    path = model_dir(tmp_path, "tiny_qwen2_audio_encoder", {"embed_positions.weight": table})
    [copy] = pe.stored_tables(path)
    assert copy.verdict == verdict and words in copy.why, copy.why
    code, _, err = cli(["audit", str(path)])
    assert code == (0 if verdict == "equal" else 1), err


def test_vit_mae_halves_not_rotated(tmp_path):
    # build_2d_sinusoidal_position_embedding without initialize_weights' rotation: [sin_h | cos_h | sin_w | cos_w]
    enc, dec = GOLDEN["vit_mae_encoder"], GOLDEN["vit_mae_decoder"]
    canonical = np.concatenate([enc[:, 8:], enc[:, :8]], axis=1)
    path = model_dir(tmp_path, "tiny_vit_mae", {"vit.embeddings.position_embeddings": canonical[None],
                                                "decoder.decoder_pos_embed": dec[None]})  # fmt: skip
    first, second = pe.stored_tables(path)
    assert first.verdict == "differ" and "axis_order=grid" in first.why, first.why
    assert second.verdict == "equal"


def test_unstored_tables_say_so(tmp_path):
    path = tmp_path / "ctrl"
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"model_type": "ctrl", "n_embd": 16, "n_positions": 8}))
    save_file({"w.weight": np.zeros((4, 16), np.float32)}, str(path / "model.safetensors"))
    [copy] = pe.stored_tables(path)
    assert copy.verdict == "unstored" and "non-persistent buffer" in copy.why


def test_stored_copy_bad_input(tmp_path):
    short = model_dir(tmp_path, "tiny_qwen2_audio_encoder", {"embed_positions.weight": SIN[:8]})
    with pytest.raises(ParameterError, match=r"embed_positions.weight has shape 8 x 16 .* says 10 x 16"):
        pe.stored_tables(short)
    code, out, err = cli(["generate", "--hf-config", str(short), "-o", str(tmp_path / "x.npy")])
    assert code == 2 and out == b"" and err.count("\n") == 1 and "8 x 16" in err and "10 x 16" in err, err
    (tmp_path / "none").mkdir()
    lacking = model_dir(tmp_path / "none", "tiny_qwen2_audio_encoder", {"other.weight": SIN})
    with pytest.raises(ParameterError, match=r"no tensor named \*embed_positions.weight .* \(10 x 16 by its config\)"):
        pe.stored_tables(lacking)


# ----- relative bias -------------------------------------------------------------------------------------------------
def test_t5_bias_is_compute_bias(tmp_path_factory):
    each(["encoder", "decoder"], lambda c: _t5_bias_is_compute_bias(tmp_path_factory.mktemp("case"), c))


def _t5_bias_is_compute_bias(tmp_path, lt):
    dest = tmp_path / "bias.safetensors"
    code, _, err = cli(["export", str(MODELS / "tiny_t5"), "--len", str(N), "-p", "table=bias", "--layer-type", lt,
                        "-o", str(dest)])  # fmt: skip
    assert code == 0, err
    table = read_table(str(dest))
    np.testing.assert_array_equal(table.tensors["bias"], GOLDEN[f"t5_{lt}"])
    assert table.metadata["bidirectional"] == str(lt == "encoder").lower()


def test_umt5_bias_per_block():
    for lt in ("encoder", "decoder"):
        src = pe.relative_bias(MODELS / "tiny_umt5", length=N, layer_type=lt)
        assert src.names == ["bias_block0", "bias_block1"]
        for i in range(2):
            np.testing.assert_array_equal(src.array(f"bias_block{i}"), GOLDEN[f"umt5_{lt}_{i}"])


def test_bias_keeps_the_stored_dtype_and_buckets_still_default(tmp_path):
    from safetensors.numpy import load_file

    weights = load_file(str(MODELS / "tiny_t5" / "model.safetensors"))
    bf16 = {k: (v.astype(ml_dtypes.bfloat16) if "relative_attention_bias" in k else v) for k, v in weights.items()}
    path = model_dir(tmp_path, "tiny_t5", bf16)
    src = pe.relative_bias(path, length=N, layer_type="encoder")
    bias = src.array("bias")
    assert bias.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(
        bias.astype(np.float32), GOLDEN["t5_encoder"].astype(ml_dtypes.bfloat16).astype(np.float32)
    )
    code, out, _ = cli(["export", str(MODELS / "tiny_t5"), "--len", "6", "--layer-type", "encoder", "-o", "-",
                          "--format", "npy"])  # fmt: skip
    assert code == 0 and np.load(__import__("io").BytesIO(out)).dtype == np.int64  # the bucket table, as before
    code, named, _ = cli(["export", str(MODELS / "tiny_t5"), "--len", "6", "--layer-type", "encoder", "-p",
                          "table=buckets", "-o", "-", "--format", "npy"])  # fmt: skip
    assert code == 0 and named == out


def test_bias_bad_input(tmp_path):
    from safetensors.numpy import load_file

    weights = load_file(str(MODELS / "tiny_t5" / "model.safetensors"))
    name = "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"
    weights[name] = weights[name][:6]
    path = model_dir(tmp_path, "tiny_t5", weights)
    code, _, err = cli(["export", str(path), "--len", "8", "-p", "table=bias", "--layer-type", "encoder",
                          "-o", str(tmp_path / "b.npy")])  # fmt: skip
    assert code == 2 and err.count("\n") == 1 and name in err and "6 x 2" in err and "8 x 2" in err, err
    for args, words in (
        ([str(MODELS / "tiny_bert"), "-p", "table=bias"], "has no relative_attention_bias"),
        ([str(MODELS / "tiny_t5"), "-p", "table=bis", "--layer-type", "encoder"], "unknown table='bis'"),
        (
            [str(MODELS / "tiny_t5" / "config.json"), "--len", "4", "-p", "table=bias", "--layer-type", "encoder"],
            "pass the model directory",
        ),
    ):
        code, _, err = cli(["export", *args, "-o", str(tmp_path / "x.npy")])
        assert code == 2 and words in err and err.count("\n") == 1, err


def test_plot_draws_the_bias(tmp_path, undrawn):
    """The model's bias reaches the bias view (whose pictures test_plot draws and reads back pixel by pixel)."""
    dest = tmp_path / "bias.png"
    code, out, err = cli(["plot", str(MODELS / "tiny_umt5"), "--len", "12", "-p", "table=bias", "--layer-type",
                          "decoder", "-o", str(dest), "--json"])  # fmt: skip
    assert code == 0 and dest.read_bytes() == UNDRAWN, err
    drawn = json.loads(out)
    assert drawn["view"] == "bias" and [p["title"] for p in drawn["panels"]] == [f"head {h} of 3" for h in range(3)]


def test_marian_pegasus_copies(tmp_path_factory):
    each(["marian", "pegasus"], lambda c: _marian_pegasus_copies(tmp_path_factory.mktemp("case"), c))


def _marian_pegasus_copies(tmp_path, model_type):
    gold = GOLDEN["marian_create_weight"]  # create_weight of (20, 16): both classes' code is the same
    config = {"model_type": model_type, "d_model": 16, "max_position_embeddings": 20}
    np.testing.assert_allclose(formula(config).array("pe"), gold, rtol=0, atol=2.0**-24)
    both = tmp_path / "both"
    both.mkdir()
    (both / "config.json").write_text(json.dumps(config))
    save_file({f"model.{side}.embed_positions.weight": gold for side in ("encoder", "decoder")},
              str(both / "model.safetensors"))  # fmt: skip
    copies = pe.stored_tables(both)
    assert [c.verdict for c in copies] == ["equal", "equal"], [c.why for c in copies]
    assert [c.tensor for c in copies] == [
        "model.encoder.embed_positions.weight",
        "model.decoder.embed_positions.weight",
    ]
    none = tmp_path / "none"
    none.mkdir()
    (none / "config.json").write_text(json.dumps(config))
    save_file({"model.shared.weight": np.zeros((4, 16), np.float32)}, str(none / "model.safetensors"))
    if model_type == "marian":  # MarianMTModel._keys_to_ignore_on_save: transformers never saves it
        copies = pe.stored_tables(none)
        assert [c.verdict for c in copies] == ["unstored", "unstored"] and "_keys_to_ignore_on_save" in copies[0].why
    else:
        with pytest.raises(ParameterError, match=r"no tensor named \*encoder.embed_positions.weight"):
            pe.stored_tables(none)


def test_generate_names_the_export_that_reads_the_table(tmp_path):
    """``generate`` on a model directory whose table lives in its weights refuses, and the export it suggests
    carries the reading options given (``-p table=bias``, ``--len``, ``--layer-type``): run as shown, it works."""
    path = str(ROOT / "tests" / "data" / "models" / "tiny_t5")
    code, out, err = cli(["generate", path, "-p", "table=bias", "--len", "8", "--layer-type", "encoder"])
    assert code == 2 and out == b""
    said = err.strip().splitlines()[-1]
    shown = said.split("export it: posenc ", 1)[1].removesuffix(" -o FILE").split()
    code, _, err = cli([*shown, "-o", str(tmp_path / "bias.safetensors")])
    assert code == 0, err
    from safetensors.numpy import load_file

    assert load_file(str(tmp_path / "bias.safetensors"))["bias"].shape == (2, 8, 8)


# ----- formulas copied from another type's module, each held against its own module's rows (issue 36) -------------
FORMULAS = dict(np.load(ROOT / "tests" / "data" / "golden" / "fixed_formulas.npz"))


def test_copied_formulas_are_their_own_modules_rows():
    each(
        [
            ("nllb_moe", {"model_type": "nllb-moe", "d_model": 16, "max_position_embeddings": 12, "pad_token_id": 1}),
            (
                "kosmos2_text",
                {
                    "model_type": "kosmos_2_text_model",
                    "embed_dim": 16,
                    "max_position_embeddings": 12,
                    "pad_token_id": 1,
                },
            ),
            # the wrapper reads its text tower's table under text_config (records.tower_family)
            (
                "kosmos2_text",
                {
                    "model_type": "kosmos-2",
                    "text_config": {"embed_dim": 16, "max_position_embeddings": 12, "pad_token_id": 1},
                },
            ),
            ("qwen3_asr", {"model_type": "qwen3_asr_encoder", "d_model": 16}),  # its class default: 13 rows
            ("xglm", {"model_type": "xglm", "d_model": 16, "max_position_embeddings": 12, "pad_token_id": 1}),
        ],
        lambda c: _copied_formulas_are_their_own_modules_rows(*c),
    )


def _copied_formulas_are_their_own_modules_rows(name, config):
    gold = FORMULAS[name]
    enc = formula(config)
    x = enc.array("pe")
    assert x.shape == gold.shape
    v = tolerance.formula_check(gold, x, np.arange(x.shape[0]), enc.angle_terms("pe"), np.float32, np.float64,
                                np.float32)  # fmt: skip
    assert v.ok, v.ratio


def test_xglm_refuses_a_padding_row_among_the_rows_it_adds(tmp_path):
    # XGLM adds buffer rows 2..N+1 whatever pad_token_id is, and its buffer's pad_token_id row is zero
    # (modeling_xglm.py XGLMSinusoidalPositionalEmbedding): with pad_token_id 5 the model adds a zero row at token 3
    (tmp_path / "config.json").write_text(
        json.dumps({"model_type": "xglm", "d_model": 16, "max_position_embeddings": 12, "pad_token_id": 5})
    )
    code, out, err = cli(["generate", "--hf-config", str(tmp_path / "config.json"), "-o", str(tmp_path / "x.npy")])
    assert code == 2 and out == b"" and err.count("\n") == 1, err
    assert "pad_token_id=5" in err and "2..13" in err, err
    gold = FORMULAS["xglm"].copy()
    gold[3] = 0.0  # what the model adds at token 3 then, built here with plain NumPy
    enc = formula({"model_type": "xglm", "d_model": 16, "max_position_embeddings": 12, "pad_token_id": 1})
    assert np.abs(enc.array("pe")[3] - gold[3]).max() > 0.5  # the formula is not that table: hence the refusal
