"""plot.py: views drawn to a PNG and read back pixel by pixel (the heatmap's colour at a cell follows the value there,
the circle's points lie on the circle, the bias shows each head and its mask, compare shows the difference; README's
pictures, drawn in test_plot_cli.test_readme_pictures_are_current, are the signed heatmap, dot and spectrum read back), and further
sources of a view read from the figure's artists without drawing it (the rotary heatmap's images are cos and sin,
the dot and cosine curves peak at 0, a rotary source's points lie on the circle, a table's spectrum is its measured
wavelengths, the context line sits at the original context); views that do not apply, the install hint without
matplotlib, formats and deterministic files. Frequencies measured on the data are checked against the formulas
without matplotlib."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from posenc_cli import api
from posenc_cli.errors import OutputError, ParameterError
from posenc_cli.plot import (
    INSTALL_HINT,
    PlotSource,
    applicable,
    estimate_frequencies,
    frequencies,
    heatmap_panels,
    plot,
    sinusoid_pairs,
    terminal_panels,
)

from .conftest import ROOT, UNDRAWN
from .each import each

# a warning while drawing (a UserWarning, e.g. constrained layout that cannot fit the panels) fails the test
pytestmark = pytest.mark.filterwarnings("error::UserWarning")

#: (kind, view) pairs whose figure is built below from the kind's tensors and checked (read back pixel by pixel,
#: or from its artists; at the view's default size, or a smaller one where a picture is read back in pixels, as
#: what the pixels show does not depend on the size); test_plot_cli draws every other pair a kind declares through
#: the command line. Keep it in step with the tests.
DRAWN_HERE = {
    *(("sinusoidal", view) for view in ("dot", "circle", "spectrum", "compare")),
    *(("rope", view) for view in ("heatmap", "dot", "circle", "spectrum", "compare")),
    ("alibi", "bias"),
}
#: The ways of drawing that are rasterised and read back pixel by pixel: (view, integer values), below, or (heatmap,
#: dot and spectrum) in test_plot_cli.test_readme_pictures_are_current, which draws README's pictures anyway. How a view
#: turns its figure into pixels depends on the view and on whether its values are integers, not on which role the
#: tensor it shows plays (that decides which tensor is read, which the figure's artists show); test_plot_cli
#: rasterises each other way once.
RASTERISED_HERE = {(view, False) for view in ("heatmap", "dot", "circle", "spectrum", "bias", "compare")}

C0 = (31, 119, 180)  # matplotlib's first cycle colour (#1f77b4)
C1 = (255, 127, 14)


def source(spec: str, label: str | None = None, **params) -> PlotSource:
    """A PlotSource as the CLI builds it: every tensor, the kind's roles, the metadata strings."""
    enc = api.generate(spec, **params)
    return PlotSource(
        label or spec, {n: enc.array(n) for n in enc.tensor_specs()}, dict(type(enc).ROLES), enc.metadata()
    )


@pytest.fixture
def mpl():
    return pytest.importorskip("matplotlib")


@pytest.fixture
def built(undrawn, monkeypatch):
    """plot() without drawing (as :func:`undrawn`), and the list of the figures it built, in order: for a test that
    reads what a figure shows from its artists (images, lines, points, texts) where the picture's pixels would test
    matplotlib's drawing of one more source again."""
    from matplotlib.figure import Figure

    figures = []
    monkeypatch.setattr(Figure, "savefig", lambda self, fh, **kwargs: (figures.append(self), fh.write(UNDRAWN)))
    return figures


def panel_axes(figure, result) -> list:
    """The Axes of the result's panels (not the colour bars), in the result's order."""
    titles = [p.title for p in result.panels]
    axes = [ax for ax in figure.axes if ax.get_title() in titles]
    assert [ax.get_title() for ax in axes] == titles
    return axes


def read_rgb(path) -> np.ndarray:
    from matplotlib.image import imread

    return np.rint(imread(str(path))[..., :3] * 255).astype(int)


def to_pixel(panel, x: float, y: float) -> tuple[int, int]:
    """(row, column) of data point (x, y) in a saved panel."""
    x0, y0, x1, y1 = panel.bbox

    def frac(v, lim, scale):
        a, b = lim
        if scale == "log":
            v, a, b = np.log10(v), np.log10(a), np.log10(b)
        return (v - a) / (b - a)

    px = x0 + frac(x, panel.xlim, panel.xscale) * (x1 - x0)
    py = y1 - frac(y, panel.ylim, panel.yscale) * (y1 - y0)
    return int(py), int(px)


