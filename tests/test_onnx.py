"""ONNX models as sources: caches found in onnxruntime-genai's layouts, written bit for bit, checked against the
model's config with each export mistake named, hostile files refused in one line.

The models are built in the test with onnx.helper (tests/onnx_models.py), their caches computed with plain numpy
following onnxruntime-genai's builder; each mistake is built the same way with the builder's arithmetic changed,
never with posenc's generator. Needs the onnx extra (skipped without it)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from .conftest import cli
from .each import each

onnx = pytest.importorskip("onnx", reason="the onnx extra (pip install 'posenc-cli[onnx]') is not installed")

from .onnx_models import genai_caches, rotary_model, save, su_mscale, yarn_mscale  # noqa: E402

HEAD, HEADS, MAXPOS, ORIG, THETA = 64, 4, 8192, 2048, 10000.0
YARN = {"original": ORIG, "beta_fast": 32.0, "beta_slow": 1.0, "factor": 4.0}
YARN_CONFIG = {
    "model_type": "llama", "hidden_size": HEAD * HEADS, "num_attention_heads": HEADS, "num_key_value_heads": 2,
    "max_position_embeddings": MAXPOS, "rope_theta": THETA,
    "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": ORIG,
                     "beta_fast": 32.0, "beta_slow": 1.0},
}  # fmt: skip
rng = np.random.default_rng(7)
SHORT = [float(x) for x in np.round(1 + rng.random(HEAD // 2) * 0.2, 4)]
LONG = [float(x) for x in np.round(1 + np.linspace(0, 30, HEAD // 2), 4)]
PHI_CONFIG = {
    "model_type": "phi3", "hidden_size": HEAD * HEADS, "num_attention_heads": HEADS, "num_key_value_heads": HEADS,
    "max_position_embeddings": MAXPOS, "original_max_position_embeddings": ORIG, "rope_theta": THETA,
    "rope_scaling": {"type": "longrope", "short_factor": SHORT, "long_factor": LONG},
}  # fmt: skip
SU = su_mscale(MAXPOS / ORIG, ORIG)


def yarn_caches(**kw):
    args = {"yarn": YARN, "mscale": yarn_mscale(4.0), "round_range": True}
    length = kw.pop("length", MAXPOS)
    args.update(kw)
    return genai_caches(HEAD, kw.pop("theta", THETA), length, **{k: v for k, v in args.items() if k != "theta"})


def phi_caches(io_dtype="float32"):
    small = genai_caches(HEAD, THETA, ORIG, rescale=np.array(SHORT), mscale=SU, io_dtype=io_dtype)
    large = genai_caches(HEAD, THETA, MAXPOS, rescale=np.array(LONG), mscale=SU, io_dtype=io_dtype)
    return small, large


def write(tmp_path: Path, name: str, model, config: dict, external: str | None = None) -> tuple[str, str]:
    path = tmp_path / f"{name}.onnx"
    save(model, str(path), external=external)
    cfg = tmp_path / f"{name}.json"
    cfg.write_text(json.dumps(config))
    return str(path), str(cfg)


def check(tmp_path, name, model, config=YARN_CONFIG, external=None):
    """(exit code, the verdict and each divergence and match on a line of its own, stderr): from --json, since the
    report wraps lines at 80 columns."""
    path, cfg = write(tmp_path, name, model, config, external)
    code, out, err = cli(["check", path, "--against", cfg, "--json"])
    if code == 2:
        return code, "", err
    data = json.loads(out)
    text = "\n".join(["OK" if data["ok"] else "DIVERGES", *data["divergences"], *data["matched"]])
    return code, text + "\n", err


# ----- faithful exports: exit 0 ----------------------------------------------------------------------------
def test_faithful_yarn_export_passes(tmp_path):
    """Each rotary op with its caches as initializers and as Constant nodes (each failing case named)."""

    def passes(case):
        op, layout = case
        model = rotary_model({"": yarn_caches()}, num_heads=HEADS, head_size=HEAD, op=op, layout=layout,
                             kv_num_heads=2)  # fmt: skip
        code, out, err = check(tmp_path, f"good-{op}-{layout}", model)
        assert code == 0, out + err
        assert "OK" in out and "equals hf's tables" in out

    each([(op, layout) for layout in ("initializer", "constant") for op in ("contrib", "onnx", "gqa")], passes)


def test_faithful_export_with_external_data_passes(tmp_path):
    model = rotary_model({"": yarn_caches()}, num_heads=HEADS, head_size=HEAD)
    code, out, err = check(tmp_path, "ext", model, external="ext.onnx.data")
    assert (tmp_path / "ext.onnx.data").stat().st_size == 2 * MAXPOS * HEAD // 2 * 4
    assert code == 0, out + err


def test_faithful_phi_longrope_export_passes(tmp_path):
    """LongRoPE's two caches in an If, concatenated as one initializer and joined by a Concat node."""
    small, large = phi_caches()

    def passes(layout):
        model = rotary_model({"small": small, "large": large}, num_heads=HEADS, head_size=HEAD, layout=layout,
                             threshold=ORIG)  # fmt: skip
        code, out, err = check(tmp_path, f"phi-{layout}", model, PHI_CONFIG)
        assert code == 0, out + err
        assert out.count("equals hf's tables") == 2

    each(["if", "concat", "concat-node"], passes)


