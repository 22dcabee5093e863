"""ViT-family position tables: torch's resampling kernels in NumPy, each model type's rule, timm's, compare.

Goldens come from the references' own code, run once in the side environment:
tools/golden/resample_torch.py (``F.interpolate`` of torch 2.13 over random grids, every mode) and
tools/golden/vision_models.py (tiny random models of transformers 5.24 and timm 1.0.31 saved under
tests/data/models/vision_*, and the rows each model's own code adds at eight image sizes).
"""

from __future__ import annotations

import json
import shutil
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from posenc_cli.encodings.resample import Resampling, resample
from posenc_cli.errors import ParameterError
from posenc_cli.inspect.diagnose.resampling import noise
from posenc_cli.models.config_file import load_config
from posenc_cli.models.records import RECORDS
from posenc_cli.models.vision import parse_image_size, vision_table

from .conftest import cli
from .each import each

DATA = Path(__file__).resolve().parent / "data"
MODELS = DATA / "models"
DOCS_MODEL = DATA.parent.parent / "docs" / "examples" / "dinov2-tiny"  # docs/vision.md's worked example


@cache
def kernel_goldens() -> dict[str, np.ndarray]:
    with np.load(DATA / "vision" / "resample_torch.npz") as z:
        return {k: z[k] for k in z.files}


@cache
def model_goldens() -> dict[str, np.ndarray]:
    with np.load(DATA / "vision" / "model_goldens.npz") as z:
        return {k: z[k] for k in z.files}


def kernel_cases() -> list[str]:
    return sorted(k[:-3] for k in kernel_goldens() if k.endswith("|in"))


def model_cases() -> list[str]:
    return sorted(k for k in model_goldens() if k.count("|") == 2)


# ----- the kernels --------------------------------------------------------------------------------------------
def test_kernel_goldens_cover_every_mode() -> None:
    seen = {tuple(c.split("|")[1:5]) for c in kernel_cases()}
    assert len(seen) == 16  # 2 modes x antialias x align_corners x (size, scale_factor)
    assert str(kernel_goldens()["torch_version"]).startswith("2.13")


def test_kernel_matches_torch() -> None:
    """Every golden case (:func:`tests.each.each`: each failure named; the goldens load when this runs)."""
    each(kernel_cases(), _kernel_matches_torch)


def _kernel_matches_torch(case: str) -> None:
    g = kernel_goldens()
    _, mode, aa, ac, by, a, b = case.split("|")
    rule = Resampling(mode, align_corners=ac == "1", antialias=aa == "1")
    grid, want = g[case + "|in"], g[case + "|out"]
    if by == "size":
        got = resample(grid, (int(a), int(b)), rule)
    else:
        got = resample(grid, rule=rule, scale_factor=(float(a), float(b)))
    assert got.shape == want.shape and got.dtype == np.float32
    assert np.abs(got - want).max() <= noise(grid), np.abs(got - want).max()


def test_kernel_properties() -> None:
    """Each mode, antialias and align_corners (one test over the eight: :func:`tests.each.each` names each
    failing rule)."""
    grid = np.random.default_rng(5).standard_normal((5, 6, 3)).astype(np.float32)
    const = np.full((5, 6, 2), 0.75, np.float32)

    def check(rule: Resampling) -> None:
        # the same size is the identity; a constant grid stays constant (the weights of each output sum to 1)
        np.testing.assert_array_equal(resample(grid, (5, 6), rule), grid)
        np.testing.assert_allclose(resample(const, (9, 4), rule), 0.75, rtol=2e-6)  # 16 weights, rounded

    rules = [Resampling(m, align_corners=ac, antialias=aa) for m in ("bicubic", "bilinear") for aa in (False, True)
             for ac in (False, True)]  # fmt: skip
    each(rules, check)


def test_scale_factor_differs_from_size() -> None:
    # DINO's original code passed scale_factor (new + 0.1) / old: the same grid, another source coordinate
    grid = np.random.default_rng(1).standard_normal((7, 7, 2)).astype(np.float32)
    by_size = resample(grid, (10, 10), Resampling())
    by_factor = resample(grid, rule=Resampling(), scale_factor=(10.1 / 7, 10.1 / 7))
    assert by_factor.shape == by_size.shape and np.abs(by_factor - by_size).max() > 1e-3


