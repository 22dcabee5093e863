"""`posenc plot` from the command line: every view a kind declares renders (each kind's default view for every
kind, the others once per role of the tensor they draw; test_plot.py draws the rest) and, once per way of drawing
that test_plot.py does not rasterise, its pixels are not blank; a view that does not apply is a one-line error
listing those that do, the terminal heatmap fits the terminal, a pipe without -o is refused, and README's pictures
are current.

The views' content (colours per cell, the dot curve's peak, points on the circle) is tested in test_plot.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from posenc_cli import api
from posenc_cli.encodings import KINDS, get_kind
from posenc_cli.plot import PanelInfo

from .conftest import ROOT, UNDRAWN, cli, cli_tty
from .test_plot import C0, C1, DRAWN_HERE, RASTERISED_HERE, peak_offset, pixels_of, to_data, to_pixel

matplotlib = pytest.importorskip("matplotlib")

#: parameters that build a small example of each kind for plotting
SPECS = {kind: get_kind(kind).EXAMPLE for kind in KINDS}
SPECS.update(
    {
        "sinusoidal": {"length": 64, "dim": 32},
        "rope": {"length": 64, "dim": 16},
        "xpos": {"length": 64, "dim": 16},
        "learned": {"length": 64, "dim": 16},
        "alibi": {"length": 12, "dim": 4},
        "t5": {"length": 12},
        "relative": {"length": 12},
    }
)


def spec(kind: str, **extra: object) -> str:
    from posenc_cli.encodings.base import format_value

    params = {**SPECS[kind], **extra}
    return kind + ":" + ",".join(f"{k}={format_value(v)}" for k, v in params.items())


def _role_drawn(kind: str) -> str:
    """The role of the tensor ``kind``'s views draw (table, scale, cos or matrix): a view reads nothing else."""
    roles = dict(get_kind(kind).ROLES)
    return next(r for r in ("table", "scale", "cos", "matrix") if r in roles.values())


def _drawn_as(kind: str, view: str) -> tuple[str, bool]:
    """What decides how a view's figure becomes pixels: the view, and integer or float values (the tensor's role
    decides which tensor the figure shows, which building the figure checks for each role)."""
    return view, bool(getattr(get_kind(kind), "INTEGER_TABLE", False))


def _cases() -> list[tuple[str, str, bool]]:
    """Each kind's default view (its first), for every kind; any other view once per role it draws (two kinds
    whose tensors have the same role draw it with the same code); none of the pairs test_plot.py draws and
    checks (DRAWN_HERE there). The third item: whether the picture is rasterised, once per :func:`_drawn_as` not
    rasterised in test_plot.py (RASTERISED_HERE there; the others build the same figure from their own data, and
    matplotlib draws it in 0.2-0.8 CPU-s that would test the same code again)."""
    covered = {(view, _role_drawn(kind)) for kind, view in DRAWN_HERE}
    rasterised = set(RASTERISED_HERE)
    cases = []
    for kind in KINDS:
        for i, view in enumerate(get_kind(kind).VIEWS):
            if (kind, view) in DRAWN_HERE or (i > 0 and (view, _role_drawn(kind)) in covered):
                continue
            cases.append((kind, view, _drawn_as(kind, view) not in rasterised))
            covered.add((view, _role_drawn(kind)))
            rasterised.add(_drawn_as(kind, view))
    return cases


CASES = _cases()


@pytest.mark.parametrize("kind,view,drawn", CASES, ids=[f"{k}-{v}" for k, v, _ in CASES])
def test_every_declared_view_renders_for_its_kind(tmp_path, request, kind, view, drawn):
    """Each (kind, view) of CASES builds its figure from the kind's tensors and, once per way of drawing
    (:func:`_drawn_as`), draws a picture that is not blank, with no warning on the way. The default view (the
    first the kind declares; compare for two tables) is drawn without --view, so it is the one chosen."""
    if not drawn:
        request.getfixturevalue("undrawn")
    out = tmp_path / f"{kind}-{view}.png"
    sources = [spec(kind)]
    if view == "compare":
        sources.append(spec(kind, dtype="float16"))
    default = view == ("compare" if len(sources) == 2 else get_kind(kind).VIEWS[0])
    # --dpi 50: the layout is the default size's (in inches), a quarter of the pixels
    code, _, err = cli(["plot", *sources, *([] if default else ["--view", view]), "-o", str(out), "--dpi", "50"])
    assert code == 0, err
    assert re.fullmatch(rf"wrote {re.escape(str(out))} \({view} view, png, \d+ x \d+ px\)\n", err), err
    if not drawn:
        assert out.read_bytes() == UNDRAWN
        return
    img = matplotlib.image.imread(out)
    assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
    assert float(np.std(img[..., :3])) > 0.05, "a blank picture"


