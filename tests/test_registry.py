"""Integrity of the literal registries, like scipy's ``test_WIN_FUNC_DATA_integrity``.

Parametrised over :data:`posenc_cli.encodings.KINDS`: every registered kind imports, names itself, documents
itself, builds from small example parameters, computes every tensor it declares (any row range equal to the
same rows of the whole tensor), writes string metadata that rebuilds an equal encoding, parses every documented
parameter from its string default, rejects unknown parameters by listing the valid ones, and expands its presets.
Then the check registry: every property named in ``DEFAULT_EXPECT`` is a real check meant for that kind, every
kind has an entry, and each kind's example table passes its own default expectations.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
import typing
import zlib

import numpy as np
import pytest

from posenc_cli.encodings import KINDS, get_kind, make_encoding
from posenc_cli.encodings.base import Encoding, TensorSpec, display_name, format_value, parse_value
from posenc_cli.errors import ParameterError
from posenc_cli.sources import encoding_from_metadata

from .each import each

#: Small parameters every kind builds from (grid kinds derive their length; alibi's dim is the head count).
EXAMPLE: dict[str, dict[str, object]] = {
    "sinusoidal": {"length": 16, "dim": 8},
    "sinusoidal-2d": {"grid": "4x4", "dim": 8},
    "sinusoidal-3d": {"grid": "2x4x4", "dim": 12},
    "rope": {"length": 16, "dim": 8},
    "xpos": {"length": 16, "dim": 8},
    "learned": {"length": 16, "dim": 8},
    "index": {"length": 16, "dim": 8},
    "normalized": {"length": 16, "dim": 8},
    "binary": {"length": 16, "dim": 8},
    "alibi": {"length": 16, "dim": 4},
    "t5": {"length": 16},
    "deberta": {"length": 16},
    "mrope": {"length": 16, "dim": 128},  # the default mrope_section (16, 24, 24) needs dim/2 = 64
    "rope-2d": {"grid": "4x4", "dim": 8},
    "relative": {"length": 16},
}

#: Metadata keys that are not parameters (``extra_metadata`` adds derived ones such as attention_scaling).
NON_PARAM_KEYS = {"kind", "posenc_version"}

ALL_KINDS = list(KINDS)


def example(kind: str, **overrides: object) -> Encoding:
    return make_encoding(kind, {**EXAMPLE[kind], **overrides})


def presets() -> list[tuple[str, str]]:
    return [(kind, preset) for kind in KINDS for preset in get_kind(kind).PRESETS]


def documented_params() -> list[tuple[str, str]]:
    return [(kind, p.name) for kind in KINDS for p in get_kind(kind).param_infos() if p.name != "preset"]


# ----- the registry itself -----------------------------------------------------------------------------------
def test_every_kind_has_an_example():
    assert set(EXAMPLE) == set(KINDS), "add small example parameters for the new kind to EXAMPLE"


def test_kind_imports_and_names_itself():
    """Every kind (:func:`tests.each.each`: each failure named)."""
    each(ALL_KINDS, lambda case: _kind_imports_and_names_itself(case))


def _kind_imports_and_names_itself(kind):
    module, cls_name = KINDS[kind]
    mod = importlib.import_module(f"posenc_cli.encodings.{module}")
    cls = getattr(mod, cls_name)
    assert cls is get_kind(kind)
    assert issubclass(cls, Encoding) and dataclasses.is_dataclass(cls)
    assert kind == cls.KIND
    assert isinstance(cls.SUMMARY, str) and cls.SUMMARY.strip(), f"{kind} needs a SUMMARY"
    assert isinstance(cls.REFERENCES, tuple) and cls.REFERENCES, f"{kind} needs REFERENCES"
    assert all(isinstance(r, str) and r.strip() for r in cls.REFERENCES)
    assert set(cls.PRESET_DOCS) <= set(cls.PRESETS)
    for preset in cls.PRESETS:
        assert cls.PRESET_DOCS.get(preset, "").strip(), f"{kind} preset {preset!r} is undocumented"


def test_unknown_kind_lists_every_kind():
    with pytest.raises(ParameterError) as info:
        get_kind("rotary2")
    message = str(info.value)
    assert "'rotary2'" in message
    for kind in KINDS:
        assert kind in message


# ----- every kind builds and computes every tensor -------------------------------------------------------------
def test_kind_builds_and_computes_every_tensor():
    """Every kind (:func:`tests.each.each`: each failure named)."""
    each(ALL_KINDS, lambda case: _kind_builds_and_computes_every_tensor(case))


def _kind_builds_and_computes_every_tensor(kind):
    enc = example(kind)
    assert kind == enc.KIND
    specs = enc.tensor_specs()
    assert specs, f"{kind} declares no tensors"
    assert next(iter(specs)) == enc.PRIMARY, "tensor_specs lists the primary tensor first"
    for name, spec in specs.items():
        assert isinstance(spec, TensorSpec) and spec.name == name
        assert len(spec.shape) >= 1 and all(isinstance(s, int) and s >= 1 for s in spec.shape)
        whole = enc.array(name)
        assert whole.shape == spec.shape and whole.dtype == spec.dtype
        assert whole.flags.c_contiguous
    assert enc.nbytes() == sum(s.nbytes for s in specs.values())
    if kind.startswith("sinusoidal-"):  # length derived from the grid
        grid = [int(g) for g in EXAMPLE[kind]["grid"].split("x")]
        assert enc.length == int(np.prod(grid))


def test_any_row_range_equals_the_same_rows_of_the_whole_tensor():
    """Every kind (:func:`tests.each.each`: each failure named)."""
    each(ALL_KINDS, lambda case: _any_row_range_equals_the_same_rows_of_the_whole_tensor(case))


def _any_row_range_equals_the_same_rows_of_the_whole_tensor(kind):
    enc = example(kind)
    rng = np.random.default_rng(zlib.crc32(kind.encode()))
    for name, spec in enc.tensor_specs().items():
        whole = enc.array(name)
        n = spec.shape[0]
        ranges = [(0, n), (0, 0), (n, n), (n - 1, n), (0, 1)]
        ranges += [tuple(sorted(int(x) for x in rng.integers(0, n + 1, size=2))) for _ in range(6)]
        for a, b in ranges:
            got = enc.rows(name, a, b)
            assert got.dtype == spec.dtype and got.shape == (b - a, *spec.shape[1:]), (name, a, b)
            np.testing.assert_array_equal(got, whole[a:b], err_msg=f"{kind} {name}[{a}:{b}]")


# ----- metadata: strings that rebuild an equal encoding --------------------------------------------------------
def test_metadata_is_strings_and_rebuilds_an_equal_encoding():
    """Every kind (:func:`tests.each.each`: each failure named)."""
    each(ALL_KINDS, lambda case: _metadata_is_strings_and_rebuilds_an_equal_encoding(case))


def _metadata_is_strings_and_rebuilds_an_equal_encoding(kind):
    enc = example(kind)
    meta = enc.metadata()
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()), meta
    assert meta["kind"] == kind and meta["posenc_version"]
    param_names = {f.name for f in enc.param_fields()}
    assert param_names <= set(meta), f"metadata lacks {param_names - set(meta)}"
    extra = set(meta) - param_names - NON_PARAM_KEYS
    assert extra == set(enc.extra_metadata()), "every non-parameter key is derived metadata"
    rebuilt, note = encoding_from_metadata(meta)
    assert rebuilt is not None, note
    assert type(rebuilt) is type(enc) and rebuilt == enc
    assert rebuilt.metadata() == meta
    # and the rebuilt encoding computes the same primary tensor
    np.testing.assert_array_equal(rebuilt.array(), enc.array())


def test_preset_metadata_rebuilds_an_equal_encoding():
    """Every preset of every kind (:func:`tests.each.each`: each failure named)."""
    each(presets(), lambda case: _preset_metadata_rebuilds_an_equal_encoding(*case))


def _preset_metadata_rebuilds_an_equal_encoding(kind, preset):
    enc = example(kind, preset=preset)
    rebuilt, note = encoding_from_metadata(enc.metadata())
    assert rebuilt == enc, note


# ----- parameters ----------------------------------------------------------------------------------------------
def test_documented_parameter_parses_from_its_string_default():
    """Every documented parameter of every kind (:func:`tests.each.each`: each failure named)."""
    each(documented_params(), lambda case: _documented_parameter_parses_from_its_string_default(*case))


def _documented_parameter_parses_from_its_string_default(kind, name):
    cls = get_kind(kind)
    info = {p.name: p for p in cls.param_infos()}[name]
    assert info.help.strip(), f"{kind}.{name} has no help text"
    assert info.type, f"{kind}.{name} has no type label"
    hints = typing.get_type_hints(cls)
    if info.default is None:
        if name == "length" or (name == "dim" and cls.NEEDS_DIM):
            return  # required (dim: for kinds that need one) unless derived; the examples pass it
        text = format_value(None)
        assert parse_value(hints[name], name, text) is None
        return
    text = format_value(info.default)
    assert isinstance(text, str)
    assert parse_value(hints[name], name, text) == info.default
    base = dict(EXAMPLE[kind])
    enc = cls.from_params({**{k: format_value(v) for k, v in base.items()}, name: text})
    assert getattr(enc, name) == info.default
    assert enc == cls.from_params(base), f"passing {name}={text} explicitly changed the encoding"


def test_every_choice_builds_or_says_what_is_missing():
    """Every parameter with choices of every kind (:func:`tests.each.each`: each failure named)."""
    each(
        [(k, p.name) for k in KINDS for p in get_kind(k).param_infos() if p.choices and p.name != "preset"],
        lambda case: _every_choice_builds_or_says_what_is_missing(*case),
    )


def _every_choice_builds_or_says_what_is_missing(kind, name):
    """A documented choice never crashes: it builds or raises a one-line ParameterError."""
    cls = get_kind(kind)
    info = {p.name: p for p in cls.param_infos()}[name]
    for choice in info.choices:
        try:
            enc = example(kind, **{name: choice})
        except ParameterError as exc:
            assert "\n" not in str(exc) and str(exc).strip()
            continue
        assert getattr(enc, name) == choice
        enc.rows(enc.PRIMARY, 0, 2)
    with pytest.raises(ParameterError, match="choose from"):
        example(kind, **{name: "no-such-choice"})


def test_unknown_parameter_lists_the_valid_ones():
    """Every kind (:func:`tests.each.each`: each failure named)."""
    each(ALL_KINDS, lambda case: _unknown_parameter_lists_the_valid_ones(case))


def _unknown_parameter_lists_the_valid_ones(kind):
    cls = get_kind(kind)
    with pytest.raises(ParameterError) as info:
        example(kind, bogus_param="1")
    message = str(info.value)
    assert "'bogus_param'" in message and kind in message and "choose from" in message
    listed = message.split("choose from:", 1)[1]
    for p in cls.param_infos():
        shown = display_name(p.name)  # `length` is typed as len / --len
        assert re.search(rf"\b{re.escape(shown)}\b", listed), f"{shown} missing from: {message}"


def test_preset_expands_and_explicit_values_win():
    """Every preset of every kind (:func:`tests.each.each`: each failure named)."""
    each(presets(), lambda case: _preset_expands_and_explicit_values_win(*case))


def _preset_expands_and_explicit_values_win(kind, preset):
    cls = get_kind(kind)
    hints = typing.get_type_hints(cls)
    values = cls.PRESETS[preset]
    assert values, f"preset {preset!r} of {kind} sets nothing"
    enc = example(kind, preset=preset)
    for key, value in values.items():
        assert getattr(enc, key) == parse_value(hints[key], key, value), (kind, preset, key)
    enc.rows(enc.PRIMARY, 0, 2)
    # an explicit parameter overrides the preset's value for it
    key = "dtype" if "dtype" not in values and not cls.INTEGER_TABLE else "length"  # integer tables: int64 only
    override = {"dtype": "float64", "length": 3}[key]
    assert getattr(example(kind, preset=preset, **{key: override}), key) == override


def test_unknown_preset_lists_the_presets():
    """Every case (:func:`tests.each.each`: each failure named)."""
    each([k for k in KINDS if get_kind(k).PRESETS], _unknown_preset_lists_the_presets)


def _unknown_preset_lists_the_presets(kind):
    with pytest.raises(ParameterError) as info:
        example(kind, preset="no-such-preset")
    for preset in get_kind(kind).PRESETS:
        assert preset in str(info.value)


# ----- the check registry --------------------------------------------------------------------------------------
def _checks():
    return pytest.importorskip("posenc_cli.checks")


def test_every_kind_declares_properties_that_exist():
    """Every kind (:func:`tests.each.each`: each failure named)."""
    each(ALL_KINDS, lambda case: _every_kind_declares_properties_that_exist(case))


def _every_kind_declares_properties_that_exist(kind):
    checks = _checks()
    declared = get_kind(kind).PROPERTIES
    assert any(declared.values()), f"{kind} requires nothing"
    for name in declared:
        assert name in checks.CHECKS, f"{kind} declares unknown property {name!r}"


def test_every_declared_role_and_view_is_known():
    """Every kind (:func:`tests.each.each`: each failure named)."""
    each(ALL_KINDS, lambda case: _every_declared_role_and_view_is_known(case))


def _every_declared_role_and_view_is_known(kind):
    cls = get_kind(kind)
    assert set(cls.ROLES.values()) <= {
        "table",
        "cos",
        "sin",
        "cos-cache",
        "sin-cache",
        "inv-freq",
        "scale",
        "matrix",
        "slopes",
    }, kind
    enc = cls.from_params(cls.EXAMPLE)
    assert set(enc.tensor_specs()) <= set(cls.ROLES), f"{kind} has tensors without a role"
    assert cls.PRIMARY in cls.ROLES


def test_every_check_is_a_hyphenated_noun_with_a_doc():
    checks = _checks()
    for name, c in checks.CHECKS.items():
        assert name == name.lower() and " " not in name, "checks are hyphenated nouns"
        assert c.doc.strip(), f"check {name} has no doc"


def test_each_kinds_example_passes_its_own_default_expectations():
    """Every kind (:func:`tests.each.each`: each failure named)."""
    each(ALL_KINDS, lambda case: _each_kinds_example_passes_its_own_default_expectations(case))


def _each_kinds_example_passes_its_own_default_expectations(kind):
    """What ``posenc check KIND`` does, in process: every required property of a fresh table holds."""
    checks = _checks()
    from posenc_cli.checks.base import CheckContext

    enc = example(kind, **({"length": 64} if "length" in EXAMPLE[kind] else {}))
    table = enc.array()
    ctx = CheckContext(
        table=table,
        tensors={n: enc.array(n) for n in enc.tensor_specs()},
        metadata=enc.metadata(),
        kind=kind,
        encoding=enc,
        rtol=max(1e-9, float(np.finfo(table.dtype).eps) * 64) if table.dtype.kind == "f" else 1e-9,
    )
    results = checks.run_checks(ctx)
    available = [r.name for r in results]
    required = checks.required_for(kind, None, available)
    assert "matches-spec" in required
    failed = {r.name: r.detail for r in results if r.name in required and r.passed is False}
    assert not failed, failed