# ----- each model type's rule, against the model's own code ---------------------------------------------------
def test_model_rows_match_the_models_own_code() -> None:
    """Every model, engine and size of the goldens (:func:`tests.each.each`: each failure named)."""
    each(model_cases(), _model_rows_match)


def _model_rows_match(case: str) -> None:
    model, engine, size = case.split("|")
    path = str(DOCS_MODEL if model == "docs_dinov2" else MODELS / f"vision_{model}")
    rows, meta = vision_table(
        path,
        load_config(path),
        image_size=None if size == "native" else size,
        engine=None if model.startswith("timm") else engine,
    )
    want = model_goldens()[case]
    assert rows.shape == want.shape
    assert np.abs(rows - want).max() <= noise(want), np.abs(rows - want).max()
    h, w = (int(v) for v in meta["grid"].split("x"))
    assert h * w + len([e for e in meta["extra_rows"].split(",") if e]) == rows.shape[0]
    assert meta["resampling"].startswith(f"engine={engine}")


def test_every_record_has_goldens_at_four_sizes_at_least() -> None:
    with np.load(DATA / "vision" / "rules_goldens.npz") as z:  # tests/test_vision_rules.py checks those types
        own_rules = {k.split("|")[0] for k in z.files if "|" in k}
    with np.load(DATA / "vision" / "tower_goldens.npz") as z:  # tests/test_vision_towers.py holds these
        towers = [k for k in z.files if k.count("|") == 2]
    with np.load(DATA / "vision" / "gaps_goldens.npz") as z:  # tests/test_vision_gaps.py checks those types
        own_rules |= {k.split("|")[0] for k in z.files if "|" in k}
    for mt, rec in RECORDS.items():
        if rec.vision is None or mt in own_rules:
            continue
        sizes = {c.split("|")[2] for c in [*model_cases(), *towers] if c.startswith(mt + "|hf|")}
        need = 1 if rec.vision.resampling is None else 4  # Llama 4 runs at its native size only
        assert len(sizes) >= need and "native" in sizes, (mt, sizes)
        assert any(len(set(s.split("x"))) == 2 for s in sizes) or need == 1  # a non-square size


def test_extra_rows_and_their_order() -> None:
    def meta(model: str) -> dict[str, str]:
        path = str(MODELS / f"vision_{model}")
        return (
            vision_table(path, load_config(path), image_size="24x12")[1]
            if model != "llama4_vision_model"
            else (vision_table(path, load_config(path))[1])
        )

    assert meta("deit")["extra_rows"] == "0:cls,1:dist" and meta("deit")["grid_offset"] == "2"
    assert meta("siglip_vision_model")["extra_rows"] == "" and meta("siglip_vision_model")["grid_offset"] == "0"
    llama = meta("llama4_vision_model")
    assert llama["extra_rows"] == "16:cls" and llama["grid_offset"] == "0"
    reg = meta("timm_vit_reg")
    assert reg["extra_rows"] == "0:cls,1:reg0,2:reg1" and reg["grid"] == "6x3"
    assert "2 reg tokens" in meta("dinov2_with_registers")["unpositioned_tokens"]
    m = meta("vit")
    assert (m["image_size"], m["patch_size"], m["grid"], m["native_grid"]) == ("24x12", "4x4", "6x3", "4x4")


def test_hf_keeps_the_table_only_for_a_square_image_of_the_native_count() -> None:
    path = str(MODELS / "vision_vit")
    native = vision_table(path, load_config(path))[0]
    same_count_tall = vision_table(path, load_config(path), image_size="32x8")  # 8x2: 16 patches, not square
    floored_square = vision_table(path, load_config(path), image_size=18)  # 4x4 after flooring
    assert same_count_tall[1]["resampling"].startswith("engine=hf, bicubic")
    assert not np.array_equal(same_count_tall[0], native)
    np.testing.assert_array_equal(floored_square[0], native)
    assert "kept as it is" in floored_square[1]["resampling"]


def test_parse_image_size() -> None:
    assert parse_image_size("448x308") == (448, 308)
    assert parse_image_size("320") == (320, 320)
    assert parse_image_size((448, 308)) == (448, 308)
    for bad in ("0", "3x", "axb", "1x2x3", -4, 2.5):
        with pytest.raises(ParameterError):
            parse_image_size(bad)