# ----- each mistake named: exit 1 ----------------------------------------------------------------------------
MISTAKES = {
    "short": (lambda: yarn_caches(length=4096), {}, ["4096 rows, shorter than the model's max_position_embeddings 8192"]),
    "base": (lambda: yarn_caches(theta=50000.0), {}, ["base 50000 (the config's rope_theta is 10000)"]),
    "scaling-missing": (lambda: yarn_caches(mscale=1.0), {}, ["attention scaling missing"]),
    "scaling-twice": (lambda: yarn_caches(mscale=yarn_mscale(4.0) ** 2), {}, ["attention scaling applied twice"]),
    "yarn-not-applied": (lambda: genai_caches(HEAD, THETA, MAXPOS), {},
                         ["attention scaling missing", "YaRN not applied"]),
    "not-rounded": (lambda: yarn_caches(round_range=False), {}, ["YaRN correction range not rounded"]),
    "rotary-dim": (lambda: yarn_caches(), {"rotary_dim": 32}, ["rotary_embedding_dim=32, but the model rotates 64"]),
    "interleaved": (lambda: yarn_caches(), {"interleaved": 1}, ["interleaved=1", "layout half (interleaved=0)"]),
    "narrow-dtype": (lambda: yarn_caches(io_dtype="float16"), {},
                     ["stored as float16, but the nodes compute in float32: precision lost"]),
    "rounded-values": (lambda: tuple(c.astype(np.float16).astype(np.float32) for c in yarn_caches()), {},
                       ["every value is a float16 number"]),
}  # fmt: skip


def test_each_export_mistake_is_named(tmp_path):
    """Each of MISTAKES (each failing one named)."""

    def named(name):
        caches, node, needles = MISTAKES[name]
        model = rotary_model({"": caches()}, num_heads=HEADS, head_size=HEAD, **node)
        code, out, err = check(tmp_path, name, model)
        assert code == 1, out + err
        for needle in needles:
            assert needle in out, out
        assert "not explained" not in out, out

    each(MISTAKES, named)


def test_partial_cache_width_is_named(tmp_path):
    model = rotary_model(
        {"": genai_caches(HEAD, THETA, MAXPOS, rot_dim=32)}, num_heads=HEADS, head_size=HEAD, rotary_dim=32
    )
    code, out, _ = check(tmp_path, "width", model)
    assert code == 1
    assert "16 columns hold rotary dimension 32, but the model rotates 64" in out