def to_data(panel, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Data coordinates of pixel centres (linear axes)."""
    x0, y0, x1, y1 = panel.bbox
    fx = (cols + 0.5 - x0) / (x1 - x0)
    fy = (y1 - (rows + 0.5)) / (y1 - y0)
    return panel.xlim[0] + fx * (panel.xlim[1] - panel.xlim[0]), panel.ylim[0] + fy * (panel.ylim[1] - panel.ylim[0])


def pixels_of(img: np.ndarray, panel, rgb, tol: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of the pixels of colour ``rgb`` strictly inside a panel."""
    x0, y0, x1, y1 = panel.bbox
    mask = np.all(np.abs(img - np.array(rgb)) <= tol, axis=-1)
    inside = np.zeros_like(mask)
    inside[int(y0) + 2 : int(y1) - 1, int(x0) + 2 : int(x1) - 1] = True
    return np.nonzero(mask & inside)


def expected_rgb(panel, value: float) -> np.ndarray:
    import matplotlib as mpl_

    lo, hi = panel.clim
    return np.rint(np.array(mpl_.colormaps[panel.cmap]((value - lo) / (hi - lo))[:3]) * 255).astype(int)


# ----- heatmap --------------------------------------------------------------------------------------------------
def test_heatmap_colour_at_each_cell_follows_the_value(mpl, tmp_path):
    """A table of positive values (viridis), every cell read back; a png without stamps (no version, tool or
    date). Signed values (RdBu_r about 0): README's heatmap, every cell read back in
    test_plot_cli.test_readme_pictures_are_current (a picture drawn there anyway)."""
    table = np.linspace(0.0, 2.0, 6 * 5).reshape(6, 5)[np.random.default_rng(3).permutation(6)]
    res = plot("heatmap", [PlotSource("grid", {"pe": table}, {"pe": "table"})], tmp_path / "h.png", size=(4, 3))
    assert_file_without_stamps(res, "png")
    img = read_rgb(res.path)
    assert img.shape[:2] == (res.size[1], res.size[0])
    (panel,) = res.panels
    assert panel.cmap == "viridis" and panel.clim == (0.0, 2.0)
    for r in range(6):
        for c in range(5):
            got = img[to_pixel(panel, c, r)]
            assert np.abs(got - expected_rgb(panel, table[r, c])).max() <= 2, (r, c, got)


def test_heatmap_of_a_rotary_source_shows_cos_and_sin(built, tmp_path):
    """Two panels whose images are the cos and sin tables on a scale symmetric about 0 (their colour at each cell
    follows the value as the drawn heatmap above shows)."""
    rope = source("rope", length=32, dim=8)
    res = plot("heatmap", [rope], tmp_path / "r.png")
    assert [p.title.split(",")[0] for p in res.panels] == ["rope: cos float32", "rope: sin float32"]
    cos, sin = rope.tensors["cos"], rope.tensors["sin"]
    for panel, ax, table in zip(res.panels, panel_axes(built[0], res), (cos, sin)):
        np.testing.assert_array_equal(ax.images[0].get_array(), table)
        m = float(np.abs(table).max())
        assert panel.cmap == "RdBu_r" and panel.clim == (-m, m)
        assert panel.xlim == (-0.5, 7.5) and panel.ylim == (31.5, -0.5)  # every cell shown, row 0 at the top


# ----- dot ------------------------------------------------------------------------------------------------------
def peak_offset(img, panel, rgb) -> float:
    rows, cols = pixels_of(img, panel, rgb)
    assert rows.size > 50, "no curve drawn"
    top = rows.min()
    ks, _ = to_data(panel, rows[rows <= top + 1], cols[rows <= top + 1])
    return float(np.mean(ks))


@pytest.mark.parametrize("spec", ["sinusoidal", "rope"])
def test_dot_cosine_curve_peaks_at_one_at_offset_zero(built, tmp_path, spec):
    """The cosine of a table's rows and of rope's rotated q, read from the figure (the dot products' curves, the
    same lines from other numbers, are drawn and read back in pixels below): highest, at 1, at offset 0 only."""
    src = source(spec, length=256, dim=32)
    res = plot("dot", [src], tmp_path / "d.png", starts=[128], cosine=True)
    (panel,) = res.panels
    assert panel.xlim[0] < -50 and panel.xlim[1] > 50
    (line,) = [ln for ln in panel_axes(built[0], res)[0].lines if ln.get_label() == "t=128"]
    ks, values = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
    assert ks[0] < -50 and ks[-1] > 50 and ks[np.argmax(values)] == 0 and values.max() == pytest.approx(1.0)
    assert np.all(values[ks != 0] < 1.0 - 1e-6)


def test_dot_products_of_a_table_and_two_bases_each_peak_at_zero(built, tmp_path):
    """The dot product of a table's rows (sinusoidal) and rope's rotated product at two bases, row t = 128 of 256
    each, in one figure, read from its lines: each curve highest at offset 0 only (the dot picture of README.md,
    two tables' curves, is read back in pixels in test_plot_cli.test_readme_pictures_are_current)."""
    srcs = [
        source("sinusoidal", length=256, dim=32),
        source("rope", "base 1e4", length=256, dim=32),
        source("rope:base=500000", "base 5e5", length=256, dim=32),
    ]
    res = plot("dot", srcs, tmp_path / "d3.png")
    (panel,) = res.panels
    assert panel.xlim[0] < -50 and panel.xlim[1] > 50  # t = 128 of 256 rows, offsets up to a quarter of them
    lines = [ln for ln in panel_axes(built[0], res)[0].lines if ln.get_label().endswith(", t=128")]
    assert [ln.get_label() for ln in lines] == ["sinusoidal, t=128", "base 1e4, t=128", "base 5e5, t=128"]
    for line in lines:
        ks, values = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
        assert ks[0] < -50 and ks[-1] > 50 and ks[np.argmax(values)] == 0, line.get_label()
        assert np.all(values[ks != 0] < values[ks == 0][0]), line.get_label()


def test_dot_rotated_product_equals_the_rotation_for_any_layout():
    """The layout-free formula the dot view uses agrees with rotating q for real (half and interleaved)."""
    from posenc_cli.checks.rotary import rotate
    from posenc_cli.plot import _dot_curves

    for layout in ("half", "interleaved"):
        src = source(f"rope:layout={layout}", length=40, dim=8)
        curves, _ = _dot_curves(src, [20], 5, cosine=False)
        _, ks, got = curves[0]
        q = np.sqrt(np.random.default_rng(0).standard_normal(8) ** 2)  # the view's weights are q_c**2
        cos, sin = src.tensors["cos"].astype(np.float64), src.tensors["sin"].astype(np.float64)
        rq = rotate(np.tile(q, (40, 1)), cos, sin, layout)
        np.testing.assert_allclose(got, rq[20 + ks] @ rq[20], rtol=1e-9)


# ----- circle ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", ["sinusoidal", "rope", "rope:cache=onnx"])
def test_circle_points_lie_on_the_circle(request, tmp_path, spec):
    """A table's points drawn and read back in pixels; a rotary source's (full tables, or caches) read from the
    figure (the same scatter drawn from other numbers)."""
    built = request.getfixturevalue("built") if spec != "sinusoidal" else None
    if built is None:
        pytest.importorskip("matplotlib")
    res = plot("circle", [source(spec, length=64, dim=16)], tmp_path / "c.png", positions=16)
    (panel,) = res.panels
    if built is None:
        rows, cols = pixels_of(read_rgb(res.path), panel, C0)
        assert rows.size > 100
        x, y = to_data(panel, rows, cols)
        tol = 0.04
    else:
        (points,) = panel_axes(built[0], res)[0].collections
        x, y = np.asarray(points.get_offsets(), dtype=np.float64).T
        assert x.size == 16 and (x[0], y[0]) == (1.0, 0.0)
        tol = 1e-6
    radius = np.hypot(x, y)
    assert np.all(np.abs(radius - 1.0) < tol), (radius.min(), radius.max())
    angles = np.unique(np.floor(np.degrees(np.arctan2(y, x)) / 10))
    assert angles.size >= 12  # 16 positions one radian apart spread all round


def test_circle_puts_position_zero_at_angle_zero():
    pe = source("sinusoidal", length=32, dim=8).tensors["pe"]  # interleaved: sin in even columns, cos in odd
    pairs = sinusoid_pairs(pe)
    assert pairs[0] == (1, 0) and [p[0] % 2 for p in pairs] == [1, 1, 1, 1]


# ----- spectrum -------------------------------------------------------------------------------------------------
def test_spectrum_draws_the_wavelengths_and_the_original_context_where_it_is(built, tmp_path):
    """A table's line is the wavelengths measured on it, rising (sinusoidal 128 x 64: 2 pi / the formula's
    frequencies), and one dashed grey line across the panel at the llama3 source's original context, 8192 (the
    other sources have none), labelled there; read from the figure (the spectrum picture of README.md is read back
    in pixels in test_plot_cli.test_readme_pictures_are_current)."""
    srcs = [
        source("sinusoidal", length=128, dim=64),
        source("rope:base=500000", "none", length=256, dim=64),
        source("rope:preset=llama3.1", "llama3", length=256, dim=64),
    ]
    res = plot("spectrum", srcs, tmp_path / "s2.png")
    (panel,) = res.panels
    ax = panel_axes(built[0], res)[0]
    assert panel.yscale == "log" and panel.ylim[0] < 8192 < panel.ylim[1]
    (table,) = [ln for ln in ax.lines if ln.get_label() == "sinusoidal (measured on pe)"]
    wave = np.asarray(table.get_ydata())
    np.testing.assert_allclose(wave, 2 * np.pi * 10000.0 ** (np.arange(0, 64, 2) / 64), rtol=1e-6)
    assert np.all(np.diff(wave) > 0) and list(table.get_xdata()) == list(range(32))
    grey = [ln for ln in ax.lines if ln.get_color() == "#555555"]
    assert [(tuple(ln.get_xdata()), tuple(ln.get_ydata()), ln.get_linestyle()) for ln in grey] == [
        ((0, 1), (8192.0, 8192.0), "--")  # x from the panel's left edge to its right (axes coordinates)
    ]
    assert grey[0].get_transform() == ax.get_yaxis_transform()
    assert [(t.get_text(), t.xy[1]) for t in ax.texts] == [("original context 8192", 8192.0)]


def test_frequencies_measured_on_the_data_match_the_formulas():
    sin = source("sinusoidal", length=64, dim=32, dtype="float64")
    w, how = frequencies(sin)
    np.testing.assert_allclose(w, 10000.0 ** (-np.arange(0, 32, 2) / 32), rtol=1e-9)
    assert how == "measured on pe"
    rope = source("rope:preset=llama3.1", length=512, dim=128)  # wavelengths up to 2e7 positions from 512 rows
    cos_sin = PlotSource("r", {"cos": rope.tensors["cos"], "sin": rope.tensors["sin"]})
    w, how = frequencies(cos_sin)
    np.testing.assert_allclose(w, rope.tensors["inv_freq"], rtol=1e-5)
    assert how == "measured on cos/sin" and frequencies(rope)[1] == "inv_freq"


def test_estimate_frequencies_on_exact_data():
    t = np.arange(100)[:, None]
    w = np.array([3.0, 0.5, 1e-3, 1e-6])
    np.testing.assert_allclose(estimate_frequencies(np.exp(1j * t * w)), w, rtol=1e-9)


def test_longer_lags_sharpen_frequencies_of_coarse_tables():
    """bfloat16 cos/sin: lag 1 alone is off by ~3e-3; unwrapping lags 2, 4, ..., 1024 gets within 1e-4."""
    enc = api.generate("rope", length=2048, dim=64, dtype="bfloat16")
    cos, sin, inv = (np.asarray(enc.array(n), dtype=np.float64) for n in ("cos", "sin", "inv_freq"))
    np.testing.assert_allclose(estimate_frequencies((cos + 1j * sin)[:, :32]), inv, rtol=2e-4)


def test_only_sin_cos_columns_count_as_pairs():
    def no_pairs(spec: str) -> None:
        src = source(spec, length=196, dim=16)
        assert sinusoid_pairs(src.tensors["pe"]) is None
        assert "circle" not in applicable([src]) and "spectrum" not in applicable([src])

    each(["learned", "index", "binary", "normalized", "sinusoidal-2d"], no_pairs)


def test_a_plot_measures_a_source_once(built, tmp_path, monkeypatch):
    """Whether a view applies and the view itself read the same pairs: a table's oscillators are measured and a
    source's cos/sin tables found once per source (each was 3-40 ms again), and the figure shows what they hold
    (fails with the measurement or the search run again, or with the remembered pairs of another table)."""
    import posenc_cli.inspect.analysis as an

    sin, rope = source("sinusoidal", length=64, dim=16), source("rope", length=64, dim=16)
    cos_col, sin_col = sinusoid_pairs(sin.tensors["pe"])[1]  # measured here, before counting
    calls = {"analysis": 0, "rotary": 0}
    analysis_init, find_rotary = an.TableAnalysis.__init__, PlotSource._find_rotary

    def counted_analysis(self, *args, **kwargs):
        calls["analysis"] += 1
        analysis_init(self, *args, **kwargs)

    def counted_rotary(self):
        calls["rotary"] += 1
        return find_rotary(self)

    monkeypatch.setattr(an.TableAnalysis, "__init__", counted_analysis)
    monkeypatch.setattr(PlotSource, "_find_rotary", counted_rotary)
    plot("circle", [sin], tmp_path / "c.png", pair=1)
    assert calls == {"analysis": 1, "rotary": 1}
    ax = built[0].axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == (f"pe[:, {cos_col}] (cos-like)", f"pe[:, {sin_col}] (sin-like)")
    plot("spectrum", [sin, rope], tmp_path / "s.png")  # rope's frequencies are its inv_freq
    assert calls == {"analysis": 1, "rotary": 1}  # the sinusoidal table was measured above
    plot("circle", [rope], tmp_path / "r.png", pair=1)
    assert calls == {"analysis": 1, "rotary": 2}  # rope's tables found once, to apply the view and to draw it
    assert built[2].axes[0].get_xlabel().startswith("cos[:, 1]")


# ----- bias and compare -----------------------------------------------------------------------------------------
def test_bias_shows_values_and_the_causal_mask_in_grey(mpl, tmp_path):
    """Five heads: two rows of panels, the second short (its x axis labelled on its own), one colour scale. Drawn
    at 8 x 4.5 inches: the default 15 x 7.1 spreads the same panels with more ticks to lay out (a third more CPU);
    the view's default size is drawn for t5 in test_plot_cli."""
    alibi = source("alibi:causal=true", length=16, dim=5)
    res = plot("bias", [alibi], tmp_path / "b.png", size=(8, 4.5))
    assert [p.title for p in res.panels] == [f"head {h} of 5" for h in range(5)]
    img = read_rgb(res.path)
    for h in (0, 2, 4):
        panel, bias = res.panels[h], alibi.tensors["bias"][h]
        assert np.abs(img[to_pixel(panel, 15, 0)] - 189).max() <= 2  # -inf above the diagonal: masked grey
        for i, j in ((15, 0), (10, 3), (5, 5)):
            assert np.abs(img[to_pixel(panel, j, i)] - expected_rgb(panel, bias[i, j])).max() <= 2


def test_bias_head_shows_that_head_alone(undrawn, tmp_path):
    res = plot("bias", [source("alibi:causal=true", length=16, dim=8)], tmp_path / "b.png", head=2)
    assert [p.title for p in res.panels] == ["head 2 of 8"]
    assert len(plot("bias", [source("alibi", length=16, dim=12)], tmp_path / "b12.png").panels) == 8  # at most 8


def test_compare_difference_panel_shows_where_tables_differ(mpl, tmp_path):
    a = source("sinusoidal", length=16, dim=8)
    changed = a.tensors["pe"].copy()
    changed[5, 3] += 0.5
    b = PlotSource("changed", {"pe": changed}, {"pe": "table"})
    res = plot("compare", [a, b], tmp_path / "cmp.png", size=(8, 3))  # the view's default is 14.4 x 5 inches
    diff = res.panels[2]
    img = read_rgb(res.path)
    assert np.abs(img[to_pixel(diff, 3, 5)] - expected_rgb(diff, -0.5)).max() <= 2
    assert np.abs(img[to_pixel(diff, 0, 0)] - expected_rgb(diff, 0.0)).max() <= 2


# ----- roles, applicability, errors -----------------------------------------------------------------------------
def test_roles_in_either_vocabulary_or_inferred_give_the_same_views():
    rope = source("rope", length=32, dim=8)
    tensors = rope.tensors
    engine = PlotSource("a", tensors, {"cos": "cos", "sin": "sin", "inv_freq": "inv-freq"})
    brief = PlotSource("b", tensors, {"cos": "rotary", "sin": "rotary", "inv_freq": "inv-freq"})
    inferred = PlotSource("c", tensors)
    views = applicable([engine])
    assert views == ["heatmap", "dot", "circle", "spectrum"]
    assert applicable([brief]) == views == applicable([inferred])
    assert applicable([PlotSource("t5", {"buckets": np.zeros((4, 4), np.int64)})]) == ["bias"]


def test_a_view_that_does_not_apply_lists_those_that_do(tmp_path):
    def refused(case) -> None:
        spec, view, choices = case
        with pytest.raises(ParameterError) as err:
            plot(view, [source(spec, length=16, dim=8)], tmp_path / "x.png")
        assert str(err.value).endswith(choices) and f"view {view} does not apply" in str(err.value), str(err.value)
        assert not (tmp_path / "x.png").exists()

    each([
        ("learned", "circle", "choose from: heatmap, dot"),
        ("learned", "spectrum", "choose from: heatmap, dot"),
        ("alibi", "heatmap", "choose from: bias"),
        ("xpos", "dot", "choose from: heatmap"),
        ("sinusoidal", "bias", "choose from: heatmap, dot, circle, spectrum"),
    ], refused)  # fmt: skip


def test_compare_needs_two_sources_and_unknown_views_are_named(tmp_path):
    with pytest.raises(ParameterError, match=r"it needs .*2 sources\); choose from: heatmap, dot"):
        plot("compare", [source("learned", length=8, dim=4)], tmp_path / "x.png")
    with pytest.raises(ParameterError, match=r"unknown view 'heat'; choose from: heatmap, dot, circle, spectrum"):
        plot("heat", [source("learned", length=8, dim=4)], tmp_path / "x.png")


def test_without_matplotlib_the_error_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    with pytest.raises(ParameterError) as err:
        plot("heatmap", [source("sinusoidal", length=8, dim=4)], tmp_path / "x.png")
    assert str(err.value) == INSTALL_HINT
    assert INSTALL_HINT == "plotting to a file needs matplotlib; install it with: pip install 'posenc-cli[plot]'"
    assert not (tmp_path / "x.png").exists()


def test_other_suffixes_are_refused_by_name(tmp_path):
    src = [source("sinusoidal", length=8, dim=4)]

    def refused(name: str) -> None:
        with pytest.raises(ParameterError, match=r"use a \.png, \.svg or \.pdf file") as err:
            plot("heatmap", src, tmp_path / name)
        assert name in str(err.value)

    each(["pe.jpg", "pe", "pe.png.txt"], refused)


def test_terminal_panels_without_matplotlib(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    ((title, a),) = terminal_panels(source("alibi", length=16, dim=4))
    assert title == "alibi: bias head 0 of 4, query x key, 16 positions" and a.shape == (16, 16)
    assert [t.split(",")[0] for t, _ in heatmap_panels(source("rope", length=4, dim=4))] == [
        "rope: cos float32",
        "rope: sin float32",
    ]


# ----- files ----------------------------------------------------------------------------------------------------
#: what matplotlib stamps into a file unless told not to: its name, version and the date
STAMPS = {"png": [b"tEXt", b"tIME"], "svg": [b"<dc:date>", b"<dc:creator>"], "pdf": [b"/CreationDate", b"/ModDate"]}


def assert_file_without_stamps(result, fmt: str) -> bytes:
    """The file is a ``fmt`` picture with no version, tool or date in its bytes, and no temporary file is left."""
    data = Path(result.path).read_bytes()
    assert result.format == fmt and data.startswith({"png": b"\x89PNG", "svg": b"<?xml", "pdf": b"%PDF"}[fmt])
    assert b"Matplotlib" not in data and b"matplotlib.org" not in data
    assert not [stamp for stamp in STAMPS[fmt] if stamp in data]
    assert not [p for p in os.listdir(os.path.dirname(result.path)) if p.startswith(".posenc-plot-")]
    return data


def test_the_layout_pass_only_lays_out(mpl, tmp_path, monkeypatch):
    """savefig draws a figure with a layout engine twice, the first time with drawing disabled so that the engine
    measures; plot's figure (plot._figure_class) only runs the engine then: each Axes is drawn once instead of
    twice (the file is the one a plain matplotlib Figure gives, byte for byte and panel for panel: the svg test
    below). A pdf without stamps (no version, tool or date; png stamps: the heatmap test's picture)."""
    from matplotlib.axes import Axes

    drawn = []
    axes_draw = Axes.draw
    monkeypatch.setattr(Axes, "draw", lambda self, renderer: (drawn.append(self), axes_draw(self, renderer))[1])
    srcs = [source("rope", "base 1e4", length=64, dim=8), source("rope:base=500000", "base 5e5", length=64, dim=8)]
    ours = plot("dot", srcs, tmp_path / "ours.pdf", size=(3, 2), dpi=40)  # one panel, a legend outside it
    assert len(drawn) == 1
    assert_file_without_stamps(ours, "pdf")


def test_svg_is_the_same_in_another_process_and_with_a_plain_figure(mpl, tmp_path):
    """An svg without stamps (as the png and pdf above), drawn here and in a fresh interpreter with another
    string-hash seed and a plain matplotlib Figure instead of plot's (plot._figure_class, whose layout pass only
    lays out): the same bytes and the same panels (no set order or id leaks into the file, and the layout pass
    changes nothing in it: an svg holds every element's place, text and colour). The table is four sin/cos waves
    made with numpy on both sides: the child imports plot and matplotlib only (not the engine, this module, pytest
    or hypothesis), and a picture of 3 x 2 inches holds the same kinds of element (lines, legend, ticks, clip
    paths)."""
    import json

    code = (
        "import sys, json; sys.path.insert(0, sys.argv[2]); import numpy as np; from matplotlib.figure import Figure; "
        "import posenc_cli.plot as p; p._figure_class = lambda: Figure; "
        f"t = {WAVES}; r = p.plot('dot', [p.PlotSource('waves', {{'pe': np.concatenate([np.sin(t), np.cos(t)], 1)}})], "
        "sys.argv[1], size=(3, 2)); print(json.dumps(r.to_json()['panels']))"
    )
    t = eval(WAVES)
    waves = PlotSource("waves", {"pe": np.concatenate([np.sin(t), np.cos(t)], 1)})
    here = plot("dot", [waves], tmp_path / "here.svg", size=(3, 2))
    assert_file_without_stamps(here, "svg")
    seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"  # not this process's seed
    env = {"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"}
    env.update({k: os.environ[k] for k in ("PYTHONDONTWRITEBYTECODE",) if k in os.environ})  # no bytecode here
    there = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "there.svg"), str(ROOT)],
        check=True, env=env, cwd=ROOT, capture_output=True,
    )  # fmt: skip
    assert (tmp_path / "here.svg").read_bytes() == (tmp_path / "there.svg").read_bytes()
    assert json.loads(there.stdout) == json.loads(json.dumps(here.to_json()["panels"]))