# ----- the command line and the library -----------------------------------------------------------------------
def test_export_writes_the_grid_metadata(tmp_path: Path) -> None:
    out = tmp_path / "d.safetensors"
    code, _, err = cli(["export", str(MODELS / "vision_dinov2"), "--image-size", "24x12", "-o", str(out)])
    assert code == 0, err
    from posenc_cli.formats import read_table

    table = read_table(str(out))
    assert table.metadata["grid"] == "6x3" and table.metadata["grid_offset"] == "1"
    np.testing.assert_allclose(table.tensors["pe"], model_goldens()["dinov2|hf|24x12"], atol=noise(table.tensors["pe"]))


def test_generate_hf_config_and_the_library(tmp_path: Path) -> None:
    import posenc_cli as pe

    out = tmp_path / "t.npy"
    path = str(MODELS / "vision_timm_vit")  # a timm config.json: read as timm's (it was "missing hidden_size")
    code, _, err = cli(["generate", "--hf-config", path, "--image-size", "30x18", "-o", str(out)])
    assert code == 0, err
    np.testing.assert_allclose(np.load(out), model_goldens()["timm_vit|timm|30x18"], atol=1e-6)
    src = pe.open_table(path, image_size=(30, 18))
    assert src.metadata["grid"] == "7x4"
    np.testing.assert_array_equal(src.array("pe"), np.load(out))


def test_compare_names_antialias_between_hf_and_timm() -> None:
    vit = str(MODELS / "vision_vit")
    code, out, err = cli(["compare", vit, f"{vit}@timm", "--image-size", "24x12", "-q"])
    assert code == 1, err
    text = out.decode() + err
    assert "antialias=False vs antialias=True" in text and "(engine=hf)" in text and "(engine=timm)" in text


def test_compare_names_the_mode_of_siglip2_against_timm(tmp_path: Path) -> None:
    s2 = str(MODELS / "vision_siglip2_vision_model")
    files = []
    for i, extra in enumerate(([], ["--engine", "timm"])):
        files.append(str(tmp_path / f"{i}.safetensors"))
        assert cli(["export", s2, "--image-size", "24x12", *extra, "-o", files[-1]])[0] == 0
    code, out, err = cli(["compare", *files, "-q"])
    assert code == 1 and "they differ by bilinear vs bicubic" in out.decode() + err


def test_compare_of_two_tables_one_call_made_is_same() -> None:
    d = str(MODELS / "vision_dinov2_with_registers")  # HF's call here is timm's: bicubic with antialias
    code, out, err = cli(["compare", d, f"{d}@timm", "--image-size", "24x12", "-q"])
    assert code == 0 and "SAME" in out.decode() + err


# ----- bad input: one line, exit 2 ----------------------------------------------------------------------------
def _copy(tmp_path: Path, model: str) -> Path:
    dest = tmp_path / model
    shutil.copytree(MODELS / f"vision_{model}", dest)
    return dest


def _write_table(path: Path, name: str, table: np.ndarray) -> None:
    """Replace the model's weights with one tensor, written with plain NumPy (safetensors' own format)."""
    header = {name: {"dtype": "F32", "shape": list(table.shape), "data_offsets": [0, table.nbytes]}}
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    (path / "model.safetensors").write_bytes(len(raw).to_bytes(8, "little") + raw + table.astype("<f4").tobytes())


def test_bad_options(tmp_path: Path) -> None:
    cases = {
        ("--image-size", "3x16"): "--image-size 3x16 is smaller than one 4x4 patch",
        ("--image-size", "16xq"): "--image-size '16xq' is not H or HxW",
        ("--engine", "mlx"): "--engine mlx has no rule for a vision position table",
        ("--len", "5"): "--len cannot apply",
    }

    def check(args: tuple[str, ...]) -> None:
        code, _, err = cli(["export", str(MODELS / "vision_vit"), *args, "-o", str(tmp_path / "x.npy")])
        assert code == 2 and err.count("\n") == 1 and cases[args] in err, err

    each(cases, check)


def test_a_table_that_is_not_a_grid_plus_its_extra_rows(tmp_path: Path) -> None:
    model = _copy(tmp_path, "vit")
    _write_table(model, "embeddings.position_embeddings", np.zeros((1, 19, 8), np.float32))  # 18 + cls
    code, _, err = cli(["export", str(model), "-o", str(tmp_path / "x.npy")])
    assert code == 2 and err.count("\n") == 1, err
    assert "has 19 rows, which is not a square grid + 1 extra (cls)" in err