def test_longrope_small_and_large_swapped_is_named(tmp_path):
    """In an If and in a concatenated cache."""
    # the builder's caches with the factor lists exchanged: small cache from long_factor, large from short_factor
    swapped_small = genai_caches(HEAD, THETA, ORIG, rescale=np.array(LONG), mscale=SU)
    swapped_large = genai_caches(HEAD, THETA, MAXPOS, rescale=np.array(SHORT), mscale=SU)

    def named(layout):
        model = rotary_model({"small": swapped_small, "large": swapped_large}, num_heads=HEADS, head_size=HEAD,
                             layout=layout, threshold=ORIG)  # fmt: skip
        code, out, _ = check(tmp_path, f"swap-{layout}", model, PHI_CONFIG)
        assert code == 1
        assert "LongRoPE small/large caches swapped" in out, out

    each(["if", "concat"], named)


def test_json_lists_divergences(tmp_path):
    path, cfg = write(tmp_path, "j", rotary_model({"": yarn_caches(mscale=1.0)}, num_heads=HEADS, head_size=HEAD),
                      YARN_CONFIG)  # fmt: skip
    code, out, _ = cli(["check", path, "--against", cfg, "--json"])
    data = json.loads(out)
    assert code == 1 and data["ok"] is False and data["engine"] == "hf"
    assert any("attention scaling missing" in d for d in data["divergences"])


# ----- generate/export: the caches as stored, bit for bit --------------------------------------------------
def test_generate_writes_the_caches_bit_for_bit_with_provenance(tmp_path):
    """Each I/O dtype to each format (:func:`tests.each.each`: each failure named)."""
    cases = [(d, s) for s in ("safetensors", "npz") for d in ("float32", "float16", "bfloat16")]
    each(cases, lambda c: _generate_writes_the_caches(tmp_path / f"{c[0]}-{c[1]}", *c))


def _generate_writes_the_caches(tmp_path, io_dtype, suffix):
    from posenc_cli.formats import read_table

    tmp_path.mkdir()
    cos, sin = yarn_caches(length=512)
    if io_dtype == "bfloat16":
        import ml_dtypes

        cos, sin = cos.astype(ml_dtypes.bfloat16), sin.astype(ml_dtypes.bfloat16)
    else:
        cos, sin = cos.astype(io_dtype), sin.astype(io_dtype)
    model = rotary_model({"": (cos, sin)}, num_heads=HEADS, head_size=HEAD, io_dtype=io_dtype)
    path, _ = write(tmp_path, "m", model, YARN_CONFIG, external="m.onnx.data")
    out = tmp_path / f"caches.{suffix}"
    code, _, err = cli(["generate", path, "-o", str(out)])
    if io_dtype == "bfloat16" and suffix == "npz":  # NumPy has no bfloat16: refused by name, nothing written
        assert code == 2 and "bfloat16 cannot be stored in .npz" in err and not out.exists()
        return
    assert code == 0, err
    got = read_table(str(out))
    for name, ref in (("cos_cache", cos), ("sin_cache", sin)):
        arr = np.asarray(got.tensors[name])
        assert arr.dtype == ref.dtype and arr.shape == ref.shape and arr.tobytes() == ref.tobytes()
    meta = got.metadata
    assert meta["onnx.cos_cache.from"] == "initializer cos_cache"
    assert meta["onnx.nodes"] == "/model/layers.0/attn/q_rotary/RotaryEmbedding"
    assert meta["onnx.interleaved"] == "0" and meta["onnx.io_dtype"] == io_dtype