#: the angles of the svg test's table, in both processes: 32 positions, four frequencies halving from 1 rad
WAVES = "np.arange(32.0)[:, None] * 0.5 ** np.arange(4)"


def test_compare_of_a_table_with_itself_shows_no_difference(built, tmp_path):
    """Two equal tables: the difference panel is all zero (its colour scale cannot come from the data; the colour
    of 0 is read back in the picture above); A and B share one colour scale and one colour bar, the difference has
    its own. Every (kind, view) a kind declares is drawn in
    test_plot_cli.test_every_declared_view_renders_for_its_kind."""
    a = source("rope", length=16, dim=8)
    res = plot("compare", [a, a], tmp_path / "same.png")
    diff = res.panels[2]
    assert diff.title == "A - B (max |A - B| = 0)" and diff.clim == (-1.0, 1.0) and diff.cmap == "RdBu_r"
    assert res.panels[0].clim == res.panels[1].clim and res.panels[0].cmap == res.panels[1].cmap
    bars = [ax.get_ylabel() for ax in built[0].axes if ax not in panel_axes(built[0], res)]
    assert sorted(bars) == ["difference", "value (A and B)"]


# ----- one writer for tables and pictures -------------------------------------------------------------------
def test_an_existing_picture_is_refused_without_force_and_replaced_with_it(undrawn, tmp_path):
    out = tmp_path / "pe.png"
    out.write_bytes(b"old picture")
    with pytest.raises(OutputError) as err:
        plot("heatmap", [source("sinusoidal", length=8, dim=4)], out)
    assert str(err.value) == f"{out} exists; pass force to overwrite"
    assert out.read_bytes() == b"old picture" and sorted(os.listdir(tmp_path)) == ["pe.png"]
    result = plot("heatmap", [source("sinusoidal", length=8, dim=4)], out, force=True)
    assert out.read_bytes() == UNDRAWN and result.path == str(out)  # what savefig wrote
    assert sorted(os.listdir(tmp_path)) == ["pe.png"]  # no temporary file left beside it


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_picture_permissions_follow_the_umask_like_tables(undrawn, tmp_path, umask):
    """The picture goes through the tables' writer, which sets the permissions (matplotlib's drawing writes a few
    bytes into the writer's file here)."""
    old = os.umask(umask)
    try:
        plot("heatmap", [source("sinusoidal", length=8, dim=4)], tmp_path / "pe.png")
        api.write(tmp_path / "pe.npy", "sinusoidal:length=8,dim=4")
    finally:
        os.umask(old)
    assert (tmp_path / "pe.png").stat().st_mode & 0o777 == 0o666 & ~umask
    assert (tmp_path / "pe.npy").stat().st_mode & 0o777 == 0o666 & ~umask


