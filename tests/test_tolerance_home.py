"""Tolerances live in one place: no module but posenc_cli/inspect/tolerance.py multiplies a machine epsilon by a number of its
own (``64 * eps``, ``4 * an.data_eps(dt)``, ``finfo(dt).eps * 4``), read with ast; every such threshold is a named
constant of :mod:`posenc_cli.inspect.tolerance` with a function that applies it. The numbers themselves are pinned below."""

from __future__ import annotations

import ast
import bisect
import re
from pathlib import Path

import ml_dtypes
import numpy as np

from posenc_cli.inspect import tolerance

from .conftest import parse

PKG = Path(__file__).resolve().parent.parent / "posenc_cli"
#: Not a tolerance on table values: a least-squares cutoff on singular values (the check's own conditioning).
ALLOWED = {("checks/absolute.py", "np.finfo(np.float64).eps * 4")}


def _is_eps(node: ast.AST) -> bool:
    """A machine epsilon: a name ``eps``, an attribute ``.eps``, a call of a function named ``*eps``, or
    ``float()`` of one of these."""
    if isinstance(node, ast.Name):
        return node.id == "eps"
    if isinstance(node, ast.Attribute):
        return node.attr == "eps"
    if isinstance(node, ast.Call):
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        return name.endswith("eps") or (name == "float" and len(node.args) == 1 and _is_eps(node.args[0]))
    return False


#: Text without a match holds no epsilon as :func:`_is_eps` reads one, so its tree need not be built (2/3 of the
#: package's text): the name ``eps`` (also the attribute ``.eps``), or a name ending in ``eps`` whose next token
#: is a call's ``(`` or the ``)`` of a parenthesized callee (comments and line continuations may come between).
_MAY_HOLD_EPS = re.compile(r"\beps\b|eps\s*[()#\\]")


def eps_multiples(source: str) -> list[str]:
    """Every ``number * eps`` or ``eps * number`` product in ``source``.

    Only the nodes whose lines hold a match of :data:`_MAY_HOLD_EPS` are walked into (and those without lines):
    an epsilon's name starts a match on its own line, so a product holding one spans that line (walking every
    node of the 21 files cost as much as parsing them)."""
    starts = [m.start() for m in _MAY_HOLD_EPS.finditer(source)]
    if not starts:
        return []
    lines, line, pos = [], 1, 0
    for at in starts:
        line, pos = line + source.count("\n", pos, at), at
        if not lines or lines[-1] != line:
            lines.append(line)
    out = []
    stack: list[ast.AST] = [parse(source)]
    while stack:
        node = stack.pop()
        first = getattr(node, "lineno", None)
        if first is not None and bisect.bisect_left(lines, first) == bisect.bisect_right(lines, node.end_lineno):
            continue  # no matching line in its span: nothing below it is an epsilon
        stack.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            sides = (node.left, node.right)
            if any(isinstance(s, ast.Constant) and isinstance(s.value, (int, float)) for s in sides) and any(
                _is_eps(s) for s in sides
            ):
                out.append(ast.unparse(node))
    return sorted(out)


def test_no_module_but_tolerance_multiplies_an_epsilon() -> None:
    found = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel == "inspect/tolerance.py":
            continue
        hits = [h for h in eps_multiples(path.read_text()) if (rel, h) not in ALLOWED]
        if hits:
            found[rel] = hits
    assert found == {}


def test_the_walker_sees_an_epsilon_multiple() -> None:
    """The test above can fail: the forms the old code used are found."""
    src = "tol = max(64 * eps, 1e-12)\nx = 4 * an.data_eps(dt) * s\ny = float(finfo(d).eps) * 2\nz = eps * 1e-3\n"
    assert eps_multiples(src) == sorted(["64 * eps", "4 * an.data_eps(dt)", "float(finfo(d).eps) * 2", "eps * 0.001"])
    # each form alone passes the text filter that spares the parse, the odd spellings of a call too
    for form in ("tol = 64 * eps", "x = 4 * an.data_eps (dt)", "x = 4 * (tiny_eps)(dt)", "x = 4 * f.my_eps  \\\n(dt)"):
        assert len(eps_multiples(form)) == 1, form