def test_export_of_if_branches_writes_groups(tmp_path):
    from safetensors import safe_open

    small, large = phi_caches()
    path, _ = write(tmp_path, "p", rotary_model({"small": small, "large": large}, num_heads=HEADS, head_size=HEAD,
                                               layout="if", threshold=ORIG), PHI_CONFIG)  # fmt: skip
    out = tmp_path / "p.safetensors"
    code, _, err = cli(["export", path, "-o", str(out)])
    assert code == 0, err
    with safe_open(str(out), "np") as fh:
        meta = fh.metadata()
        assert fh.get_tensor("short.cos_cache").tobytes() == small[0].tobytes()
        assert fh.get_tensor("long.sin_cache").tobytes() == large[1].tobytes()
    assert meta["posenc_groups"] == "long,short"
    assert meta["long.onnx.cos_cache.from"].startswith("Constant node /large/cos_cache/Constant in If")
    assert meta["long.onnx.switch_above"] == str(ORIG)


# ----- hostile files: one line, exit 2 -------------------------------------------------------------------------
def _one_line(code, err, needle):
    assert code == 2, err
    assert err.count("\n") == 1, err
    assert needle in err, err


def test_not_a_model(tmp_path):
    bad = tmp_path / "x.onnx"
    bad.write_bytes(b"\x93NUMPY garbage \xff\xfe" * 10)
    code, _, err = cli(["generate", str(bad), "-o", str(tmp_path / "o.npz")])
    _one_line(code, err, "not an ONNX model")
    (tmp_path / "e.onnx").write_bytes(b"")
    code, _, err = cli(["export", str(tmp_path / "e.onnx"), "-o", str(tmp_path / "o.npz")])
    _one_line(code, err, "no graph nodes")


def _external_model(location: str, dims=(8, 4), length: int | None = None):
    from onnx import TensorProto

    model = rotary_model({"": yarn_caches(length=8)}, num_heads=HEADS, head_size=HEAD)
    for init in model.graph.initializer:
        if init.name == "cos_cache":
            init.ClearField("raw_data")
            del init.dims[:]
            init.dims.extend(dims)
            init.data_location = TensorProto.EXTERNAL
            n = int(np.prod(dims)) * 4 if length is None else length
            for k, v in (("location", location), ("offset", "0"), ("length", str(n))):
                e = init.external_data.add()
                e.key, e.value = k, v
    return model


def test_external_data_outside_the_directory_is_refused(tmp_path):
    """A relative path up, an absolute one, and one up through a subfolder."""
    (tmp_path / "outside.data").write_bytes(b"\0" * 4096)
    d = tmp_path / "model"
    d.mkdir()

    def refused(location):
        onnx.save(_external_model(location), str(d / "m.onnx"))
        code, _, err = cli(["export", str(d / "m.onnx"), "-o", str(tmp_path / "o.npz")])
        _one_line(code, err, "outside the model's directory")

    each(["../outside.data", "/etc/passwd", "sub/../../x.data"], refused)


def test_symlink_out_of_the_directory_is_refused(tmp_path):
    (tmp_path / "outside.data").write_bytes(b"\0" * 4096)
    d = tmp_path / "model"
    d.mkdir()
    (d / "link.data").symlink_to(tmp_path / "outside.data")
    onnx.save(_external_model("link.data"), str(d / "m.onnx"))
    code, _, err = cli(["export", str(d / "m.onnx"), "-o", str(tmp_path / "o.npz")])
    _one_line(code, err, "outside the model's directory")


def test_huge_initializer_is_refused_before_reading(tmp_path):
    import resource

    (tmp_path / "m.onnx.data").write_bytes(b"\0" * 64)
    onnx.save(_external_model("m.onnx.data", dims=(2**20, 2**20)), str(tmp_path / "m.onnx"))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    code, _, err = cli(["export", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "o.npz")])
    _one_line(code, err, "above the")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200 * 1024  # kB: nothing of 4 TiB read
    # a size within the limit that the data file cannot hold
    onnx.save(_external_model("m.onnx.data", dims=(64, 32)), str(tmp_path / "m2.onnx"))
    code, _, err = cli(["export", str(tmp_path / "m2.onnx"), "-o", str(tmp_path / "o.npz")])
    _one_line(code, err, "which holds 64")