def test_a_table_that_does_not_match_its_configs_grid_says_both(tmp_path: Path) -> None:
    model = _copy(tmp_path, "vit")
    cfg = json.loads((model / "config.json").read_text())
    cfg["image_size"] = 20
    (model / "config.json").write_text(json.dumps(cfg))
    code, _, err = cli(["export", str(model), "-o", str(tmp_path / "x.npy")])
    assert code == 2 and err.count("\n") == 1, err
    assert "the weights' table is a 4x4 grid + 1 extra (cls) (17 rows)" in err and "make a 5x5 grid" in err


def test_image_size_on_a_model_without_a_vision_table(tmp_path: Path) -> None:
    code, _, err = cli(["export", str(MODELS / "tiny_bert"), "--image-size", "32", "-o", str(tmp_path / "x.npy")])
    assert code == 2 and "--image-size applies to a vision model's position table" in err


def test_llama4_vision_runs_at_its_native_size_only(tmp_path: Path) -> None:
    path = str(MODELS / "vision_llama4_vision_model")
    code, _, err = cli(["export", path, "--image-size", "24", "-o", str(tmp_path / "x.npy")])
    assert code == 2 and "without resampling: it runs at 16x16 only" in err
    code, _, err = cli(["export", path, "--engine", "timm", "-o", str(tmp_path / "x.npy")])
    assert code == 2 and "keeps its cls row after it" in err


# ----- audit --------------------------------------------------------------------------------------------------
def test_audit_checks_the_native_size_and_each_size_given() -> None:
    from posenc_cli.api import audit

    report = audit(str(MODELS / "vision_vit"), image_size=["24x12", 12], engine="timm")
    rows = [(r.layer_type, r.engine, r.verdict) for r in report.rows]
    assert rows == [
        ("16x16 native", "hf", "agree"), ("16x16 native", "timm", "agree"),
        ("24x12", "hf", "agree"), ("24x12", "timm", "differ"),
        ("12x12", "hf", "agree"), ("12x12", "timm", "differ"),
    ]  # fmt: skip
    timm_row = report.rows[3]
    want = np.abs(model_goldens()["vit|timm|24x12"] - model_goldens()["vit|hf|24x12"]).max()
    assert (
        abs(timm_row.max_abs_diff - want) <= noise(want) and "antialias=False vs antialias=True" in timm_row.explanation
    )
    assert int(report.exit_code) == 1


def test_audit_refuses_an_image_size_for_a_model_without_a_vision_table() -> None:
    code, _, err = cli(["audit", str(MODELS / "tiny_bert"), "--image-size", "24"])
    assert code == 2 and "--image-size applies to a vision model's position table" in err
    code, _, err = cli(["audit", str(MODELS / "tiny_bert"), "--engine", "timm"])
    assert code == 2 and "--engine timm resamples vision position tables" in err


def test_a_multimodal_wrapper_gives_its_vision_table_with_an_image_size(tmp_path: Path) -> None:
    out = tmp_path / "clip.safetensors"
    code, _, err = cli(["export", str(MODELS / "vision_clip"), "--image-size", "24x12", "-o", str(out)])
    assert code == 0, err
    from posenc_cli.formats import read_table

    table = read_table(str(out))
    assert table.metadata["weights_tensor"] == "vision_model.embeddings.position_embedding.weight"
    np.testing.assert_allclose(table.tensors["pe"], model_goldens()["clip|hf|24x12"], atol=noise(table.tensors["pe"]))


def test_kinds_states_the_models_rule() -> None:
    code, out, err = cli(["kinds", "--hf-config", str(MODELS / "vision_dinov2_with_registers")])
    assert code == 0, err
    text = out.decode()
    assert "read as vision table" in text and "bicubic, antialias=True, align_corners=False, size" in text
    assert "2 reg tokens after cls" in text
    code, out, err = cli(["kinds", "--hf-config", str(MODELS / "vision_timm_vit")])  # was: missing hidden_size
    assert code == 0 and "timm ViT" in out.decode(), err


def test_one_image_size_per_table() -> None:
    code, _, err = cli(["export", str(MODELS / "vision_vit"), "--image-size", "24", "--image-size", "32", "-o", "x"])
    assert code == 2 and "--image-size is given 2 times" in err and err.count("\n") == 1, err


def test_a_vision_config_alone_says_where_its_table_lives() -> None:
    import posenc_cli as pe

    with pytest.raises(ParameterError, match="learned over its patch grid: it lives in the weights"):
        pe.from_config({"model_type": "vit"})