@pytest.mark.parametrize("exc", [KeyboardInterrupt, RuntimeError])
def test_an_exception_while_saving_leaves_the_old_picture_and_no_temp_file(mpl, tmp_path, monkeypatch, exc):
    from matplotlib.figure import Figure

    out = tmp_path / "pe.png"
    out.write_bytes(b"old picture")

    def boom(self, fh, **kwargs):
        fh.write(b"half a picture")
        raise exc("stop")

    monkeypatch.setattr(Figure, "savefig", boom)
    with pytest.raises(exc):
        plot("heatmap", [source("sinusoidal", length=8, dim=4)], out, force=True)
    assert out.read_bytes() == b"old picture" and sorted(os.listdir(tmp_path)) == ["pe.png"]


def test_plot_result_summary_has_the_wrote_shape(undrawn, tmp_path):
    result = plot("spectrum", [source("rope", length=64, dim=16)], tmp_path / "spectrum.png", size=(8, 5), dpi=100)
    assert result.summary() == f"wrote {tmp_path / 'spectrum.png'} (spectrum view, png, 800 x 500 px)"


# ----- every number is checked where it enters ----------------------------------------------------------------
#: (view, source, plot's keyword arguments, what the refusal says)
BAD_NUMBERS = [
    ("heatmap", "sinusoidal", {"dpi": 0}, "dpi=0 is out of range; pass an integer from 1 to 32768"),
    ("heatmap", "sinusoidal", {"dpi": 2.5}, "dpi=2.5 is not an integer; pass an integer from 1 to 32768"),
    (
        "heatmap",
        "sinusoidal",
        {"dpi": 100000},
        "dpi=100000 is out of range; pass an integer from 1 to 32768",
    ),
    (
        "heatmap",
        "sinusoidal",
        {"dpi": 5000},
        "dpi=5000 makes a 28000 x 25000 px picture, above the 32768 px a side and 67108864 px in all a "
        "picture may have; pass dpi=1548 or less, or a smaller size",
    ),
    ("heatmap", "sinusoidal", {"size": (0, 5)}, "size=0.0 is out of range; pass a finite number > 0 and <= 50"),
    ("heatmap", "sinusoidal", {"size": (8, float("inf"))}, "size=inf is out of range; pass a finite number > 0"),
    ("heatmap", "sinusoidal", {"size": (8, float("nan"))}, "size=nan is out of range"),
    ("heatmap", "sinusoidal", {"size": (-8, 5)}, "size=-8.0 is out of range"),
    ("heatmap", "sinusoidal", {"size": (51, 5)}, "size=51.0 is out of range; pass a finite number > 0 and <= 50"),
    ("heatmap", "sinusoidal", {"size": (8,)}, "size=(8,) is not (width, height) in inches"),
    ("circle", "sinusoidal", {"pair": -1}, "pair=-1 is out of range; pass an integer >= 0"),
    ("circle", "sinusoidal", {"pair": 2}, "pair=2 is outside sinusoidal's 2 frequency pairs; pass 0 <= pair <= 1"),
    ("circle", "rope", {"pair": 2}, "pair=2 is outside rope's 2 frequency pairs; pass 0 <= pair <= 1"),
    ("circle", "rope", {"positions": 0}, "positions=0 is out of range; pass an integer from 1 to 4096"),
    ("circle", "rope", {"positions": 5000}, "positions=5000 is out of range; pass an integer from 1 to 4096"),
    ("circle", "rope", {"positions": 17}, "positions=17 asks for more positions than the 16 rows shown"),
    ("dot", "sinusoidal", {"max_offset": -3}, "max_offset=-3 is out of range; pass an integer from 1 to 4095"),
    ("dot", "sinusoidal", {"max_offset": 0}, "max_offset=0 is out of range"),
    ("dot", "sinusoidal", {"starts": [-1]}, "starts=-1 is out of range; pass an integer >= 0"),
    (
        "dot",
        "sinusoidal",
        {"starts": [3, 16]},
        "starts holds 16, outside sinusoidal's rows; pass rows t with 0 <= t <= 15",
    ),
    ("dot", "sinusoidal", {"starts": []}, "starts=[] names no row"),
    ("bias", "alibi", {"head": 4}, "head=4 is outside alibi's 4 heads; pass 0 <= head <= 3"),
    ("bias", "alibi", {"head": -1}, "head=-1 is out of range; pass an integer >= 0"),
    ("heatmap", "sinusoidal", {"max_bytes": 1000}, "a 560 x 500 px picture needs 1.1 MiB of raster, above"),
]