def test_a_view_that_does_not_apply_lists_those_that_do(tmp_path):
    code, _, err = cli(["plot", spec("learned"), "--view", "circle", "-o", str(tmp_path / "x.png")])
    assert code == 2 and err.count("\n") == 1
    assert "circle does not apply" in err and "choose from: heatmap, dot" in err, err
    assert not (tmp_path / "x.png").exists()


def test_view_options_for_another_view_are_refused(tmp_path):
    code, _, err = cli(["plot", spec("sinusoidal"), "--view", "heatmap", "--pair", "2", "-o", str(tmp_path / "x.png")])
    assert code == 2 and "--pair cannot apply" in err, err


def test_the_terminal_heatmap_fits_the_terminal():
    for columns in ("80", "120"):
        code, shown = cli_tty(["plot", spec("sinusoidal")], env={"COLUMNS": columns, "LINES": "30"})
        assert code == 0, shown
        lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in shown.splitlines()]
        assert len(lines) > 5 and max(len(line) for line in lines) <= int(columns), columns
        assert any("▀" in line or "▄" in line or "█" in line for line in lines)


def test_piped_without_output_is_refused():
    code, out, err = cli(["plot", spec("sinusoidal")])
    assert code == 2 and out == b"" and "pass -o FILE.png" in err


def test_every_declared_view_is_one_the_plot_engine_can_draw():
    """Each kind's VIEWS declaration agrees with what the engine finds in its tensors (roles)."""
    assert all(view in get_kind(kind).VIEWS for kind, view in DRAWN_HERE), DRAWN_HERE
    from posenc_cli import plot
    from posenc_cli.api import open_table

    for kind in KINDS:
        src = open_table(spec(kind))
        ps = plot.PlotSource(kind, {n: src.array(n) for n in src.names}, dict(get_kind(kind).ROLES), src.metadata)
        fits = plot.applicable([ps])
        assert set(get_kind(kind).VIEWS) - {"compare"} <= set(fits), (kind, fits)
        if "compare" in get_kind(kind).VIEWS:  # (drawn for one kind per role above) the tensor it draws
            name, _ = plot._primary(ps)
            assert dict(get_kind(kind).ROLES)[name] == _role_drawn(kind), kind


def test_readme_pictures_are_current(tmp_path):
    """tools/pictures.py draws them again (in this process: a fresh interpreter adds a second of imports per
    picture); the pixels must equal the committed files'. The fresh dot and spectrum pictures are also the ones of
    those views read back in pixels (test_plot.py reads their figures from the artists): each curve of the dot
    picture (two tables) peaks at offset 0, the heatmap's colour at every cell follows the value there (signed values:
    RdBu_r about 0; test_plot.py draws positive ones), and the spectrum's first line (rope, 128 features) lies where its
    wavelengths are, column by column. Those checks hold whatever matplotlib's version; the comparison with the
    committed files only with the version they were drawn with (docs/pictures/VERSION)."""
    import importlib.util

    spec_ = importlib.util.spec_from_file_location("pictures", ROOT / "tools" / "pictures.py")
    module = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(module)
    results = {}

    def plot(args: list[str]) -> None:
        code, out, err = cli(["plot", *args, "--json"])
        assert code == 0 and err == "", err
        result = json.loads(out)
        results[Path(result["path"]).name] = result

    paths = module.draw(tmp_path, plot)
    fresh = {path.name: matplotlib.image.imread(path) for path in paths}  # each picture decoded once
    rgb = {name: np.rint(img[..., :3] * 255).astype(int) for name, img in fresh.items()}  # as test_plot.read_rgb
    assert module.PICTURES["heatmap.png"][:5] == ["sinusoidal:preset=tf-tutorial", "--len", "64", "--dim", "64"]
    heat = PanelInfo(**results["heatmap.png"]["panels"][0])
    pe = api.generate("sinusoidal:preset=tf-tutorial", length=64, dim=64).array("pe")
    assert heat.cmap == "RdBu_r" and heat.clim == [-1.0, 1.0]  # signed values: a scale symmetric about 0
    assert_cells_follow(rgb["heatmap.png"], heat, pe)
    assert module.PICTURES["dot.png"][:2] == ["sinusoidal", "sinusoidal:base=100"]
    dot, spectrum = (PanelInfo(**results[name]["panels"][0]) for name in ("dot.png", "spectrum.png"))
    for colour in (C0, C1):
        assert abs(peak_offset(rgb["dot.png"], dot, colour)) <= 1.0, colour
    assert module.PICTURES["spectrum.png"][0] == "rope" and "128" in module.PICTURES["spectrum.png"]
    wave = 2 * np.pi * 10000.0 ** (np.arange(0, 128, 2) / 128)  # rope's wavelengths, pair i = 0 .. 63
    assert_line_follows(rgb["spectrum.png"], spectrum, C0, wave)
    recorded = (ROOT / "docs" / "pictures" / "VERSION").read_text().split()[-1]
    if recorded != matplotlib.__version__:
        pytest.skip(f"pictures were drawn with matplotlib {recorded}, this is {matplotlib.__version__}")
    for path in paths:
        committed = matplotlib.image.imread(ROOT / "docs" / "pictures" / path.name)
        assert committed.shape == fresh[path.name].shape and np.array_equal(committed, fresh[path.name]), (
            f"docs/pictures/{path.name} is stale; run python tools/pictures.py"
        )