def test_the_thresholds_keep_their_numbers() -> None:
    """The same numbers as before they moved here, per dtype (float64, float32, float16, bfloat16)."""
    for dt in (np.float64, np.float32, np.float16, ml_dtypes.bfloat16):
        e = float(ml_dtypes.finfo(dt).eps)
        assert tolerance.eps(dt) == e
        assert tolerance.default_atol(dt) == 2 * e
        assert tolerance.fit_tol(dt) == max(64 * e, 1e-12)
        assert tolerance.pair_tol(dt) == 8 * e
        assert tolerance.refit_tol(dt, 0.5) == 16 * e * 0.5
        assert tolerance.freq_err_floor(dt) == e * 1e-3
        assert tolerance.duplicate_tol(dt) == max(4 * e, 1e-12)
        assert tolerance.phase_tol(dt) == max(1e-3, 4 * e)
        assert tolerance.amp_tol(dt) == max(1e-6, 8 * e)
        assert tolerance.line_tol(dt, -0.25, 101) == 4 * e * 0.25 * 100 + 1e-300
        assert tolerance.scale_tol(dt) == tolerance.slope_rtol(dt) == 4 * e
        assert tolerance.coarse(dt) == (dt in (np.float16, ml_dtypes.bfloat16))
        assert tolerance.synth_atol(dt, 100, 0.5, 2.0) == 2 * e + 4 * 2.0**-52 * (100 * 0.5 + 1) * 2.0
    assert tolerance.ULP_TOL == 2.0


def test_the_readers_constants_keep_their_numbers() -> None:
    """The analysis's and the structure readers' thresholds, as they were typed in place before they moved here."""
    t = tolerance
    assert (t.LAG_GROWTH, t.ARCCOS_WEIGHT_FLOOR, t.SINGULAR_REL, t.AMPS_AGREE) == (1.5, 1e-12, 1e-12, 1e-6)
    assert (t.FIT_SLACK, t.FIT_ERR_SIGMAS, t.TINY) == (8.0, 8.0, 1e-300)
    assert (t.OFFSET_PHASE_TOL, t.OFFSET_FINE, t.OFFSET_STEP_FLOOR) == (1e-3, 1e-3, 1e-12)
    assert (t.LADDER_REL_TOL, t.LADDER_DEFAULT_ERR, t.LADDER_SIGMA_FLOOR) == (1e-5, 1e-16, 1e-15)
    assert (t.LADDER_BREAK, t.LADDER_BASE_ROUNDING, t.PROFILE_REL_TOL) == (4.0, 1e-7, 1e-6)
    assert (t.RAMP_ROUNDING, t.RAMP_KEPT, t.RAMP_INTEGRAL, t.RAMP_START_INTEGRAL) == (1e-4, 1e-9, 1e-4, 1e-3)
    assert (t.RAMP_INSIDE, t.LAW_ROUNDING, t.XPOS_RANK_ONE, t.MROPE_BASES_DIFFER) == (1e-6, 1e-6, 1e-3, 1e-9)
    assert t.XPOS_SCALE_BASE_ROUNDINGS == (1e-6, 1e-4, 1e-3)
    assert t.MAX_BIAS_ROUNDINGS == (1e-6, 1e-4, 1e-3, 1e-2)
    assert (t.MPT_BIAS_ROUNDINGS, t.DIVISOR_ROUNDINGS) == ((1e-4, 1e-3, 1e-2), (1e-2, 1e-3))
    assert (t.DIVISOR_ONE, t.LINE_PER_HEAD_RTOL, t.MAX_DISTANCE_CAP, t.DISTANCE_SLACK) == (1e-3, 1e-2, 128.0, 1e-6)
    assert t.LONGROPE_BASES == (10000.0, 500000.0, 1000000.0)
    assert t.DYNAMIC_FACTORS == (2.0, 4.0, 8.0, 16.0, 32.0)
    assert t.NTK_FACTORS == (2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 1.5, 3.0, 5.0, 10.0, 20.0)
    assert (t.LLAMA3_HIGH, t.YARN_MSCALE, t.XPOS_ZETA_SHIFT, t.XPOS_ZETA_SPAN) == (4.0, 0.1, 0.4, 1.4)