def test_bad_numbers_are_refused_by_name_before_anything_is_written(mpl, tmp_path):
    """Every case of BAD_NUMBERS (one test over the cases: tests/each.py names each one that fails)."""
    sources = {spec: [source(spec, length=16, dim=4)] for spec in ("sinusoidal", "rope", "alibi")}

    def refused(case) -> None:
        view, spec, kwargs, message = case
        with pytest.raises(ParameterError) as err:
            plot(view, sources[spec], tmp_path / "x.png", **kwargs)
        assert message in str(err.value), str(err.value)
        assert "\n" not in str(err.value) and not (tmp_path / "x.png").exists()

    each(BAD_NUMBERS, refused)


def test_max_bytes_bounds_the_raster_exactly(undrawn, tmp_path):
    """A 560 x 500 px heatmap needs 560 * 500 * 4 bytes of RGBA: that limit lets it be drawn, one byte less refuses
    it (before drawing)."""
    src = [source("sinusoidal", length=16, dim=4)]
    with pytest.raises(ParameterError, match=r"pass max_bytes=1120000$"):
        plot("heatmap", src, tmp_path / "x.png", max_bytes=560 * 500 * 4 - 1)
    assert plot("heatmap", src, tmp_path / "x.png", max_bytes=560 * 500 * 4).size == (560, 500)