def test_cycle_inside_a_subgraph_is_refused(tmp_path):
    from onnx import helper

    small, large = phi_caches()
    model = rotary_model({"small": small, "large": large}, num_heads=HEADS, head_size=HEAD, layout="if",
                         threshold=ORIG)  # fmt: skip
    if_node = next(n for n in model.graph.node if n.op_type == "If")
    then = next(a.g for a in if_node.attribute if a.name == "then_branch")
    then.node.append(helper.make_node("Identity", ["loop_b"], ["loop_a"], name="a"))
    then.node.append(helper.make_node("Identity", ["loop_a"], ["loop_b"], name="b"))
    then.output[0].name = "loop_a"
    onnx.save(model, str(tmp_path / "c.onnx"))
    code, _, err = cli(["export", str(tmp_path / "c.onnx"), "-o", str(tmp_path / "o.npz")])
    _one_line(code, err, "a cycle in the graph")


def test_missing_inputs_are_refused(tmp_path):
    model = rotary_model({"": yarn_caches(length=8)}, num_heads=HEADS, head_size=HEAD, op="gqa")
    node = model.graph.node[-1]
    del node.input[7:]
    onnx.save(model, str(tmp_path / "a.onnx"))
    code, _, err = cli(["export", str(tmp_path / "a.onnx"), "-o", str(tmp_path / "o.npz")])
    _one_line(code, err, "has no cos_cache input (input 7)")
    model = rotary_model({"": yarn_caches(length=8)}, num_heads=HEADS, head_size=HEAD)
    model.graph.node[-1].input[2] = "nowhere"
    onnx.save(model, str(tmp_path / "b.onnx"))
    code, _, err = cli(["export", str(tmp_path / "b.onnx"), "-o", str(tmp_path / "o.npz")])
    _one_line(code, err, "reads nowhere, which no initializer, input or node produces")


def test_no_rotary_node_is_refused(tmp_path):
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [2])
    graph = helper.make_graph([helper.make_node("Identity", ["X"], ["Y"])], "g", [x],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2])])  # fmt: skip
    onnx.save(helper.make_model(graph), str(tmp_path / "n.onnx"))
    code, _, err = cli(["export", str(tmp_path / "n.onnx"), "-o", str(tmp_path / "o.npz")])
    _one_line(code, err, "no rotary node")


def test_options_that_cannot_apply_are_refused(tmp_path):
    path, cfg = write(tmp_path, "o", rotary_model({"": yarn_caches(length=8)}, num_heads=HEADS, head_size=HEAD),
                      YARN_CONFIG)  # fmt: skip
    code, _, err = cli(["generate", path, "--len", "5", "-o", str(tmp_path / "o.npz")])
    _one_line(code, err, "--len")
    code, _, err = cli(["check", path, "--against", cfg, "--dtype", "float16"])
    _one_line(code, err, "--dtype cannot apply")


# ----- what the runtimes do with the caches (golden outputs of onnxruntime CPU and onnx.reference) -----------
GOLDEN = json.loads((Path(__file__).parent / "data" / "golden" / "onnx_rotary.json").read_text())


def _golden_model(name: str):
    g = GOLDEN
    yarn = genai_caches(HEAD, THETA, MAXPOS, yarn=YARN, mscale=yarn_mscale(4.0), round_range=True)
    su = su_mscale(MAXPOS / ORIG, ORIG)
    if name == "phi-if-contrib":
        caches = {"small": genai_caches(HEAD, THETA, ORIG, rescale=np.array(g["short_factor"]), mscale=su),
                  "large": genai_caches(HEAD, THETA, MAXPOS, rescale=np.array(g["long_factor"]), mscale=su)}  # fmt: skip
        return rotary_model(caches, num_heads=HEADS, head_size=HEAD, layout="if", threshold=ORIG)
    if name == "plain-onnx23-interleaved":
        return rotary_model({"": genai_caches(HEAD, THETA, MAXPOS)}, num_heads=HEADS, head_size=HEAD, op="onnx",
                            interleaved=1)  # fmt: skip
    return rotary_model({"": yarn}, num_heads=HEADS, head_size=HEAD, op="contrib" if "contrib" in name else "onnx")


