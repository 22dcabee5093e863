"""Non-rotary positions exactly as each model applies them, against the arrays its own code produced
(tests/data/inventory/positions.npz, made by tools/inventory/non_rope.py in the side venv, transformers 5.24).

One convention for offsets and padding rows (issue 28, item 5): a table read from a model holds the rows the
model adds to tokens 0..N-1 (M2M100/NLLB and Speech2Text: buffer rows padding_idx + 1.., OPT and BART: rows 2..,
RoBERTa: rows pad_token_id + 1..); the module's raw buffer only with ``-p rows=buffer``; the metadata says which
(``position_rows``). ALiBi as each model applies it: Bloom's float32 slopes times the key position, MPT's
``build_mpt_alibi_tensor``, Falcon's bfloat16 slopes with the ``1/sqrt(head_dim)`` it folds into the mask, in the
bias and in the slopes.

Sinusoids the model computes with float32 torch (M2M100, Speech2Text, Whisper's encoder) are compared within one
float32 ulp of the frequency times the position plus two ulps of the value (PyTorch's vectorised exp/sin are not
correctly rounded); everything else is exact.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import save_file

from posenc_cli.errors import ParameterError
from posenc_cli.sources import open_source

from .conftest import ROOT
from .each import each

ARRAYS = ROOT / "tests" / "data" / "inventory"


@pytest.fixture(scope="module")
def ref():
    index = json.loads((ARRAYS / "index.json").read_text())["positions"]
    with np.load(ARRAYS / "positions.npz") as z:
        arrays = {k: z[k] for k in z.files}
    return index, arrays


@pytest.fixture(scope="module")
def configs(tmp_path_factory):
    root = tmp_path_factory.mktemp("configs")

    def write(name: str, config: dict, tensors: dict | None = None) -> str:
        d = root / name
        d.mkdir(exist_ok=True)
        (d / "config.json").write_text(json.dumps(config))
        if tensors is None:
            return str(d / "config.json")
        save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()}, str(d / "model.safetensors"))
        return str(d)

    return write


def table(path: str, tensor: str | None = None, **kw) -> np.ndarray:
    src = open_source(path, **kw)
    return np.asarray(src.array(tensor or src.tensor_name(None)))


def entries(index: dict, model_type: str) -> list[tuple[str, dict]]:
    return [(k, e) for k, e in index.items() if e["model_type"] == model_type and "bias" in e]


# ----- ALiBi ------------------------------------------------------------------------------------------------------
def test_bloom_alibi_is_build_alibi_tensor(ref, configs):
    """Bloom's float32 slopes times the key position. transformers takes the slopes from torch.pow on float32,
    vectorised (SLEEF's 1-ulp powf), which is not correctly rounded: for 32 heads its head 14 is one ulp below
    the correctly rounded power posenc computes (and head 109 of 112). So: slopes within one float32 ulp (exact
    for 8 heads, all powers of two, and nearly everywhere else), the bias the exact float32 product."""
    index, arrays = ref
    for name, e in entries(index, "bloom"):
        n = max(e["positions"]) + 1 if e["heads"] == 8 else 4096  # the full 131072 keys for one head count
        cols = [p for p in e["positions"] if p < n]
        path = configs(name, {"model_type": "bloom", "n_head": e["heads"]})
        want_s = arrays[e["slopes"]]
        slopes = table(path, "slopes", length=n)
        assert np.all(np.abs(slopes - want_s) <= np.spacing(want_s)), name
        assert np.mean(slopes == want_s) >= 0.95, name
        if e["heads"] == 8:
            np.testing.assert_array_equal(slopes, want_s)
        bias = table(path, "bias", length=n)[:, 0, :]
        want = arrays[e["bias"]][:, : len(cols)]
        # the reference is its slopes times j, rounded once to float32; ours is ours times j
        np.testing.assert_array_equal(want, (want_s.astype(np.float64)[:, None] * cols).astype(np.float32))
        np.testing.assert_array_equal(bias[:, cols], (slopes.astype(np.float64)[:, None] * cols).astype(np.float32))


def test_mpt_alibi_is_build_mpt_alibi_tensor(ref, configs):
    index, arrays = ref
    for name, e in entries(index, "mpt"):
        n = e["max_seq_len"]
        path = configs(name, {"model_type": "mpt", "n_heads": e["heads"], "max_seq_len": n})
        bias = table(path, "bias")[:, 0, :]
        np.testing.assert_array_equal(bias[:, e["positions"]], arrays[e["bias"]], err_msg=name)
        np.testing.assert_array_equal(table(path, "slopes"), arrays[e["slopes"]], err_msg=name)


def test_falcon_alibi_is_what_falcon_model_folds_into_its_mask(ref, configs):
    """Falcon-RW-1B (alibi: true, 32 heads x 64) and the default 71 heads: bfloat16 slopes, the product in
    bfloat16, divided by sqrt(head_dim) - in the bias and in the slopes (head 30: 0.00058, not 0.0046)."""
    index, arrays = ref
    seen = 0
    for name, e in entries(index, "falcon"):
        heads, hd = e["heads"], e["head_dim"]
        cfg = {"model_type": "falcon", "alibi": True, "num_attention_heads": heads, "hidden_size": heads * hd}
        path = configs(name.replace(":", "_"), cfg)
        n = 32768 if heads <= 32 else 4096  # keys to 32767 in bfloat16 steps for Falcon-RW-1B's 32 heads
        cols = [p for p in e["positions"] if p < n]
        bias = table(path, "bias", length=n)[:, 0, :]
        np.testing.assert_array_equal(bias[:, cols], arrays[e["bias"]][:, : len(cols)], err_msg=name)
        slopes = table(path, "slopes", length=n)
        np.testing.assert_array_equal(slopes, arrays[e["slopes"]], err_msg=name)
        seen += 1
    assert seen == 3
    rw = index["falcon:hooked:heads=32,hidden_size=2048"]
    assert abs(arrays[rw["slopes"]][30] - 0.00058) < 1e-5


# ----- sinusoids: the rows the model adds -------------------------------------------------------------------------
def _float32_torch_close(got: np.ndarray, want: np.ndarray, rows: list[int], offset: int, w: np.ndarray) -> None:
    t = (np.asarray(rows, dtype=np.float64) + offset)[:, None]
    bound = t * np.tile(w, 2)[: got.shape[1]] * 2.0**-23 + 2 * 2.0**-24
    assert got.shape == want.shape
    assert np.all(np.abs(got - want) <= bound), float(np.max(np.abs(got - want) - bound))
    assert np.mean(got == want) > 0.9


def test_fairseq_sinusoids_are_the_rows_added_to_tokens(ref, configs):
    """M2M100 and Speech2Text add buffer rows padding_idx + 1.. to tokens 0..N-1: row 0 of the table is
    position value 2, never the zero padding row; ``rows=buffer`` is the module's whole buffer (one test over the
    three tables: :func:`tests.each.each` names each failing one)."""
    cases = [
        ("m2m_100:max_position_embeddings", None),
        ("speech_to_text:max_source_positions", "encoder"),
        ("speech_to_text:max_target_positions", "decoder"),
    ]
    each(cases, lambda case: _fairseq_rows_added(ref, configs, *case))


def _fairseq_rows_added(ref, configs, name, layer_type):
    index, arrays = ref
    e = index[name]
    mt, key = name.split(":")
    path = configs(name.replace(":", "_"), {"model_type": mt, "d_model": e["dim"], key: e["length"],
                                            "pad_token_id": e["pad_token_id"]})  # fmt: skip
    src = open_source(path, layer_type=layer_type)
    got = np.asarray(src.array("pe"))
    assert got.shape == (e["length"], e["dim"])
    assert src.metadata["position_rows"].startswith("added")
    w = src.encoding.inv_freq()
    _float32_torch_close(got[e["rows"]], arrays[e["added"]], e["rows"], e["pad_token_id"] + 1, w)
    buf = open_source(path, layer_type=layer_type, params={"rows": "buffer"})
    raw = np.asarray(buf.array("pe"))
    assert raw.shape == (e["buffer_rows"], e["dim"]) and buf.metadata["position_rows"].startswith("buffer")
    _float32_torch_close(raw[e["buffer_rows_kept"]], arrays[e["buffer"]], e["buffer_rows_kept"], 0, w)
    assert not raw[e["pad_token_id"]].any()


def test_a_padding_id_past_the_buffer_is_still_the_models_rows(configs):
    """The module grows its buffer to padding_idx + 1 + N (``make_weights``): the added rows need no check."""
    path = configs("m2m_pad", {"model_type": "m2m_100", "d_model": 16, "max_position_embeddings": 8,
                               "pad_token_id": 50})  # fmt: skip
    src = open_source(path)
    assert src.encoding.params()["offset"] == 51
    with pytest.raises(ParameterError, match="pad_token_id=50"):
        open_source(path, params={"rows": "buffer"})


def test_marian_like_sinusoids_are_added_from_row_zero(ref, configs):
    index, arrays = ref

    def check(name):
        e = index[name]
        mt, key = name.split(":")
        path = configs(name.replace(":", "_"), {"model_type": mt, "d_model": e["dim"], key: e["length"]})
        got = table(path)
        np.testing.assert_array_equal(got[e["rows"]], arrays[e["added"]])

    each(["marian:max_position_embeddings", "pegasus:max_position_embeddings"], check)


def test_whisper_encoder_sinusoids(ref, configs):
    index, arrays = ref
    e = index["whisper:encoder"]
    path = configs("whisper_enc", {"model_type": "whisper", "d_model": e["dim"], "max_source_positions": e["length"]})
    src = open_source(path, layer_type="encoder")
    got = np.asarray(src.array("pe"))
    _float32_torch_close(got[e["rows"]], arrays[e["added"]], e["rows"], 0, src.encoding.inv_freq())


# ----- learned tables: the rows the module returns ----------------------------------------------------------------
LEARNED = {
    # name: (config, tensor names, layer type)
    "opt:learned": ({"model_type": "opt", "max_position_embeddings": 40}, ["model.decoder.embed_positions.weight"],
                    None),
    "bart:learned": ({"model_type": "bart", "max_position_embeddings": 40},
                     ["model.encoder.embed_positions.weight", "model.decoder.embed_positions.weight"], "decoder"),
    "mbart:learned": ({"model_type": "mbart", "max_position_embeddings": 40},
                      ["model.encoder.embed_positions.weight", "model.decoder.embed_positions.weight"], "encoder"),
    "roberta:learned": ({"model_type": "roberta", "max_position_embeddings": 40, "pad_token_id": 1},
                        ["roberta.embeddings.position_embeddings.weight"], None),
    "whisper:decoder:learned": ({"model_type": "whisper", "max_target_positions": 40},
                                ["model.decoder.embed_positions.weight"], "decoder"),
}  # fmt: skip


def test_learned_tables_are_the_rows_the_module_adds(ref, configs):
    """Each of :data:`LEARNED` (one test over them: :func:`tests.each.each` names each failing one)."""
    each(sorted(LEARNED), lambda name: _learned_rows_added(ref, configs, name))


def _learned_rows_added(ref, configs, name):
    index, arrays = ref
    e = index[name]
    cfg, tensors, lt = LEARNED[name]
    weight = arrays[e["weight"]].copy()
    if cfg.get("pad_token_id") is not None:  # nn.Embedding keeps its padding_idx row zero (the reader checks it);
        weight[cfg["pad_token_id"]] = 0  # the reference's seeded matrix is not a model's: that row is never added
    dims = {"d_model": weight.shape[1], "hidden_size": weight.shape[1]}
    path = configs(name.replace(":", "_"), {**cfg, **dims}, dict.fromkeys(tensors, weight))
    src = open_source(path, length=e["tokens"], layer_type=lt)
    np.testing.assert_array_equal(np.asarray(src.array("pe")), arrays[e["added"]])
    assert src.metadata["position_rows"].startswith("added")
    raw = open_source(path, layer_type=lt, params={"rows": "buffer"})
    np.testing.assert_array_equal(np.asarray(raw.array("pe")), weight)
    assert raw.metadata["position_rows"].startswith("buffer") and raw.metadata["first_row"] == "0"


def test_rows_is_refused_where_it_cannot_apply(configs):
    path = configs("llama_rows", {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4})
    with pytest.raises(ParameterError, match="rows=buffer applies to learned and sinusoidal"):
        open_source(path, params={"rows": "buffer"})
    m2m = configs("m2m_rows", {"model_type": "m2m_100", "d_model": 16, "max_position_embeddings": 8})
    with pytest.raises(ParameterError, match="unknown rows='raw'; choose from: added, buffer"):
        open_source(m2m, params={"rows": "raw"})


def test_every_layer_type_takes_rows_and_says_which(tmp_path):
    """--all-layer-types: the same convention and metadata as one layer type (Speech2Text's encoder and decoder)."""
    from posenc_cli.formats import read_table

    from .conftest import cli

    cfg = str(ROOT / "tests" / "data" / "configs" / "positions" / "pos_s2t_small.json")
    for extra, rows, word in (([], (6000, 1024), "added"), (["-p", "rows=buffer"], (6002, 1026), "buffer")):
        out = tmp_path / f"{word}.safetensors"
        code, _, err = cli(["generate", "--hf-config", cfg, "--all-layer-types", *extra, "-o", str(out)])
        assert code == 0, err
        t = read_table(str(out))
        assert t.metadata["position_rows"].startswith(word)
        assert (t.tensors["encoder.pe"].shape[0], t.tensors["decoder.pe"].shape[0]) == rows
    llama = str(ROOT / "tests" / "data" / "configs" / "gemma3.json")
    code, out, err = cli(["generate", "--hf-config", llama, "--all-layer-types", "--len", "8", "-p", "rows=buffer",
                          "-o", str(tmp_path / "g.safetensors")])  # fmt: skip
    assert code == 2 and "rows=buffer applies to learned and sinusoidal tables" in err