def test_dot_max_offset_and_starts_choose_the_curves(mpl, tmp_path):
    from posenc_cli.plot import _dot_curves

    curves, _ = _dot_curves(source("sinusoidal", length=16, dim=4), [0, 15], 3, False)
    assert [(t, ks.tolist()) for t, ks, _ in curves] == [(0, [0, 1, 2, 3]), (15, [-3, -2, -1, 0])]


def test_circle_positions_default_to_sixteen_or_the_whole_short_table(undrawn, tmp_path):
    short = plot("circle", [source("rope", length=8, dim=4)], tmp_path / "a.png")
    assert short.panels[0].title == "frequency pair 0: positions 0..7, each one step of ω further round"
    long = plot("circle", [source("rope", length=64, dim=4)], tmp_path / "b.png")
    assert long.panels[0].title == "frequency pair 0: positions 0..15, each one step of ω further round"
    five = plot("circle", [source("rope", length=64, dim=4)], tmp_path / "c.png", positions=5)
    assert five.panels[0].title == "frequency pair 0: positions 0..4, each one step of ω further round"


def test_the_dpi_a_refusal_suggests_is_the_largest_that_fits():
    from posenc_cli.plot import MAX_PIXELS, _check_raster

    _check_raster((5.6, 5.0), 1548, 1 << 40)  # 8669 x 7740 = 67098060 px <= 2**26: accepted
    assert round(5.6 * 1549) * round(5.0 * 1549) > MAX_PIXELS
    with pytest.raises(ParameterError, match=r"pass dpi=1548 or less"):
        _check_raster((5.6, 5.0), 1549, 1 << 40)


def test_pairs_and_frequencies_of_a_split_table_come_from_the_table_analysis():
    """A NumPy-built float32 table, sin block then cos block, positions from 5: plot's pairs and frequencies are the
    spectrum identify and diagnose measure (the cos column of each pair first, highest frequency first)."""
    from posenc_cli.inspect import analysis as an

    w = np.array([0.9, 0.05, 0.3, 2e-4])
    t = np.arange(5, 205, dtype=np.float64)[:, None]
    table = np.concatenate([np.sin(t * w), np.cos(t * w)], axis=1).astype(np.float32)
    pairs = sinusoid_pairs(table)
    assert pairs == [(4, 0), (6, 2), (5, 1), (7, 3)]
    got, how = frequencies(PlotSource("split", {"pe": table}))
    np.testing.assert_allclose(got, np.sort(w)[::-1], rtol=1e-5)
    spec = an.TableAnalysis({"pe": table}).spectrum
    assert sorted(pairs) == sorted((c, s) for s, c in spec.pairs) and how == "measured on pe"
