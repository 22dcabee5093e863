r"""Pictures of positional encodings, written to .png, .svg or .pdf with matplotlib (the optional ``plot`` extra).

Views (:data:`VIEWS`), each a function of one or more :class:`PlotSource`:

``heatmap``
    positions x dimensions, colour = value (the seed material's figure); a rotary source shows cos and sin.
``dot``
    the dot product (or cosine) of row ``t`` with row ``t + k`` against the offset ``k``, several ``t`` overlaid
    (the seed's relative-distance figure). For a rotary source it is the rotated dot product
    :math:`\langle R_t q, R_{t+k} q\rangle` of one fixed random vector ``q``:
    :math:`\sum_c q_c^2\, a_c(t)\, a_c(t+k) \cos(\theta_c(t+k) - \theta_c(t))` with :math:`\theta_c`,
    :math:`a_c` the angle and length of ``(cos[:, c], sin[:, c])``, which holds for any column layout.
``circle``
    one frequency pair's points ``(cos, sin)`` for consecutive positions around the circle (the rotation picture).
``spectrum``
    the wavelength :math:`2\pi/\omega_i` of each frequency pair on a log axis against the original context: what
    linear, NTK, YaRN, llama3 and LongRoPE scaling change. Several sources overlay.
``bias``
    ``matrix`` tensors (ALiBi biases, T5 buckets, relative indices): query x key, one panel per head.
``compare``
    two tables and their difference.

A view finds its data by tensor *role*, never by kind (:data:`ROLES`): ``table`` (rows = positions, 2-D),
``rotary`` (a cos/sin pair: roles ``cos``/``sin``, ``cos-cache``/``sin-cache``, or ``rotary`` on tensors whose names
contain cos and sin), ``inv-freq`` (1-D angular frequencies), ``scale`` (xPos), ``matrix`` (len x len or heads x
len x len). A tensor without a role is inferred from its name and shape. Frequencies come from an ``inv-freq``
tensor when there is one, else they are measured from the data by the table analysis that ``identify`` and
``compare``'s diagnosis use (:mod:`posenc_cli.inspect.analysis`): each pair's angle ``theta(t)`` is read with ``atan2`` and
:math:`\omega` refined over lags 1, 2, 3, 5, ... (each lag's angle unwrapped with the previous estimate), which
resolves wavelengths far beyond the table's length. A ``table`` qualifies for ``circle`` and ``spectrum`` only when
that analysis finds every column in a sin/cos pair of the position, within its dtype's tolerance; a rotary
source's duplicated columns are read by the same analysis (:func:`posenc_cli.inspect.analysis.duplicate_layout`).

Output is deterministic: Agg, a fixed size and dpi, no dates or versions in the file, a fixed SVG hash salt.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import OutputError, ParameterError, check_float, check_int, param

INSTALL_HINT = "plotting to a file needs matplotlib; install it with: pip install 'posenc-cli[plot]'"
#: ``posenc plot`` without ``-o`` when stdout is not a terminal.
NEEDS_OUTPUT = "posenc plot draws on a terminal only; pass -o FILE.png (or .svg, .pdf) to write a picture"
#: Output formats by file suffix.
FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
DPI = 100
#: What a view can ask of a source.
ROLES = ("table", "rotary", "inv-freq", "scale", "matrix")
#: The engine's finer roles (``Encoding.ROLES``) and what they are here.
ROLE_ALIASES = {"cos": "rotary", "sin": "rotary", "cos-cache": "rotary", "sin-cache": "rotary", "inv_freq": "inv-freq",
                "slopes": None}  # fmt: skip
#: Rows a view reads at most (a heatmap of more positions than pixels shows nothing more).
MAX_ROWS = 4096
#: The largest side of a picture in inches (``size``) and in pixels (``size`` x ``dpi``; Agg's own limit is 2**16).
MAX_INCHES = 50.0
MAX_SIDE_PIXELS = 1 << 15
#: The most pixels a picture may have (64 Mpx: a 256 MiB RGBA raster), whatever ``max_bytes`` allows.
MAX_PIXELS = 1 << 26
#: Bytes per pixel of the raster matplotlib draws into (RGBA), for ``max_bytes``.
RASTER_BYTES_PER_PIXEL = 4
#: Positions of a ``bias`` matrix shown at most.
MAX_MATRIX = 1024
#: Overlaid sources differ in line style too, so that identical curves stay visible.
LINESTYLES = ("-", "--", ":", "-.")
#: Random vector of the rotated dot product.
SEED = 0
_RC = {"svg.hashsalt": "posenc", "font.size": 9.5, "axes.titlesize": 10, "figure.titlesize": 11,
       "axes.grid": False, "savefig.facecolor": "white"}  # fmt: skip
_SAVE_METADATA = {
    "png": {"Software": None},
    "svg": {"Date": None, "Creator": None},
    "pdf": {"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None},
}


# ----- sources -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlotSource:
    """One thing to draw: a label for legends and titles, tensors by name, what each tensor is, metadata.

    ``roles`` maps tensor names to :data:`ROLES` (or the engine's ``cos``/``sin``/``cos-cache``/``sin-cache``/
    ``inv-freq``); a tensor missing from it is inferred from its name and shape. ``metadata`` holds strings as
    posenc files do (``original_max_position_embeddings``, ``scaling``, ``factor``, ``base``; ``none`` means
    absent); an ``inv_freq`` entry may be an array or a JSON list.
    """

    label: str
    tensors: Mapping[str, Any]
    roles: Mapping[str, str] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    #: what :meth:`rotary` and :meth:`oscillators` found, kept: a plot asks whether a view applies and then draws
    #: it, and both read the same cos/sin tables or measure the same table's pairs
    _memo: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    # -- roles
    def role(self, name: str) -> str | None:
        """The role (one of :data:`ROLES`) of tensor ``name``, given or inferred; None when it plays none."""
        if name in self.roles:
            r = self.roles[name]
            return ROLE_ALIASES.get(r, r) if r in ROLE_ALIASES else (r if r in ROLES else None)
        a = self.tensors[name]
        shape = tuple(np.shape(a))
        low = name.lower()
        if len(shape) == 1:
            return "inv-freq" if low in ("inv_freq", "inv-freq") else None
        if len(shape) == 3 and shape[1] == shape[2]:
            return "matrix"
        if len(shape) == 2:
            if low.startswith(("cos", "sin")) or low.endswith(("cos", "sin", "_cache")):
                return "rotary"
            if shape[0] == shape[1] and np.dtype(getattr(a, "dtype", np.float64)).kind in "iu":
                return "matrix"
            return "scale" if low == "scale" else "table"
        return None

    def with_role(self, role: str) -> list[str]:
        return [n for n in self.tensors if self.role(n) == role]

    def has(self, role: str) -> bool:
        if role == "rotary":
            return self.rotary() is not None
        return bool(self.with_role(role))

    # -- data
    def table(self) -> tuple[str, np.ndarray] | None:
        names = self.with_role("table")
        return (names[0], _rows(self.tensors[names[0]])) if names else None

    def scale(self) -> tuple[str, np.ndarray] | None:
        names = self.with_role("scale")
        return (names[0], _rows(self.tensors[names[0]])) if names else None

    def rotary(self) -> Rotary | None:
        """The cos/sin pair: the full tables when present, else ONNX-style caches (found once per source)."""
        if "rotary" not in self._memo:
            self._memo["rotary"] = self._find_rotary()
        rot: Rotary | None = self._memo["rotary"]
        return rot

    def oscillators(self) -> list[Any] | None:
        """:func:`oscillators` of the first ``table`` tensor (None without one), measured once per source."""
        if "oscillators" not in self._memo:
            names = self.with_role("table")
            self._memo["oscillators"] = oscillators(self.tensors[names[0]]) if names else None
        osc: list[Any] | None = self._memo["oscillators"]
        return osc

    def _find_rotary(self) -> Rotary | None:
        names = self.with_role("rotary")
        given = {n: self.roles.get(n, "") for n in names}

        def pick(kind: str, cache: bool) -> str | None:
            for n in names:
                low = n.lower()
                is_cache = given[n].endswith("-cache") or low.endswith("_cache")
                if is_cache == cache and (given[n].startswith(kind) or kind in low):
                    return n
            return None

        for cache in (False, True):
            c, s = pick("cos", cache), pick("sin", cache)
            if c and s:
                cos, sin = _rows(self.tensors[c]), _rows(self.tensors[s])
                if cos.ndim == 2 and cos.shape == sin.shape:
                    return Rotary(c, s, cos, sin, cache, _stored_dtype(self.tensors[c]))
        return None

    def matrix(self) -> tuple[str, np.ndarray, int] | None:
        """(name, heads x n x n view of at most :data:`MAX_MATRIX` positions, positions in the tensor)."""
        names = self.with_role("matrix")
        if not names:
            return None
        m = self.tensors[names[0]]
        if np.ndim(m) == 2:
            m = np.asarray(m)[None]
        if np.ndim(m) != 3 or np.shape(m)[1] != np.shape(m)[2]:
            return None
        n = np.shape(m)[1]
        k = min(n, MAX_MATRIX)
        return names[0], np.asarray(m[:, :k, :k]), n

    def inv_freq(self) -> np.ndarray | None:
        names = self.with_role("inv-freq")
        if names:
            return np.asarray(self.tensors[names[0]], dtype=np.float64).ravel()
        value = self.metadata.get("inv_freq")
        if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
            return None
        if isinstance(value, str):
            import json

            try:
                value = json.loads(value)
            except ValueError:
                return None
        return np.asarray(value, dtype=np.float64).ravel()

    def meta_float(self, key: str) -> float | None:
        try:
            v = float(self.metadata.get(key))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None
        return v if math.isfinite(v) else None

    def rows(self) -> int:
        for getter in (self.table, self.scale):
            got = getter()
            if got is not None:
                return int(np.shape(self.tensors[got[0]])[0])
        rot = self.rotary()
        if rot is not None:
            return int(np.shape(self.tensors[rot.cos_name])[0])
        return 0


@dataclass(frozen=True)
class Rotary:
    """A rotary source's tables (at most :data:`MAX_ROWS` rows, float64); ``cache``: each angle stored once;
    ``dtype``: the dtype the tables were stored in."""

    cos_name: str
    sin_name: str
    cos: np.ndarray
    sin: np.ndarray
    cache: bool
    dtype: np.dtype

    def pair_columns(self) -> np.ndarray:
        """One column per frequency: the first half (``cat(f, f)`` layout), even columns (interleaved), or every
        column (caches, or a layout the data does not show), as the table analysis reads the duplicated columns
        (:func:`posenc_cli.inspect.analysis.duplicate_layout`)."""
        from .inspect import analysis as an
        from .inspect.tolerance import duplicate_tol

        w = self.cos.shape[1]
        if self.cache or self.cos.shape[0] < 2 or w < 2:
            return np.arange(w)
        both = np.concatenate([self.cos[:64], self.sin[:64]])
        layout = an.duplicate_layout(both, duplicate_tol(self.dtype))
        if layout == an.DUPLICATE_HALF:
            return np.arange(w // 2)
        if layout == an.DUPLICATE_INTERLEAVED:
            return np.arange(0, w, 2)
        return np.arange(w)


def _rows(a: Any, limit: int = MAX_ROWS) -> np.ndarray:
    """The first ``limit`` rows as float64 (memory-mapped tensors are read only that far)."""
    return np.asarray(a[:limit], dtype=np.float64)


# ----- frequencies, measured or given ------------------------------------------------------------------
def estimate_frequencies(z: np.ndarray) -> np.ndarray:
    """Angular frequency of each column of ``z`` (rows = positions, ``z[t] = r e^{i(omega t + phi)}``), measured by
    the table analysis that identify and diagnose use (:func:`posenc_cli.inspect.analysis.pair_frequencies`: lag triples,
    unwrapped from lag 1 up)."""
    from .inspect import analysis as an

    n = z.shape[0]
    if n < 2:
        raise ParameterError(
            f"measuring frequencies needs at least 2 positions; pass a longer table ({param('length')})"
        )
    if n == 2:  # no lag triple fits: the one step's angle
        return np.abs(np.angle(z[1] * np.conj(z[0])))
    sample = an.lag_sample(n, centers=128)  # a plot reads few rows: many centres per lag average rounding out
    zs = np.asarray(z)[sample.rows]
    est = an.pair_frequencies(zs.imag, zs.real, sample, float(np.finfo(np.float32).eps))
    return np.abs(est.freq)


def _stored_dtype(a: Any) -> np.dtype:
    return np.dtype(getattr(a, "dtype", np.float64))


def oscillators(table: Any) -> list[Any] | None:
    """The sin/cos pairs of a ``table`` tensor's first :data:`MAX_ROWS` rows as identify and diagnose measure them
    (:class:`posenc_cli.inspect.analysis.TableAnalysis`'s spectrum, with the tolerance of the table's dtype), highest
    frequency first; None unless every column belongs to a pair.
    """
    from .inspect import analysis as an

    head = np.asarray(table[:MAX_ROWS])
    if head.ndim != 2 or head.shape[0] < 4 or head.shape[1] < 2 or head.shape[1] % 2:
        return None
    spec = an.TableAnalysis({"table": head}).spectrum
    if spec is None or not spec.sinusoidal or spec.zero_cols or not all(o.paired for o in spec.oscillators):
        return None
    return spec.by_frequency()


def sinusoid_pairs(table: Any) -> list[tuple[int, int]] | None:
    """Columns of ``table`` that are (cos, sin) pairs of the position, highest frequency first, or None: the pairs
    of :func:`oscillators` (the cos column leads the sin column by a quarter turn, so the points go round
    counter-clockwise)."""
    osc = oscillators(table)
    return None if osc is None else [(int(o.cos_col), int(o.sin_col)) for o in osc]


def frequencies(src: PlotSource) -> tuple[np.ndarray, str]:
    """(angular frequency of each pair, where it came from) of a source with ``inv-freq``, ``rotary`` or a
    sinusoidal ``table``."""
    inv = src.inv_freq()
    if inv is not None:
        return inv, "inv_freq"
    rot = src.rotary()
    if rot is not None:
        cols = rot.pair_columns()
        return estimate_frequencies(rot.cos[:, cols] + 1j * rot.sin[:, cols]), "measured on cos/sin"
    names = src.with_role("table")
    osc = src.oscillators()
    if not osc:
        raise ParameterError(
            f"{src.label}: no frequencies to show (needs inv_freq, a cos/sin pair, or a table of sin/cos columns)"
        )
    return np.array([abs(o.freq) for o in osc], dtype=np.float64), f"measured on {names[0]}"


# ----- the registry ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class View:
    """A registered view: the drawing function, a one-line doc, the roles it needs (any one of them), how many
    sources it takes, and an optional data test beyond roles."""

    func: Callable[..., Any]
    doc: str
    needs: tuple[str, ...]
    sources: tuple[int, int]
    fits: Callable[[PlotSource], bool] | None = None

    def applies(self, sources: Sequence[PlotSource]) -> bool:
        lo, hi = self.sources
        if not lo <= len(sources) <= hi:
            return False
        return all(any(s.has(r) for r in self.needs) and (self.fits is None or self.fits(s)) for s in sources)


def _has_sinusoid_table(src: PlotSource) -> bool:
    return src.oscillators() is not None


def _has_frequencies(src: PlotSource) -> bool:
    return src.inv_freq() is not None or src.rotary() is not None or _has_sinusoid_table(src)


def _has_pairs(src: PlotSource) -> bool:
    return src.rotary() is not None or _has_sinusoid_table(src)


def _has_primary(src: PlotSource) -> bool:
    return _primary(src) is not None


# ----- drawing helpers ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class PanelInfo:
    """Where a panel landed in a saved picture, for tests and image maps: its box in pixels from the top-left
    corner ``(x0, y0, x1, y1)``, its axis limits and scales, and the colour map and limits of its image."""

    title: str
    bbox: tuple[float, float, float, float]
    xlim: tuple[float, float]
    ylim: tuple[float, float]
    xscale: str
    yscale: str
    cmap: str | None = None
    clim: tuple[float, float] | None = None


@dataclass(frozen=True)
class PlotResult:
    """What :func:`plot` wrote: the path, view, format, size in pixels and every panel."""

    path: str
    view: str
    format: str
    size: tuple[int, int]
    panels: list[PanelInfo]

    def summary(self) -> str:
        """One line of the shape every written file is reported in:
        ``wrote spectrum.png (spectrum view, png, 800 x 500 px)``."""
        return f"wrote {self.path} ({self.view} view, {self.format}, {self.size[0]} x {self.size[1]} px)"

    def to_json(self) -> dict[str, Any]:
        """What ``posenc plot --json`` prints: the file, the view, its pixel size and where each panel landed."""
        import dataclasses

        return {
            "path": self.path,
            "view": self.view,
            "format": self.format,
            "size": list(self.size),
            "panels": [dataclasses.asdict(p) for p in self.panels],
        }


def _mpl() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise ParameterError(INSTALL_HINT) from None
    return matplotlib


def _figure(size: tuple[float, float], dpi: int) -> Any:
    return _figure_class()(figsize=size, dpi=dpi, layout="constrained")


@functools.cache
def _figure_class() -> Any:
    """A matplotlib Figure whose layout pass only lays out.

    ``savefig`` of a figure with a layout engine draws it twice: first with every ``draw_*`` method of the
    renderer replaced by a no-op (``RendererBase._draw_disabled``), so that the engine runs with the output's
    renderer, then for real with the engine switched off. ``Figure.draw`` runs the engine first and then walks
    every artist, which in the first pass computes ticks and lays out text again only to draw nothing (a fifth
    to a quarter of a small picture's time). Here that first pass runs the engine and stops; the second draw
    computes every artist's state from scratch as before, so the file is the same.
    """
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure

    class LayoutOnceFigure(Figure):
        def draw(self, renderer: Any) -> None:
            engine = self.get_layout_engine()
            disabled = getattr(getattr(renderer, "draw_path", None), "__wrapped__", None) is RendererBase.draw_path
            if not (disabled and self.axes and engine is not None):
                super().draw(renderer)
                return
            engine.execute(self)
            self.stale = False

    return LayoutOnceFigure


def _cmap_for(values: np.ndarray) -> tuple[str, float, float]:
    """Diverging and symmetric about 0 when the values have both signs, else viridis (as the terminal view)."""
    fin = values[np.isfinite(values)]
    lo = float(fin.min()) if fin.size else 0.0
    hi = float(fin.max()) if fin.size else 1.0
    if lo < 0 < hi:
        m = max(-lo, hi)
        return "RdBu_r", -m, m
    if lo == hi:
        return "viridis", lo - 0.5, hi + 0.5
    return "viridis", lo, hi


def _image(
    fig: Any,
    ax: Any,
    a: np.ndarray,
    *,
    cmap: str | None = None,
    clim: tuple[float, float] | None = None,
    label: str | None = "value",
) -> Any:
    """``a`` drawn in ``ax``, with a colour bar labelled ``label`` (none when ``label`` is None)."""
    import matplotlib as mpl

    name, lo, hi = _cmap_for(a)
    if cmap is not None:
        name = cmap
    if clim is not None:
        lo, hi = clim
    cm = mpl.colormaps[name].with_extremes(bad="#bdbdbd")
    big = a.shape[0] > 512 or a.shape[1] > 512
    im = ax.imshow(
        np.ma.masked_invalid(a),
        cmap=cm,
        vmin=lo,
        vmax=hi,
        aspect="auto",
        interpolation="antialiased" if big else "nearest",
    )
    if label is not None:
        fig.colorbar(im, ax=ax, label=label, shrink=0.9)
    return im


def _rows_note(shown: int, total: int) -> str:
    return f"positions 0..{shown - 1} of {total}" if total > shown else f"{total} positions"


def _legend(fig: Any, ax: Any) -> None:
    """The legend below the axes, outside them: it never covers a curve or a point."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(len(handles), 3), frameon=False, fontsize=8)


# ----- views -------------------------------------------------------------------------------------------
def heatmap_panels(src: PlotSource) -> list[tuple[str, np.ndarray]]:
    """The 2-D arrays a heatmap of ``src`` shows, with titles: a ``table`` or ``scale``, the ``cos`` and ``sin`` of
    a rotary pair; for a source with only a ``matrix``, its first head (what the terminal view draws)."""
    out = []
    n_total = src.rows()
    for getter in (src.table, src.scale):
        got = getter()
        if got is not None:
            name, a = got
            out.append(
                (
                    f"{src.label}: {name} {_dtype(src.tensors[name])}, {_rows_note(a.shape[0], n_total)} x "
                    f"{a.shape[1]} dims",
                    a,
                )
            )
            return out
    rot = src.rotary()
    if rot is not None:
        for name, a in ((rot.cos_name, rot.cos), (rot.sin_name, rot.sin)):
            out.append(
                (
                    f"{src.label}: {name} {_dtype(src.tensors[name])}, {_rows_note(a.shape[0], n_total)} x "
                    f"{a.shape[1]} dims",
                    a,
                )
            )
        return out
    got_m = src.matrix()
    if got_m is not None:
        name, m, n = got_m
        head = f" head 0 of {m.shape[0]}" if m.shape[0] > 1 else ""
        out.append((f"{src.label}: {name}{head}, query x key, {_rows_note(m.shape[1], n)}", m[0]))
    return out


def _dtype(a: Any) -> str:
    """The array's dtype as posenc names it (bfloat16 too), for titles."""
    from .formats import dtype_label

    return dtype_label(np.asarray(a[:0]).dtype) if hasattr(a, "dtype") else ""


def terminal_panels(src: PlotSource) -> list[tuple[str, np.ndarray]]:
    """What ``posenc plot SOURCE`` draws on a terminal (:func:`heatmap_panels`); ParameterError when nothing."""
    panels = heatmap_panels(src)
    if not panels:
        raise ParameterError(f"{src.label}: nothing to draw (no table, cos/sin pair, scale or matrix tensor)")
    return panels


def _view_heatmap(fig_size: Any, sources: Sequence[PlotSource], opts: dict[str, Any]) -> Any:
    panels = [p for s in sources for p in heatmap_panels(s)]
    if len(panels) > 4:
        raise ParameterError(f"heatmap shows at most 4 panels, these sources have {len(panels)}; plot fewer sources")
    fig = fig_size((min(4.4 * len(panels) + 1.2, 16.0), 5.0))
    axes = []
    for i, (title, a) in enumerate(panels):
        ax = fig.add_subplot(1, len(panels), i + 1)
        _image(fig, ax, a, label="value")
        ax.set_title(title)
        ax.set_xlabel("dimension (column)")
        ax.set_ylabel("position t (row)")
        axes.append(ax)
    return fig, axes


def _table_dot(p: np.ndarray, cosine: bool) -> Callable[[int, np.ndarray], np.ndarray]:
    """``values(t, ks)``: P[t+k].P[t] (or their cosine) for the offsets ``ks``."""

    def values(t: int, ks: np.ndarray) -> np.ndarray:
        v = p[t + ks] @ p[t]
        if cosine:
            den = np.linalg.norm(p[t + ks], axis=1) * np.linalg.norm(p[t])
            v = np.where(den > 0, v / np.where(den > 0, den, 1), np.nan)
        return v

    return values


def _rotary_dot(rot: Rotary, cosine: bool) -> tuple[Callable[[int, np.ndarray], np.ndarray], str]:
    """``values(t, ks)``: <R_t q, R_{t+k} q> (or its cosine) for one fixed random q, and its title."""
    theta = np.arctan2(rot.sin, rot.cos)
    amp = np.hypot(rot.sin, rot.cos)
    rng = np.random.default_rng(SEED)
    w = rot.cos.shape[1]
    q2 = rng.standard_normal(w) ** 2
    if rot.cache:  # each angle rotates two features (i, i + w)
        q2 = q2 + rng.standard_normal(w) ** 2
    what = (
        "cosine of $R_t q$ and $R_{t+k} q$" if cosine else r"$\langle R_t q, R_{t+k} q\rangle$"
    ) + f", fixed random q (seed {SEED})"

    def values(t: int, ks: np.ndarray) -> np.ndarray:
        a_t, a_k = amp[t], amp[t + ks]
        v = (q2 * a_t * a_k * np.cos(theta[t + ks] - theta[t])).sum(axis=1)
        if cosine:
            v = v / np.sqrt((q2 * a_t**2).sum() * (q2 * a_k**2).sum(axis=1))
        return v

    return values, what


def _dot_curves(
    src: PlotSource, starts: Sequence[int] | None, max_offset: int | None, cosine: bool
) -> tuple[list[tuple[int, np.ndarray, np.ndarray]], str]:
    """[(t, offsets k, values)] and what was measured."""
    rot = src.rotary()
    got = src.table()
    if got is not None:
        p = got[1]
        n = p.shape[0]
        what = "cosine of rows t and t+k" if cosine else "dot product of rows t and t+k"
        row_values = _table_dot(p, cosine)
    elif rot is not None:
        row_values, what = _rotary_dot(rot, cosine)
        n = rot.cos.shape[0]
    else:
        raise ParameterError(f"{src.label}: dot needs a table or a cos/sin pair")
    if starts is None:
        starts = sorted({n // 4, n // 2, (3 * n) // 4}) if n >= 16 else [n // 2]
    bad = [t for t in starts if not 0 <= t < n]
    if bad:
        raise ParameterError(
            f"{param('starts')} holds {bad[0]}, outside {src.label}'s rows; pass rows t with 0 <= t <= {n - 1}"
        )
    reach = max_offset if max_offset is not None else max(1, min(n // 4, 512)) if n >= 16 else n - 1
    curves = []
    for t in starts:
        ks = np.arange(max(-reach, -t), min(reach, n - 1 - t) + 1)
        curves.append((int(t), ks, row_values(int(t), ks)))
    return curves, what


def _view_dot(fig_size: Any, sources: Sequence[PlotSource], opts: dict[str, Any]) -> Any:
    fig = fig_size((8.0, 5.0))
    ax = fig.add_subplot()
    cosine = bool(opts.get("cosine"))
    whats = []
    several = len(sources) > 1
    for si, s in enumerate(sources):
        starts = opts.get("starts")
        if starts is None and several:
            starts = [s.rows() // 2 if s.rows() < MAX_ROWS else MAX_ROWS // 2]
        curves, what = _dot_curves(s, starts, opts.get("max_offset"), cosine)
        whats.append(what)
        for t, ks, v in curves:
            ax.plot(
                ks,
                v,
                linewidth=1.3,
                linestyle=LINESTYLES[si % len(LINESTYLES)],
                label=(f"{s.label}, t={t}" if several else f"t={t}"),
            )
    ax.axvline(0, color="#888888", linewidth=0.6, linestyle=":")
    ax.set_xlabel("offset k (positions)")
    ax.set_ylabel("cosine similarity" if cosine else "dot product")
    title = whats[0] if len(set(whats)) == 1 else "; ".join(dict.fromkeys(whats))
    ax.set_title(title + ("" if several else f"  ({sources[0].label})"))
    _legend(fig, ax)
    return fig, [ax]


def _circle_points(src: PlotSource, pair: int) -> tuple[np.ndarray, np.ndarray, float, str, str]:
    """(x, y, omega, x label, y label) of frequency pair ``pair``."""
    rot = src.rotary()
    if rot is not None:
        cols = rot.pair_columns()
        if not 0 <= pair < len(cols):
            raise ParameterError(
                f"{param('pair')} {pair} is outside {src.label}'s {len(cols)} frequency pairs; pass 0 <= pair <= {len(cols) - 1}"
            )
        c = int(cols[pair])
        x, y = rot.cos[:, c], rot.sin[:, c]
        inv = src.inv_freq()
        if inv is not None and pair < inv.size:
            w = float(inv[pair])
        else:
            w = float(estimate_frequencies((x + 1j * y)[:, None])[0])
        return x, y, w, f"{rot.cos_name}[:, {c}]", f"{rot.sin_name}[:, {c}]"
    got = src.table()
    osc = src.oscillators() if got is not None else None
    if got is None or not osc:
        raise ParameterError(f"{src.label}: circle needs a cos/sin pair or a table of sin/cos columns")
    if not 0 <= pair < len(osc):
        raise ParameterError(
            f"{param('pair')} {pair} is outside {src.label}'s {len(osc)} frequency pairs; pass 0 <= pair <= {len(osc) - 1}"
        )
    o = osc[pair]
    a, b = int(o.cos_col), int(o.sin_col)
    name, p = got
    return p[:, a], p[:, b], abs(float(o.freq)), f"{name}[:, {a}]", f"{name}[:, {b}]"


def _view_circle(fig_size: Any, sources: Sequence[PlotSource], opts: dict[str, Any]) -> Any:
    fig = fig_size((6.4, 6.0))
    ax = fig.add_subplot()
    pair = int(opts.get("pair") or 0)
    given = opts.get("positions")
    points = [_circle_points(s, pair) for s in sources]
    rows = min(len(p[0]) for p in points)
    if given is not None and given > rows:
        raise ParameterError(
            f"{param('positions')} {given} asks for more positions than the {rows} rows shown; "
            f"pass 1 <= positions <= {rows}"
        )
    count = min(16, rows) if given is None else int(given)
    radius = 0.0
    labels = ("cos", "sin")
    for i, s in enumerate(sources):
        x, y, w, xl, yl = points[i]
        x, y = x[:count], y[:count]
        radius = max(radius, float(np.median(np.hypot(x, y))))
        ax.scatter(
            x,
            y,
            s=36,
            color=f"C{i}",
            marker="os^D"[i % 4],
            zorder=3,
            label=f"{s.label}: ω = {w:.4g} rad/position, wavelength {2 * np.pi / w if w else np.inf:.4g}",
        )
        if i == 0:
            labels = (xl, yl)
            for t in range(min(len(x), 8)):
                ax.annotate(str(t), (x[t], y[t]), textcoords="offset points", xytext=(6, 4), fontsize=8)
    guide = np.linspace(0, 2 * np.pi, 361)
    ax.plot(radius * np.cos(guide), radius * np.sin(guide), color="#cccccc", linewidth=0.8, zorder=1)
    ax.set_aspect("equal")
    lim = 1.25 * max(radius, 1e-12)
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_xlabel(f"{labels[0]} (cos-like)")
    ax.set_ylabel(f"{labels[1]} (sin-like)")
    ax.set_title(f"frequency pair {pair}: positions 0..{count - 1}, each one step of ω further round")
    _legend(fig, ax)
    return fig, [ax]


def _view_spectrum(fig_size: Any, sources: Sequence[PlotSource], opts: dict[str, Any]) -> Any:
    fig = fig_size((8.0, 5.0))
    ax = fig.add_subplot()
    contexts: dict[float, list[str]] = {}
    for i, s in enumerate(sources):
        w, how = frequencies(s)
        with np.errstate(divide="ignore"):
            wave = np.where(w > 0, 2 * np.pi / np.where(w > 0, w, 1), np.nan)
        scaling = str(s.metadata.get("scaling", "") or "")
        note = f" ({how})" if how != "inv_freq" else ""
        label = s.label + (f" [scaling {scaling}]" if scaling not in ("", "none") and scaling not in s.label else "")
        ax.plot(
            np.arange(wave.size),
            wave,
            marker="os^D"[i % 4],
            markersize=2.5,
            linewidth=1.3,
            color=f"C{i}",
            linestyle=LINESTYLES[i % len(LINESTYLES)],
            label=label + note,
        )
        ctx = s.meta_float("original_max_position_embeddings")
        if ctx is not None:
            contexts.setdefault(ctx, []).append(s.label)
    if not contexts and sources:
        n = sources[0].rows()
        if n:
            contexts[float(n)] = []
    for ctx, who in contexts.items():
        text = f"original context {ctx:g}" if who else f"table length {ctx:g}"
        ax.axhline(ctx, color="#555555", linestyle="--", linewidth=0.9)
        ax.annotate(text, (0, ctx), textcoords="offset points", xytext=(2, 3), fontsize=8, color="#333333")
    ax.set_yscale("log")
    ax.set_xlabel("frequency index i (pair)")
    ax.set_ylabel("wavelength 2π/ω (positions)")
    ax.set_title("Wavelength of each frequency pair")
    _legend(fig, ax)
    return fig, [ax]


def _view_bias(fig_size: Any, sources: Sequence[PlotSource], opts: dict[str, Any]) -> Any:
    (src,) = sources
    got = src.matrix()
    if got is None:
        raise ParameterError(f"{src.label}: bias needs a matrix tensor (len x len or heads x len x len)")
    name, m, n = got
    heads = list(range(m.shape[0]))
    if opts.get("head") is not None:
        h = int(opts["head"])
        if not 0 <= h < m.shape[0]:
            raise ParameterError(
                f"{param('head')} {h} is outside {src.label}'s {m.shape[0]} heads; pass 0 <= head <= {m.shape[0] - 1}"
            )
        heads = [h]
    heads = heads[:8]
    cols = min(len(heads), 4)
    rows = -(-len(heads) // cols)
    fig = fig_size((3.4 * cols + 1.4, 3.1 * rows + 0.9))
    shown = m[heads].astype(np.float64)
    fin = shown[np.isfinite(shown)]
    lo, hi = (float(fin.min()), float(fin.max())) if fin.size else (0.0, 1.0)
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    masked = bool(np.isinf(shown).any())
    axes: list[Any] = []
    for i, h in enumerate(heads):
        # one scale for every head: tick labels only on the outer panels (less to read, and to lay out)
        ax = fig.add_subplot(rows, cols, i + 1, sharex=axes[0] if axes else None, sharey=axes[0] if axes else None)
        cmap = _mpl().colormaps["viridis"].with_extremes(bad="#bdbdbd")
        im = ax.imshow(
            np.ma.masked_invalid(shown[i]),
            cmap=cmap,
            vmin=lo,
            vmax=hi,
            aspect="equal",
            interpolation="nearest" if m.shape[1] <= 512 else "antialiased",
        )
        ax.set_title(f"head {h} of {m.shape[0]}" if m.shape[0] > 1 else name)
        # the x axis is labelled on each column's lowest panel (a last row may be short), the y axis on the left
        if i + cols >= len(heads):
            ax.set_xlabel("key position j")
        else:
            ax.tick_params(labelbottom=False)
        if i % cols == 0:
            ax.set_ylabel("query position i")
        else:
            ax.tick_params(labelleft=False)
        axes.append(ax)
    fig.colorbar(im, ax=axes, label=name + (" (grey: -inf, masked)" if masked else ""), shrink=0.9)
    fig.suptitle(f"{src.label}: {name}, {_rows_note(m.shape[1], n)}")
    return fig, axes


def _primary(src: PlotSource) -> tuple[str, np.ndarray] | None:
    """The one 2-D array that stands for a source in ``compare``: table, cos, scale, or the first matrix head."""
    for getter in (src.table, src.scale):
        got = getter()
        if got is not None:
            return got
    rot = src.rotary()
    if rot is not None:
        return rot.cos_name, rot.cos
    got_m = src.matrix()
    if got_m is not None:
        return got_m[0], got_m[1][0].astype(np.float64)
    return None


def _view_compare(fig_size: Any, sources: Sequence[PlotSource], opts: dict[str, Any]) -> Any:
    a_src, b_src = sources
    got_a, got_b = _primary(a_src), _primary(b_src)
    if got_a is None or got_b is None:
        raise ParameterError("compare needs a table, cos/sin pair, scale or matrix in both sources")
    (na, a), (nb, b) = got_a, got_b
    if a.shape != b.shape:
        raise ParameterError(
            f"compare needs tables of one shape: {a_src.label} {na} is {a.shape}, {b_src.label} {nb} is {b.shape}"
        )
    fig = fig_size((14.0, 4.8))
    both = np.concatenate([a.ravel(), b.ravel()])
    cmap, lo, hi = _cmap_for(both)
    diff = a - b
    fin = np.abs(diff[np.isfinite(diff)])
    m = float(fin.max()) if fin.size and fin.max() > 0 else 1.0
    axes = []
    images = []
    # A and B on one colour scale with one colour bar beside both; the difference on its own
    for i, (title, arr, cm, clim, label) in enumerate(
        (
            (f"A: {a_src.label} [{na}]", a, cmap, (lo, hi), None),
            (f"B: {b_src.label} [{nb}]", b, cmap, (lo, hi), None),
            (
                f"A - B (max |A - B| = {float(fin.max()) if fin.size else 0.0:.3g})",
                diff,
                "RdBu_r",
                (-m, m),
                "difference",
            ),
        )
    ):
        ax = fig.add_subplot(1, 3, i + 1)
        images.append(_image(fig, ax, arr, cmap=cm, clim=clim, label=label))
        ax.set_title(title)
        ax.set_xlabel("dimension (column)")
        ax.set_ylabel("position t (row)")
        axes.append(ax)
    fig.colorbar(images[1], ax=axes[:2], label="value (A and B)", shrink=0.9)
    return fig, axes


def _patches(src: PlotSource) -> tuple[str, np.ndarray, int, int] | None:
    """``(name, patches H x W x D, H, W)`` of a table whose metadata names its patch grid (``grid``,
    ``grid_offset``: :func:`posenc_cli.encodings.grid.grid_layout`), its rows the grid plus ``extra_rows``."""
    from .encodings.grid import grid_layout

    layout = grid_layout(src.metadata)
    names = src.with_role("table")
    if layout is None or not names:
        return None
    h, w, first = layout
    a = src.tensors[names[0]]
    extra = [e for e in str(src.metadata.get("extra_rows") or "").split(",") if e.strip()]
    if np.ndim(a) != 2 or np.shape(a)[0] != h * w + len(extra) or first + h * w > np.shape(a)[0]:
        return None
    return names[0], np.asarray(a[first : first + h * w], dtype=np.float64).reshape(h, w, -1), h, w


def _has_patches(src: PlotSource) -> bool:
    return _patches(src) is not None


def _view_grid(fig_size: Any, sources: Sequence[PlotSource], opts: dict[str, Any]) -> Any:
    """Feature k of each patch's row over the H x W grid, one panel per feature (the first 16), on one colour scale
    symmetric about 0 (the features of a table are in one unit, added to the same token vectors: a feature that
    barely varies looks pale rather than stretched to full colour), with one colour bar."""
    (src,) = sources
    got = _patches(src)
    assert got is not None
    name, p, h, w = got
    feats = list(range(min(p.shape[2], 16)))
    cols = min(len(feats), 4)
    rows = -(-len(feats) // cols)
    fig = fig_size((2.6 * cols + 1.2, 2.6 * rows * h / max(w, 1) + 1.0))
    values = p[:, :, feats]
    fin = np.abs(values[np.isfinite(values)])
    lim = float(fin.max()) if fin.size and fin.max() > 0 else 1.0
    axes = []
    for i, k in enumerate(feats):
        ax = fig.add_subplot(rows, cols, i + 1)
        im = ax.imshow(p[:, :, k], cmap="RdBu_r", vmin=-lim, vmax=lim, interpolation="nearest")
        ax.set_title(f"feature {k}")
        ax.set_xticks([])
        ax.set_yticks([])
        axes.append(ax)
    fig.colorbar(im, ax=axes, label=name, shrink=0.8)  # (one scale: the last image stands for them all)
    shown = f"features 0..{feats[-1]} of {p.shape[2]}"
    fig.suptitle(f"{src.label}: {name} over its {h}x{w} patch grid ({shown})")
    return fig, axes


def _view_patch(fig_size: Any, sources: Sequence[PlotSource], opts: dict[str, Any]) -> Any:
    """Cosine similarity of every patch's row to the row of one patch (``patch``: (row, column); default the
    centre), drawn over the grid."""
    (src,) = sources
    got = _patches(src)
    assert got is not None
    name, p, h, w = got
    r, c = opts.get("patch") or (h // 2, w // 2)
    if not (0 <= r < h and 0 <= c < w):
        raise ParameterError(f"{param('patch')} {r},{c} is outside {src.label}'s {h}x{w} grid; pass 0 <= R < {h}, "
                             f"0 <= C < {w}")  # fmt: skip
    flat = p.reshape(h * w, -1)
    norms = np.linalg.norm(flat, axis=1)
    unit = flat / np.where(norms > 0, norms, 1.0)[:, None]
    sim = (unit @ unit[r * w + c]).reshape(h, w)
    fig = fig_size((5.6, 4.6 * h / max(w, 1) + 0.8))
    ax = fig.add_subplot(1, 1, 1)
    im = ax.imshow(sim, cmap="viridis", vmin=-1.0, vmax=1.0, interpolation="nearest")
    ax.plot([c], [r], marker="s", markersize=6, markerfacecolor="none", markeredgecolor="red")
    ax.set_xlabel("patch column")
    ax.set_ylabel("patch row")
    fig.colorbar(im, ax=ax, label=f"cosine to patch ({r}, {c})")
    ax.set_title(f"{src.label}: {name}, similarity to patch ({r}, {c})")
    return fig, [ax]


#: Every view, in the order ``posenc plot --help`` lists them.
VIEWS: dict[str, View] = {
    "heatmap": View(_view_heatmap, "positions x dimensions, colour = value (the seed's figure)",
                    ("table", "rotary", "scale"), (1, 4)),
    "dot": View(_view_dot, "dot product (or cosine) of row t with row t+k against k, several t overlaid",
                ("table", "rotary"), (1, 6)),
    "circle": View(_view_circle, "one frequency pair's (cos, sin) points around the circle, one per position",
                   ("rotary", "table"), (1, 4), _has_pairs),
    "spectrum": View(_view_spectrum, "wavelength of each frequency pair against the original context",
                     ("inv-freq", "rotary", "table"), (1, 8), _has_frequencies),
    "bias": View(_view_bias, "matrix tensors (ALiBi bias, T5 buckets, relative index), one panel per head",
                 ("matrix",), (1, 1)),
    "compare": View(_view_compare, "two tables side by side and their difference",
                    ("table", "rotary", "scale", "matrix"), (2, 2), _has_primary),
    "grid": View(_view_grid, "a 2-D table's features over its patch grid, one panel per feature",
                 ("table",), (1, 1), _has_patches),
    "patch": View(_view_patch, "cosine similarity of every patch's row to one patch's, over the grid",
                  ("table",), (1, 1), _has_patches),
}  # fmt: skip


def applicable(sources: Sequence[PlotSource]) -> list[str]:
    """The views that can draw these sources, in registry order."""
    return [name for name, v in VIEWS.items() if v.applies(sources)]


def output_format(path: str | os.PathLike[str]) -> str:
    """``png``, ``svg`` or ``pdf`` from the file's suffix; ParameterError naming the suffix otherwise."""
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix not in FORMATS:
        shown = suffix or "no suffix"
        raise ParameterError(f"cannot plot to {os.fspath(path)} ({shown}); use a .png, .svg or .pdf file")
    return FORMATS[suffix]


def _needs_text(view: View) -> str:
    roles = " or ".join(view.needs)
    lo, hi = view.sources
    count = f"{lo} source" + ("s" if lo > 1 else "") if lo == hi else f"{lo} to {hi} sources"
    return f"{roles} tensors, {count}"


def plot(
    view: str,
    sources: Sequence[PlotSource],
    path: str | os.PathLike[str],
    *,
    pair: int = 0,
    positions: int | None = None,
    starts: Sequence[int] | None = None,
    max_offset: int | None = None,
    cosine: bool = False,
    head: int | None = None,
    patch: tuple[int, int] | None = None,
    size: tuple[float, float] | None = None,
    dpi: int = DPI,
    force: bool = False,
    max_bytes: int | None = None,
) -> PlotResult:
    """Draw ``view`` of ``sources`` into ``path`` (.png, .svg or .pdf, written atomically).

    Parameters
    ----------
    view : str
        A name in :data:`VIEWS`.
    sources : list of PlotSource
        What to draw; views that overlay (dot, circle, spectrum) take several, compare exactly two.
    path : path-like
        The output file; its suffix picks the format.
    pair : int
        circle: the frequency pair, ``0 <= pair <`` the source's number of pairs (0 = highest frequency).
    positions : int, optional
        circle: how many consecutive positions to place on the circle, from 1 to the rows shown (at most
        :data:`MAX_ROWS`; default: 16, or fewer for a shorter table).
    starts : list of int, optional
        dot: the rows ``t``, each ``0 <= t <`` the rows shown (default: a quarter, half and three quarters of
        the way down).
    max_offset : int, optional
        dot: the largest ``|k|``, from 1 to ``MAX_ROWS - 1`` (default: a quarter of the rows, at most 512);
        offsets past the table's ends are not drawn.
    cosine : bool
        dot: cosine similarity instead of the dot product.
    head : int, optional
        bias: show one head, ``0 <= head <`` the number of heads (default: up to 8 heads).
    patch : (int, int), optional
        patch: the patch (row, column) every patch is compared with (default: the grid's centre).
    size : (float, float), optional
        Figure size in inches, each side finite, above 0 and at most :data:`MAX_INCHES` (default: the view's own).
    dpi : int
        Pixels per inch, at least 1; the picture must stay within :data:`MAX_SIDE_PIXELS` pixels a side and
        :data:`MAX_PIXELS` pixels in all.
    force : bool
        Replace an existing ``path`` (without it an existing file is refused and left alone).
    max_bytes : int, optional
        Refuse a picture whose raster (width x height x 4 bytes) would need more than this many bytes
        (default: ``formats.DEFAULT_MAX_BYTES``), before drawing it.

    Returns
    -------
    PlotResult
        The path, format, pixel size and where each panel landed.

    Raises
    ------
    ParameterError
        Unknown view, a view that does not apply (the message lists those that do), a suffix other than .png,
        .svg, .pdf, a number out of its range (the message names the parameter and the range), or matplotlib
        missing (the message says how to install it).
    OutputError
        The file exists (without ``force``) or cannot be written.
    """
    from .formats import DEFAULT_MAX_BYTES

    check_int("pair", pair, 0)
    if positions is not None:
        check_int("positions", positions, 1, MAX_ROWS, "the rows a view reads at most")
    if starts is not None:
        starts = [check_int("starts", t, 0) for t in starts]
        if not starts:
            raise ParameterError(f"{param('starts')} [] names no row; give at least one row t, or None")
    if max_offset is not None:
        check_int("max_offset", max_offset, 1, MAX_ROWS - 1, "the rows a view reads at most")
    if head is not None:
        check_int("head", head, 0)
    if size is not None:
        if len(size) != 2:
            raise ParameterError(f"{param('size')} {size!r} is not (width, height) in inches; pass e.g. (8, 5)")
        size = (
            check_float("size", size[0], 0.0, MAX_INCHES, open_low=True),
            check_float("size", size[1], 0.0, MAX_INCHES, open_low=True),
        )
    check_int("dpi", dpi, 1, MAX_SIDE_PIXELS)
    limit = DEFAULT_MAX_BYTES if max_bytes is None else check_int("max_bytes", max_bytes, 1)
    if view not in VIEWS:
        raise ParameterError(f"unknown view {view!r}; choose from: {', '.join(VIEWS)}")
    if not sources:
        raise ParameterError("plot needs at least one source")
    fmt = output_format(path)
    v = VIEWS[view]
    if not v.applies(sources):
        others = applicable(sources)
        labels = ", ".join(s.label for s in sources)
        choose = f"choose from: {', '.join(others)}" if others else "no view applies to them"
        raise ParameterError(f"view {view} does not apply to {labels} (it needs {_needs_text(v)}); {choose}")
    mpl = _mpl()
    opts = {
        "pair": pair,
        "positions": positions,
        "starts": starts,
        "max_offset": max_offset,
        "cosine": cosine,
        "head": head,
        "patch": patch,
    }
    dest = os.fspath(path)
    if not force and os.path.lexists(dest):  # before drawing; the writer checks again without a race
        from .formats.atomic import exists_message

        raise OutputError(exists_message(dest))

    def figure(default: tuple[float, float]) -> Any:
        _check_raster(size or default, dpi, limit)
        return _figure(size or default, dpi)

    with mpl.rc_context(_RC):
        fig, axes = v.func(figure, sources, opts)
        _save(fig, dest, fmt, dpi, force)
        return PlotResult(dest, view, fmt, _pixels(fig, dpi), _panels(fig, axes))


def _check_raster(size: tuple[float, float], dpi: int, max_bytes: int) -> None:
    """Refuse a picture of ``size`` inches at ``dpi`` whose sides pass :data:`MAX_SIDE_PIXELS` or whose raster
    passes ``max_bytes``, before matplotlib allocates it."""
    from .formats import human_bytes

    w, h = round(size[0] * dpi), round(size[1] * dpi)
    if max(w, h) > MAX_SIDE_PIXELS or w * h > MAX_PIXELS:
        most = int(min(MAX_SIDE_PIXELS / max(size), math.sqrt(MAX_PIXELS / (size[0] * size[1]))))
        while most > 1 and (
            max(round(size[0] * most), round(size[1] * most)) > MAX_SIDE_PIXELS
            or round(size[0] * most) * round(size[1] * most) > MAX_PIXELS
        ):
            most -= 1
        raise ParameterError(
            f"{param('dpi')} {dpi} makes a {w} x {h} px picture, above the {MAX_SIDE_PIXELS} px a side and "
            f"{MAX_PIXELS} px in all a picture may have; pass {param('dpi')} {most} or less, or a smaller "
            f"{param('size')}"
        )
    need = w * h * RASTER_BYTES_PER_PIXEL
    if need > max_bytes:
        raise ParameterError(
            f"a {w} x {h} px picture needs {human_bytes(need)} of raster, above the {human_bytes(max_bytes)} "
            f"limit; lower {param('dpi')} or {param('size')}, or pass {param('max_bytes')} {need}"
        )


def _save(fig: Any, dest: str, fmt: str, dpi: int, force: bool = False) -> None:
    """Write ``fig`` through the one atomic writer of tables and pictures (:func:`.formats.write_atomic`)."""
    from .formats import write_atomic

    write_atomic(dest, lambda sink: fig.savefig(sink, format=fmt, dpi=dpi, metadata=_SAVE_METADATA[fmt]), force=force)


def _pixels(fig: Any, dpi: int) -> tuple[int, int]:
    w, h = fig.get_size_inches()
    return round(float(w) * dpi), round(float(h) * dpi)


def _pair_of(values: Sequence[Any]) -> tuple[float, float]:
    lo, hi = values
    return float(lo), float(hi)


def _panels(fig: Any, axes: Sequence[Any]) -> list[PanelInfo]:
    height = fig.bbox.height
    out = []
    for ax in axes:
        bb = ax.get_window_extent()
        im = ax.images[0] if ax.images else None
        out.append(
            PanelInfo(
                title=ax.get_title(),
                bbox=(float(bb.x0), float(height - bb.y1), float(bb.x1), float(height - bb.y0)),
                xlim=_pair_of(ax.get_xlim()),
                ylim=_pair_of(ax.get_ylim()),
                xscale=ax.get_xscale(),
                yscale=ax.get_yscale(),
                cmap=None if im is None else im.get_cmap().name,
                clim=None if im is None else _pair_of(im.get_clim()),
            )
        )
    return out


__all__ = [
    "FORMATS",
    "INSTALL_HINT",
    "MAX_ROWS",
    "NEEDS_OUTPUT",
    "ROLES",
    "VIEWS",
    "PanelInfo",
    "PlotResult",
    "PlotSource",
    "View",
    "applicable",
    "estimate_frequencies",
    "frequencies",
    "heatmap_panels",
    "output_format",
    "oscillators",
    "plot",
    "sinusoid_pairs",
    "terminal_panels",
]