def test_caches_read_are_what_the_runtimes_rotate_with(tmp_path):
    """Each golden model (each failing one named)."""
    from posenc_cli.models.onnx import read_onnx

    def rotated(name):
        path = tmp_path / f"{name}.onnx"
        save(_golden_model(name), str(path))
        (cache,) = read_onnx(str(path)).caches
        for engine, ref in GOLDEN["cases"][name].items():
            rows = ref["positions"]
            np.testing.assert_allclose(cache.cos[rows], ref["cos"], rtol=0, atol=4e-7, err_msg=engine)
            np.testing.assert_allclose(cache.sin[rows], ref["sin"], rtol=0, atol=4e-7, err_msg=engine)

    each(["yarn-contrib", "yarn-onnx23", "plain-onnx23-interleaved"], rotated)


def test_longrope_branch_names_follow_what_onnxruntime_chooses(tmp_path):
    from posenc_cli.models.onnx import read_onnx

    path = tmp_path / "g.onnx"
    save(_golden_model("phi-if-contrib"), str(path))
    caches = {c.group: c for c in read_onnx(str(path)).caches}
    ref = GOLDEN["cases"]["phi-if-contrib"]
    at_orig, past = ref[f"onnxruntime@{ORIG}"], ref[f"onnxruntime@{ORIG + 1}"]
    assert not np.allclose(at_orig["cos"][1], past["cos"][1])  # the runtime did switch caches
    rows = at_orig["positions"]
    np.testing.assert_allclose(caches["short"].cos[rows], at_orig["cos"], rtol=0, atol=4e-7)
    np.testing.assert_allclose(caches["long"].sin[past["positions"]], past["sin"], rtol=0, atol=4e-7)
    np.testing.assert_allclose(caches["long"].cos[ref[f"onnxruntime@{MAXPOS}"]["positions"]],
                               ref[f"onnxruntime@{MAXPOS}"]["cos"], rtol=0, atol=4e-7)  # fmt: skip


def test_check_against_an_engine_expects_that_engine_s_tables(tmp_path):
    """onnxruntime-genai's own builder never rounds the correction range: faithful to onnx-genai, not to HF."""
    model = rotary_model({"": yarn_caches(round_range=False)}, num_heads=HEADS, head_size=HEAD)
    path, cfg = write(tmp_path, "g", model, YARN_CONFIG)
    assert cli(["check", path, "--against", cfg])[0] == 1
    code, out, err = cli(["check", path, "--against", cfg, "--engine", "onnx-genai"])
    assert code == 0, out.decode() + err
    code, out, err = cli(["check", path, "--against", f"{cfg}@onnx-genai"])
    assert code == 0, out.decode() + err


def test_an_error_beyond_float32_rounding_is_not_waved_through(tmp_path):
    """The tolerance is the exporter's float32 rounding (|t w| 2**-24, with margin), not more: a faithful cache
    with one value off by 0.02 at the last position (float32 rounding there: ~5e-4) is a divergence."""
    cos, sin = yarn_caches()
    cos = cos.copy()
    cos[-1, 5] += np.float32(0.02)
    code, out, _ = check(tmp_path, "nudged", rotary_model({"": (cos, sin)}, num_heads=HEADS, head_size=HEAD))
    assert code == 1
    assert "values differ from hf's tables for the config by 0.0" in out, out
    assert "at position 8191, pair 5" in out and "not explained" in out, out


