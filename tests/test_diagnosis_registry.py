"""The diagnosis registry's integrity, like scipy's ``test_WIN_FUNC_DATA_integrity``: every explanation is
documented in docs/inspect.md, is proposed by a registered tier, and has an (A, B) pair built with plain NumPy
(not with posenc's generator) that differs, and that the diagnosis explains with that explanation."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from posenc_cli.encodings import make_encoding
from posenc_cli.inspect.diagnose import EXPLANATIONS, TIERS, diagnose
from posenc_cli.inspect.diagnose.parameters import read_source, reading_of
from posenc_cli.inspect.metrics import compare

from .each import each

N, D = 64, 16


def _sinusoid(n=N, d=D, base=1e4, start=0, layout="interleaved", dtype=np.float32):
    t = np.arange(start, start + n, dtype=np.float64)[:, None]
    w = base ** (-np.arange(0, d, 2) / d)
    s, c = np.sin(t * w), np.cos(t * w)
    if layout == "interleaved":
        out = np.empty((n, d))
        out[:, 0::2], out[:, 1::2] = s, c
    elif layout == "split":
        out = np.concatenate([s, c], axis=1)
    else:
        out = np.concatenate([c, s], axis=1)
    return out.astype(dtype)


def _rope(n=N, d=D, base=1e4, layout="half", inv=None, part="cos", dtype=np.float32):
    w = base ** (-np.arange(0, d, 2) / d) if inv is None else inv
    ang = np.arange(n, dtype=np.float64)[:, None] * w
    f = np.cos if part == "cos" else np.sin
    v = f(ang)
    out = np.concatenate([v, v], axis=1) if layout == "half" else np.repeat(v, 2, axis=1)
    return out.astype(dtype)


def _norm_vs_rotate_half(n=N, d=D, base=1e4) -> tuple[np.ndarray, np.ndarray]:
    """sin tables as llama.cpp's NORM rope writes them (pair i in columns 2i, 2i+1) and as HF's rotate_half does
    (pair i in columns i, i + d/2), element by element, angles p * exp(-2i/d ln base)."""
    norm, halves = np.empty((n, d)), np.empty((n, d))
    for p in range(n):
        for i in range(d // 2):
            v = math.sin(p * math.exp(-2.0 * i / d * math.log(base)))
            norm[p, 2 * i] = norm[p, 2 * i + 1] = v
            halves[p, i] = halves[p, i + d // 2] = v
    return norm.astype(np.float32), halves.astype(np.float32)


def pairs() -> dict[str, tuple]:
    """slug -> (A, B, diagnose keyword arguments)."""
    b = _sinusoid()
    rng = np.random.default_rng(0)
    perm = rng.permutation(D)
    flip = b.copy()
    flip[:, 0:6:2] *= -1
    cos, sin = _rope(), _rope(part="sin")
    w32 = (np.float32(1) / np.power(np.float32(1e4), np.arange(0, D, 2, dtype=np.float32) / np.float32(D))).astype(
        np.float32
    )
    long_n = 4096
    t_long = np.arange(long_n, dtype=np.float32)[:, None]
    f32_long = np.cos(np.concatenate([t_long * w32, t_long * w32], axis=1)).astype(np.float32)
    return {
        "transpose": (np.ascontiguousarray(b.T), b, {}),
        "row-offset": (_sinusoid(start=3), b, {}),
        "sub-range": (b[10:40].copy(), b, {}),
        "partial-rotary": (_rope(d=8, inv=1e4 ** (-np.arange(0, D, 2) / D)[:4]), _rope(), {}),
        "layout-half-to-interleaved": (_rope(), _rope(layout="interleaved"), {}),
        "layout-interleaved-to-half": (_rope(layout="interleaved"), _rope(), {}),
        "qk-permutation": (*_norm_vs_rotate_half(), {}),
        "layout-split-to-interleaved": (_sinusoid(layout="split"), b, {}),
        "layout-interleaved-to-split": (b, _sinusoid(layout="split"), {}),
        "sin-cos-order": (_sinusoid(layout="split-cos-first"), _sinusoid(layout="split"), {}),
        "column-permutation": (np.ascontiguousarray(b[:, perm]), b, {}),
        "sign-flip": (flip, b, {}),
        "cos-sin-swap": (sin, cos, {"tensors_a": {"cos": sin, "sin": cos}, "tensors_b": {"cos": cos, "sin": sin}}),
        "constant-scale": ((1.25 * b.astype(np.float64)).astype(np.float32), b, {}),
        "precision-float16": (b.astype(np.float16).astype(np.float32), b, {}),
        "precision-bfloat16": (_bf16(b).astype(np.float32), b, {}),
        "float32-angle-error": (f32_long, _rope(n=long_n, dtype=np.float64), {}),
        "base": (_sinusoid(base=5e5), b, {}),
        "head-scale": (_alibi([2 ** (-8 * k / 12) for k in range(1, 13)]), _alibi(_paper12()), {}),
        "frequency-scaling": (_rope(inv=1e4 ** (-np.arange(0, D, 2) / D) / 4), _rope(), {}),
        "resampling": _resampling_pair(),
        **_parameter_pairs(),
    }


def _resampling_pair() -> tuple:
    """The tiny ViT's table at 24x12 as timm's resample_abs_pos_embed and as HF's interpolate_pos_encoding made it
    (torch, tools/golden/vision_models.py), with the metadata posenc writes beside such tables."""
    root = Path(__file__).resolve().parent
    goldens = np.load(root / "data" / "vision" / "model_goldens.npz")
    meta = {"model_dir": str(root / "data" / "models" / "vision_vit"), "grid": "6x3", "grid_offset": "1",
            "extra_rows": "0:cls", "image_size": "24x12"}  # fmt: skip
    call = "bicubic, antialias={}, align_corners=False, size"
    timm = {**meta, "resampling": f"engine=timm, {call.format(True)}"}
    hf = {**meta, "resampling": f"engine=hf, {call.format(False)}"}
    return goldens["vit|timm|24x12"], goldens["vit|hf|24x12"], {"metadata": (timm, hf)}


def _read(name: str, table: np.ndarray, kind: str, **spec) -> dict:
    """Readings of a table made here (identified) and of the spec it is compared with (the spec's own), made when
    the case's test runs (:func:`_arguments`): identifying the nine tables cost each test process 0.2 CPU-s at
    collection."""

    def readings() -> tuple:
        ref = make_encoding(kind, {"length": table.shape[-2] if table.ndim == 3 else table.shape[0], **spec})
        return read_source(None, {name: table}, {}), reading_of(ref)

    return {"readings": readings}


def _arguments(kw: dict) -> dict:
    """A pair's keyword arguments for ``diagnose``, the deferred ones (:func:`_read`) made now."""
    return {k: v() if callable(v) else v for k, v in kw.items()}


def _parameter_pairs() -> dict[str, tuple]:
    """Tables that differ by one parameter of their kind, each read as that kind: the difference in parameters."""
    w = 1e4 ** (-np.arange(0, D, 2) / D)
    slopes = [2 ** (-8 * k / 12) for k in range(1, 13)]
    return {
        "parameter-kind": (_sinusoid(), _rope(), _read("pe", _sinusoid(), "rope", dim=D)),
        "parameter-base": (_sinusoid(base=5e5), _sinusoid(), _read("pe", _sinusoid(base=5e5), "sinusoidal", dim=D)),
        "parameter-scaling": (_rope(inv=w / 4), _rope(), _read("cos", _rope(inv=w / 4), "rope", dim=D)),
        "parameter-layout": (
            _rope(layout="interleaved"),
            _rope(),
            _read("cos", _rope(layout="interleaved"), "rope", dim=D),
        ),
        "parameter-rotary-dim": (_rope(d=8), _rope(), _read("cos", _rope(d=8), "rope", dim=D)),
        "parameter-offset": (_sinusoid(start=3), _sinusoid(), _read("pe", _sinusoid(start=3), "sinusoidal", dim=D)),
        "parameter-attention-scaling": (
            (1.25 * _rope(dtype=np.float64)).astype(np.float32),
            _rope(),
            _read("cos", (1.25 * _rope(dtype=np.float64)).astype(np.float32), "rope", dim=D),
        ),
        "parameter-other": (_alibi(slopes), _alibi(_paper12()), _read("bias", _alibi(slopes), "alibi", dim=12)),
        "parameter-precision": (
            _rope(n=512, inv=_bf16(w).astype(np.float64)),
            _rope(n=512),
            _read("cos", _rope(n=512, inv=_bf16(w).astype(np.float64)), "rope", dim=D),
        ),
    }


def _alibi(slopes, n=24):
    d = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
    return (-np.asarray(slopes, dtype=np.float64)[:, None, None] * d).astype(np.float32)


def _paper12():
    return [2.0**-k for k in range(1, 9)] + [2.0 ** (-(2 * k + 1) / 2) for k in range(4)]


def _bf16(x):
    import ml_dtypes

    return x.astype(ml_dtypes.bfloat16)


PAIRS = pairs()
DOC = (Path(__file__).resolve().parent.parent / "docs" / "inspect.md").read_text()


def test_registry_is_literal_and_consistent() -> None:
    slugs = [e.slug for e in EXPLANATIONS]
    assert len(slugs) == len(set(slugs))
    tiers = [t.name for t in TIERS]
    assert len(tiers) == len(set(tiers))
    assert all(e.tier in tiers for e in EXPLANATIONS)
    assert all(t.cost in (0, 1, 2, 3) for t in TIERS)
    assert TIERS[0].name == "parameters" and TIERS[0].cost == 0  # the model's own terms first
    assert [t.cost for t in TIERS if t.name in ("columns", "transpose")] == [1, 1]  # cheapest first
    assert set(PAIRS) == set(slugs)


def test_every_explanation_is_documented() -> None:
    each([e.slug for e in EXPLANATIONS], _documented)


def _documented(slug: str) -> None:
    assert f"`{slug}`" in DOC, f"{slug} is not documented in docs/inspect.md"


def test_every_explanation_explains_its_pair() -> None:
    """Each explanation of the catalogue names its own pair's difference (one test over the catalogue through
    tests/each.py, which names each explanation that fails: a diagnosis here takes ~15 ms, its test id 3 more)."""
    each([e.slug for e in EXPLANATIONS], _explains_its_pair)


def _explains_its_pair(slug: str) -> None:
    a, b, kw = PAIRS[slug]
    if a.shape == b.shape:
        assert not compare(np.asarray(a), np.asarray(b)).same
    d = diagnose(a, b, **_arguments(kw))
    assert not d.same
    assert d.best is not None, d.reason
    assert slug in d.best.name.split("+"), (slug, d.best.name)


def test_a_pair_no_explanation_covers_says_so() -> None:
    rng = np.random.default_rng(1)
    b = _sinusoid()
    a = (b + rng.normal(0, 0.3, b.shape)).astype(np.float32)
    d = diagnose(a, b)
    assert d.best is None and d.reason.startswith("no explanation in the catalogue accounts for the difference")


def test_the_qk_permutation_is_named_in_both_directions() -> None:
    """A llama.cpp NORM table against HF's rotate_half one of the same spec (and the reverse): the layout change, and
    what it means (convert_hf_to_gguf.py permutes Q/K); a split/interleaved sinusoid change is not a rotary one."""
    norm, halves = _norm_vs_rotate_half()
    for a, b, consecutive in ((norm, halves, "A"), (halves, norm, "B")):
        best = diagnose(a, b).best
        assert best is not None and best.name.endswith("+qk-permutation"), best
        assert (
            f"{consecutive}'s consecutive pairs are the pairing llama.cpp NORM uses; convert_hf_to_gguf.py permutes "
            "Q/K so scores match"
        ) in best.summary
        assert best.steps[-1].detail == {"consecutive": consecutive, "rotate_half": "B" if consecutive == "A" else "A"}
    best = diagnose(_sinusoid(layout="split"), _sinusoid()).best
    assert best is not None and "qk-permutation" not in best.name.split("+")