def assert_cells_follow(img: np.ndarray, panel: PanelInfo, table: np.ndarray) -> None:
    """The colour at the centre of every cell of ``panel`` (an image of ``table``, row 0 at the top) is the colour
    map's at the cell's value, within 2 of 255 in each channel (the pixel of each cell's centre as
    test_plot.to_pixel finds it)."""
    lo, hi = panel.clim
    want = np.rint(np.asarray(matplotlib.colormaps[panel.cmap]((table - lo) / (hi - lo)))[..., :3] * 255).astype(int)
    rows, cols = np.arange(table.shape[0]), np.arange(table.shape[1])
    (x0, y0, x1, y1), (xa, xb), (ya, yb) = panel.bbox, panel.xlim, panel.ylim
    py = (y1 - (rows - ya) / (yb - ya) * (y1 - y0)).astype(int)
    px = (x0 + (cols - xa) / (xb - xa) * (x1 - x0)).astype(int)
    assert (py[3], px[5]) == to_pixel(panel, 5, 3)
    bad = np.abs(img[py[:, None], px[None, :]] - want).max(axis=-1) > 2
    assert not bad.any(), f"{int(bad.sum())} cells off, first (row, column): {np.argwhere(bad)[:3].tolist()}"


def assert_line_follows(img: np.ndarray, panel: PanelInfo, rgb: tuple[int, int, int], y: np.ndarray) -> None:
    """The pixels of colour ``rgb`` in ``panel`` (linear x, log y) lie on the line through (i, y[i]), column by
    column, over at least half the columns the line spans (README's yarn line, the same wavelengths as rope's up
    to pair ~25, is drawn over it there)."""
    rows, cols = pixels_of(img, panel, rgb)
    columns, at = np.unique(cols, return_inverse=True)
    x, _ = to_data(panel, np.zeros(columns.size), columns)  # each column's centre
    inside = (x >= 0) & (x <= y.size - 1)
    log_y = np.interp(x, np.arange(y.size), np.log10(y))  # straight between points on a log axis
    (_, y0, _, y1), (ya, yb) = panel.bbox, np.log10(panel.ylim)
    want = y1 - (log_y - ya) / (yb - ya) * (y1 - y0) - 0.5  # the row whose centre is on the line
    got = np.bincount(at, weights=rows) / np.bincount(at)  # each column's mean row
    off = np.abs(got - want)[inside]
    spanned = to_pixel(panel, y.size - 1, y[-1])[1] - to_pixel(panel, 0, y[0])[1]
    assert off.size > 0.5 * spanned, (off.size, spanned)
    # within a line's width everywhere, and on it on average (one pair further along is ~2.6 px higher here)
    assert off.max() <= 3.0 and float(off.mean()) <= 0.75, (off.max(), float(off.mean()))


def test_the_default_view_is_chosen_without_measuring_the_table(monkeypatch):
    """A table's default view is its kind's first that applies (heatmap), chosen without the table analysis that
    the circle and spectrum views' tests run (70 ms of a 4096 x 768 table); asking which views apply runs it."""
    import posenc_cli.inspect.analysis as an
    from posenc_cli.api import SourceOptions, plot_tables
    from posenc_cli.plot import applicable

    calls = []
    init = an.TableAnalysis.__init__
    monkeypatch.setattr(an.TableAnalysis, "__init__", lambda self, *a, **k: (calls.append(1), init(self, *a, **k))[1])
    opts = SourceOptions(length=64, dim=32)
    view, (src,), _ = plot_tables(["sinusoidal"], options=opts)
    assert view == "heatmap" and calls == []
    assert applicable([src])[:3] == ["heatmap", "dot", "circle"] and calls == [1]