def test_float16_caches_behind_a_cast_are_named(tmp_path):
    cos, sin = yarn_caches(io_dtype="float16")
    model = rotary_model({"": (cos, sin)}, num_heads=HEADS, head_size=HEAD, layout="cast")
    code, out, _ = check(tmp_path, "cast", model)
    assert code == 1
    assert "every value is a float16 number" in out and "cast to float32 by /model/cos/Cast" in out, out


def test_concat_node_parts_are_in_the_metadata(tmp_path):
    from posenc_cli.models.onnx import read_onnx

    small, large = phi_caches()
    path, _ = write(tmp_path, "c", rotary_model({"small": small, "large": large}, num_heads=HEADS, head_size=HEAD,
                                               layout="concat-node"), PHI_CONFIG)  # fmt: skip
    (cache,) = read_onnx(path).caches
    assert cache.parts == [(ORIG, "initializer cos_small"), (MAXPOS, "initializer cos_large")]
    assert cache.cos_from == "Concat node /model/cos/Concat"


def test_interleaved_model_needs_interleaved_nodes(tmp_path):
    """Cohere rotates pairs (2k, 2k + 1) (transformers' CohereRotaryEmbedding repeat_interleave): an export must
    set interleaved=1 (exit 0; interleaved=0: exit 1); the caches themselves are the same half-width tables."""
    cfg = {"model_type": "cohere", "hidden_size": HEAD * HEADS, "num_attention_heads": HEADS,
           "max_position_embeddings": 4096, "rope_theta": THETA}  # fmt: skip

    def judged(case):
        interleaved, code = case
        model = rotary_model({"": genai_caches(HEAD, THETA, 4096)}, num_heads=HEADS, head_size=HEAD, op="onnx",
                             interleaved=interleaved)  # fmt: skip
        got, out, _ = check(tmp_path, f"cohere{interleaved}", model, cfg)
        assert got == code, out
        if code:
            assert "interleaved=0 rotates rotate_half pairs (j, j + r/2), but cohere uses layout interleaved" in out

    each([(1, 0), (0, 1)], judged)


def test_the_checks_expected_rows_are_the_exact_ones_within_float64_rounding():
    """``check`` compares a cache with rows from angle addition (Rope.fill_near), not from the exact range
    reduction (fill): within 10 s 2**-53 of them (s the attention scaling) wherever a row sits, for each tensor
    and layout; where angle addition does not serve (rounded angles, a short table), fill's rows themselves."""
    from posenc_cli.encodings import make_encoding

    yarn = {"scaling": "yarn", "factor": 4.0, "original_max_position_embeddings": ORIG}
    cases = [
        ({"cache": "onnx", **yarn}, True),
        ({"cache": "onnx", "offset": 70000, "sin_sign": -1}, True),
        ({"layout": "interleaved", **yarn}, True),
        ({"cache": "onnx", "angle_dtype": "float16"}, False),  # angles rounded to float16: fill itself
        ({"cache": "onnx", "length": 64}, False),  # too short for angle addition: fill itself
    ]

    def near(case):
        params, added = case
        enc = make_encoding("rope", {"dim": HEAD, "base": THETA, "length": 2048, "dtype": "float64", **params})
        s = float(enc.attention_scaling)
        names = tuple(name for name in enc.tensor_specs() if name != "inv_freq")  # cos and sin at once
        n, width = enc.tensor_specs()[names[0]].shape
        for start, stop in ((0, n), (n // 3, n // 3 + 300)):  # whole, and a block from within a step
            got = tuple(np.full((stop - start, width), np.nan) for _ in names)
            enc.fill_near(names, start, stop, got)
            for name, near in zip(names, got):
                exact = np.empty((stop - start, width))
                enc.fill(name, start, stop, exact)
                diff = float(np.max(np.abs(near - exact)))
                if added:  # not the exact rows (angle addition did serve), and within its bound of them
                    assert 0 < diff <= 10 * s * 2.0**-53, (name, start, diff)
                else:
                    assert near.tobytes() == exact.tobytes(), (name, start)

    each(cases, near)
