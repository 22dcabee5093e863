"""One audit: every checkable thing a model holds, each a row checked against HF's table for the same layer type.

Rows, in order: per layer type the reference (HF transformers' table read from config.json, or the learned
table in the weights, checked for its properties), then each engine's table (posenc's rules of that engine,
:mod:`posenc_cli.models.engines`), then each GGUF file (llama.cpp's float32 tables, :func:`posenc_cli.api.check_gguf`)
and each ONNX export (its stored caches, :func:`posenc_cli.api.check_onnx`), one row per attention type. A file
that cannot be read is its own ``error`` row and the others are still checked. Only metadata and position tensors are read: GGUF files and
safetensors weights are memory-mapped, an ONNX model's external data is read only for its caches.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from ..errors import InputError, NoTableError, ParameterError, PosencError, RefusedError, param
from . import discover, hub
from .differences import Difference, Pushed, Side, differences, of_arrays, worst
from .report import AuditReport, AuditRow

#: ``on_progress(what, done, total)``: called before each step of a long audit
Progress = Callable[[str, int, int], None]


class Verbs(NamedTuple):
    """The sibling verbs an audit composes, given by :func:`posenc_cli.api.audit` (its own ``check``,
    ``check_onnx`` and ``layer_types``): the audit sits below the api and never imports it back."""

    check: Callable[..., Any]
    check_onnx: Callable[..., Any]
    layer_types: Callable[..., Any]


def engine_names() -> tuple[str, ...]:
    from ..models.engines import ENGINE_NAMES

    return ENGINE_NAMES


def parse_engines(engines: str | Sequence[str] | None) -> list[str]:
    """The engines to audit: a comma-separated string or a list; default every engine posenc knows."""
    names = engine_names()
    if engines is None:
        return list(names)
    items = engines.split(",") if isinstance(engines, str) else [str(e) for e in engines]
    chosen = [e.strip() for e in items if e.strip()]
    bad = [e for e in chosen if e not in names]
    if bad or not chosen:
        what = f"unknown engine {bad[0]!r}" if bad else "no engine given"
        raise ParameterError(f"{what}; choose {param('engine')} from: {', '.join(names)} (comma-separated)")
    return list(dict.fromkeys(chosen))


def audit(
    source: str | os.PathLike[str],
    *,
    against: str | os.PathLike[str] | None = None,
    engine: str | Sequence[str] | None = None,
    length: int | None = None,
    n_ctx: int | None = None,
    max_model_len: int | None = None,
    download: bool = False,
    max_bytes: int | None = None,
    on_progress: Progress | None = None,
    verbs: Verbs,
    image_size: Sequence[Any] | None = None,
) -> AuditReport:
    """See :func:`posenc_cli.api.audit`. The config is read from disk once, however many steps ask for it
    (:func:`~posenc_cli.models.config_file.read_once`)."""
    from ..errors import check_int
    from ..models.config_file import read_once

    # timm resamples vision tables only: asked for, it adds timm's rows to a vision model's audit
    names = engine.split(",") if isinstance(engine, str) else list(engine) if engine is not None else None
    timm = names is not None and "timm" in [n.strip() for n in names]
    rest = [n for n in names or [] if n.strip() != "timm"]
    chosen = parse_engines(rest if rest else None)
    if length is not None:
        length = check_int("length", length, 1)
    if max_bytes is not None:
        max_bytes = check_int("max_bytes", max_bytes, 1)
    with tempfile.TemporaryDirectory(prefix="posenc-audit-") as tmp, read_once():
        found = _locate(os.fspath(source), download, tmp)
        if against is not None:
            try:
                other = _locate(os.fspath(against), download, tmp)
            except InputError as exc:  # say which argument it was
                raise InputError(f"{param('against')} {exc}") from None
            found.merge(other)
        if found.config is None and not (found.ggufs or found.onnxs):
            raise InputError(
                f"{found.label}: nothing to audit: no config.json, GGUF or ONNX file"
                + (
                    f" (looked {discover.MAX_DEPTH} directories deep)"
                    if found.root and os.path.isdir(found.label)
                    else ""
                )
                + "; give a model directory, a config.json, a GGUF or ONNX file, or a Hub id org/name"
            )
        _refuse_unused(found, chosen, n_ctx, max_model_len, max_bytes, download, os.fspath(source), against)
        if found.config is None:
            raise InputError(
                f"{found.label}: no config.json to check against; give the HF model with {param('against')} DIR or "
                "org/name"
            )
        auditor = _Auditor(found, chosen, length, n_ctx, max_model_len, on_progress, against, tmp, verbs)
        auditor.max_bytes = max_bytes
        from ..models.config_file import load_config
        from ..models.vision import claims as vision_claims

        data = load_config(found.config)
        if vision_claims(data, None):  # a vision model (or a timm checkpoint): its table is what it has
            return auditor.vision(list(image_size or []), timm)
        if vision_claims(data, "native"):  # a multimodal wrapper: its text model's positions and its tower's table
            return auditor.wrapper(list(image_size or []), timm)
        if image_size:
            raise ParameterError(
                f"{param('image_size')} applies to a vision model's position table (ViT, DeiT, DINOv2, CLIP, SigLIP, "
                f"a timm ViT); {found.label} is not one: drop it"
            )
        if timm:
            raise ParameterError(f"{param('engine')} timm resamples vision position tables; {found.label} has none")
        return auditor.run()


def _refuse_unused(found: discover.Found, engines: list[str], n_ctx: int | None, max_model_len: int | None,
                   max_bytes: int | None, download: bool, source: str, against: Any) -> None:  # fmt: skip
    """Options that nothing in this audit reads are refused by name (:func:`posenc_cli.scopes.refuse_out_of_scope`
    for the engines' options)."""
    from ..models.engines import resolve_engine
    from ..scopes import refuse_out_of_scope

    kinds = {"config"}
    kinds |= {"gguf-verdict"} if found.ggufs else set()
    kinds |= {"onnx-verdict"} if found.onnxs else set()
    for engine in engines:
        if engine != "hf":
            kinds |= {"engine", *(f"reads:{o}" for o in resolve_engine(engine).options)}
    refuse_out_of_scope({"n_ctx": n_ctx, "max_model_len": max_model_len}, [kinds])
    if max_bytes is not None and not found.onnxs:
        raise ParameterError(
            f"{param('max_bytes')} cannot apply: {found.label} holds no ONNX model; it limits what is read of ONNX "
            "models; drop it"
        )
    if download and found.hub is None:
        texts = [source] + ([os.fspath(against)] if against is not None else [])
        if not any(hub.is_hub_id(t) for t in texts):
            raise ParameterError(
                f"{param('download')} cannot apply: {source} is a local path; it applies to a Hub id org/name; drop it"
            )


def _locate(text: str, download: bool, tmp: str) -> discover.Found:
    if hub.is_hub_id(text):
        snap = hub.resolve(text, download=download)
        found = discover.find(snap, label=text)
        found.hub = (text, download)
        return found
    return discover.find(text)


class _Auditor:
    def __init__(self, found: discover.Found, engines: list[str], length: int | None, n_ctx: int | None,
                 max_model_len: int | None, on_progress: Progress | None, against: Any, tmp: str,
                 verbs: Verbs) -> None:  # fmt: skip
        self.found = found
        self.verbs = verbs
        self.engines = engines
        self.length = length
        self.n_ctx = n_ctx
        self.max_model_len = max_model_len
        self.on_progress = on_progress
        self.against = None if against is None else os.fspath(against)
        self.step = 0
        self.tmp = tmp  # removed when the audit ends
        #: one measurement step per reference: every distinct engine table of it (engines whose tables are equal
        #: share one) measured in one pass, the reference's blocks computed once for all of them
        self._measurements: dict[int, _Measurements] = {}
        #: each layer type's facts (:func:`~posenc_cli.models.engines.model_facts`), read once for its engine rows
        self._facts: dict[tuple[str, str], Any] = {}
        self.max_bytes: int | None = None

    def progress(self, what: str, total: int) -> None:
        if self.on_progress is not None:
            self.on_progress(what, self.step, total)
        self.step += 1

    def run(self) -> AuditReport:
        from ..models.config_file import load_config
        from ..models.readers import model_config_layers

        f = self.found
        assert f.config is not None
        config_path = f.config
        data = load_config(config_path)
        tower, rest = self._refused_tower(data), None
        try:
            layers = model_config_layers(data, length=self.length)
        except PosencError as exc:
            if tower is None:
                raise
            layers, rest = {}, f"the rest of the model: {_one_line(exc)}"  # the refused tower's row, and why
        said = _default_lengths(data, layers) if self.length is None else []
        from ..models.records import model_type_of

        mt = model_type_of(data, strict=False)[0]
        model_type = mt if isinstance(mt, str) else None
        lengths = [int(v[1]["length"]) for v in layers.values() if v is not None and "length" in v[1]]
        report = AuditReport(
            source=f.label,
            config=f.relative(config_path),
            model_type=model_type,
            length=self.length if self.length is not None else (max(lengths) if lengths else None),
            engines=list(self.engines),
            against=self.against,
            settings={k: v for k, v in (("n_ctx", self.n_ctx), ("max_model_len", self.max_model_len)) if v is not None},
        )
        report.notes += said + ([rest] if rest else [])
        # the rows in report order, each slot (label, step, finish): a step (each reads its own tables block by
        # block) runs on every core, once however many slots share it (engines with the same table share their
        # measurement), and finish(its result) makes the slot's rows; a slot without a step holds its rows
        slots: list[tuple[str, Callable[[], Any] | None, Any]] = []
        for lt, v in layers.items():
            if v is None:
                report.notes.append(f"layer type {lt} applies no positions (NoPE): nothing to check")
                continue
            kind, params = v
            if "weights_tensor" in params:
                slots.append((f"{lt}: the reference", functools.partial(self._learned, lt, params, data), _one_row))
                if [e for e in self.engines if e != "hf"]:
                    report.notes.append(
                        f"{lt}: engines not compared: learned positions are the weights each engine loads"
                    )
                continue
            row, ref = self._reference(lt, kind, params)
            slots.append((f"{lt}: the reference", None, [row]))
            if ref is None:
                continue
            if not self._engines_apply(config_path, lt, report):
                if not self._rotary(config_path, lt):  # no engine's rules cover it: its kind's properties do
                    slots.append((f"{lt}: its properties",
                                  functools.partial(_properties, self.verbs.check, row.artifact, lt, ref),
                                  _one_row))  # fmt: skip
                continue
            for engine in self.engines:
                if engine != "hf":
                    slot = self._engine(config_path, lt, engine, ref)
                    slots.append(slot if isinstance(slot, tuple) else (f"{lt}: {engine}", None, slot))
        slots += [(f"{row.layer_type}: its stored copy", None, [row]) for row in self._stored(data)]
        for path in f.ggufs:
            slots.append((f.relative(path), functools.partial(self._gguf, path, config_path, report.length), None))
        for path in f.onnxs:
            slots.append((f.relative(path), functools.partial(self._onnx, path, config_path), None))
        for path in f.mlxs:
            slots.append((f.relative(path) or ".", functools.partial(self._mlx_weights, path, config_path), _one_row))
        from ..models.llamacpp import sharing

        # llama.cpp's table, when both its engine row and a GGUF's verdict read it: computed once for the two (held
        # whole meanwhile; one reader alone reads it block by block)
        shared = report.length if f.ggufs and "llamacpp" in self.engines else None
        with sharing(shared or 0):
            report.rows += self._run_steps(slots)
        if tower is not None:
            report.rows.append(tower)
        if not report.rows:
            raise InputError(f"{f.label}: nothing to audit: no layer type applies positions, and no conversion")
        if not report.compared and report.exit_code != 2:
            asked = "no engine but hf was asked for" if self.engines == ["hf"] else "no engine's table was measured"
            report.notes.append(
                f"nothing compared: only the reference tables were built ({asked}, no GGUF or ONNX file is here, "
                "and no table was read from the weights)"
            )
        return report

    def _refused_tower(self, data: dict[str, Any]) -> AuditRow | None:
        """The row of a wrapper's vision tower whose one learned table posenc refuses to read (code it has no rule
        for, the inventory's observation): the rest of the model is audited beside it. None when the config
        has no such tower (a tower read by a rule is audited with ``--image-size``)."""
        from ..models.vision import observed, reading

        mt = data.get("model_type")
        entries = observed(mt) if isinstance(mt, str) else ()
        if len(entries) != 1 or entries[0].get("component") == "model":
            return None  # a tower itself is audited as a vision model; several tables: the mechanisms say
        try:
            reading(data, self.found.label)
        except RefusedError as exc:
            return AuditRow("weights", "vision tower", "hf", "refused", _one_line(exc))
        except PosencError:
            return None
        return None

    def _run_steps(self, slots: list[tuple[str, Callable[[], Any] | None, Any]]) -> list[AuditRow]:
        """The rows of ``slots`` (``(label, step, finish)``, see :meth:`run`) in order. The steps run concurrently on
        every core; progress is reported from this thread, slot by slot, as each slot's rows are made."""
        from concurrent.futures import ThreadPoolExecutor

        from ..encodings.parallel import workers

        steps = {id(step): step for _label, step, _finish in slots if step is not None}
        rows: list[AuditRow] = []
        # a pool of its own: the steps fill tables on the shared pool (encodings.parallel) and wait for it
        with ThreadPoolExecutor(max(1, min(workers(), len(steps))), thread_name_prefix="posenc-audit") as ex:
            futures = {key: ex.submit(step) for key, step in steps.items()}
            try:
                for label, step, finish in slots:
                    self.progress(label, len(slots))
                    if step is None:
                        rows += finish
                        continue
                    result = futures[id(step)].result()
                    rows += result if finish is None else finish(result)
            except BaseException:  # an error or Ctrl-C: the steps not started yet are dropped
                for future in futures.values():
                    future.cancel()
                raise
        return rows

    # ----- the reference and the engines ----------------------------------------------------------------
    def _engines_apply(self, config_path: str, lt: str, report: AuditReport) -> bool:
        """Whether engines' rules cover this layer type (RoPE families); said in a note when they do not."""
        from ..models.engines import model_facts

        if self.engines == ["hf"]:
            return False
        try:  # read once for every engine's row of this layer type (:meth:`_engine`)
            self._facts[(config_path, lt)] = model_facts(config_path, layer_type=None if lt == "default" else lt)
        except PosencError as exc:
            report.notes.append(f"{lt}: engines not compared: {_one_line(exc)}")
            return False
        return True

    def _rotary(self, config_path: str, lt: str) -> bool:
        """Whether layer type ``lt`` has a rotary reading (engines' rules could cover it)."""
        from ..models.engines import model_facts

        try:
            model_facts(config_path, layer_type=None if lt == "default" else lt)
        except PosencError:
            return False
        return True

    def _reference(self, lt: str, kind: str, params: dict[str, Any]) -> tuple[AuditRow, Any]:
        """The reference row of layer type ``lt`` and HF's encoding (None when it cannot be made: an error row)."""
        from ..encodings import make_encoding

        config = self.found.relative(self.found.config or "")
        try:
            enc = make_encoding(kind, params)
        except PosencError as exc:
            return AuditRow(config, lt, "hf", "error", _one_line(exc)), None
        meta = enc.metadata()
        row = AuditRow(config, lt, "hf", "reference", _describe(enc), length=_rows_of(enc),
                       details=[f"{k}={_short(v)}" for k, v in meta.items() if k != "posenc_version" and v != "none"])  # fmt: skip
        return row, enc

    def _engine(self, config_path: str, lt: str, engine: str, ref: Any) -> Any:
        """Engine ``engine``'s row of layer type ``lt``: the row now, or ``(label, step, finish)`` when its table
        must be measured against ``ref`` (the step shared with every engine whose table is the same)."""
        from ..models.engines import engine_encoding_within, resolve_engine, rule_says, rules_for

        config = self.found.relative(config_path)
        n = _rows_of(ref)
        options: dict[str, Any] = {}
        e = resolve_engine(engine)
        if "max_model_len" in e.options and self.max_model_len is not None:
            options["max_model_len"] = self.max_model_len
        if "n_ctx" in e.options:
            options["n_ctx"] = self.n_ctx if self.n_ctx is not None else n  # llama.cpp's default: the training context
        try:
            enc, facts, hit = engine_encoding_within(
                config_path, engine, length=n, layer_type=None if lt == "default" else lt,
                facts=self._facts.get((config_path, lt)), **options
            )  # fmt: skip
        except PosencError as exc:
            return [AuditRow(config, lt, engine, "skipped", f"{e.version}: {_one_line(exc)}", length=n)]
        says = rule_says(facts, engine, seq_len=n)
        details = [f"{r.says} ({r.source})" for r in rules_for(engine, facts.params)]
        details.append(f"rules read from {e.reference}")
        if hit is not None:  # a limit is a divergence: the row differs, and the rows the engine computes are shown

            def limited(d: Difference | None) -> list[AuditRow]:
                row = AuditRow(config, lt, engine, "differ", hit.line(), None if d is None else d.max_abs, n,
                               details=details, limit=hit.to_json())  # fmt: skip
                row.picture = None if d is None else d.picture
                return [row]

            if enc is None:
                return limited(None)
            return (f"{lt}: {engine}", functools.partial(_encodings_difference, enc, ref, rows=hit.rows), limited)
        if enc == ref:
            why = f"{e.version}: same table as hf" + (f" ({len(says)} rule(s) apply, none changes it)" if says else "")
            return [AuditRow(config, lt, engine, "agree", why, 0.0, n, details=details)]

        def finish(measured: _Measured) -> list[AuditRow]:
            d, arithmetic, ok, picture = measured
            if d is None:
                return [AuditRow(config, lt, engine, "skipped", f"{e.version}: no tensor of the same shape as hf's",
                                 length=n)]  # fmt: skip
            why = (
                f"{e.version}: " + (arithmetic or "equal to hf's within 2 ulp")
                if ok
                else f"{e.version}: "
                + ("; ".join([*says, *([arithmetic] if arithmetic else [])]) or "its parameters differ from hf's")
                + f" (largest at position {d.row}, {d.tensor} column {d.column})"
            )
            row = AuditRow(config, lt, engine, "agree" if ok else "differ", why, d.max_abs, n, details=details)
            row.picture = picture
            return [row]

        key = getattr(enc, "table_key", None) or id(enc)
        measure = self._measurements.setdefault(id(ref), _Measurements(ref))
        measure.add(key, enc)
        return (f"{lt}: {engine}", measure, lambda results: finish(results[key]))

    # ----- fixed tables the weights keep a copy of -----------------------------------------------------------
    def _stored(self, data: dict[str, Any]) -> list[AuditRow]:
        """A row per fixed table the model keeps in its weights (Whisper's encoder, ViTMAE, audio encoders): the
        stored copy against the formula (:mod:`posenc_cli.models.stored_tables`); a table the model never saves, or
        weights not here, is a skipped row saying so."""
        from ..models.readers import stored_copies

        f = self.found
        root = os.path.dirname(f.config or "") or "."
        here = root if f.weights and _has_weights(root) else os.path.join(root, "config.json")  # no weights: unchecked
        try:
            copies = stored_copies(here, data)
        except PosencError as exc:
            return [AuditRow("weights", "-", "hf", "error", _one_line(exc))]
        verdicts = {"equal": "agree", "differ": "differ"}
        return [
            AuditRow(c.file or "weights", c.layer_type, "hf", verdicts.get(c.verdict, "skipped"), c.why, c.max_diff,
                     c.shape[-2] if len(c.shape) >= 2 else None, details=[f"stored copy: {c.tensor}"])
            for c in copies
        ]  # fmt: skip

    # ----- vision tables: the grid at the native size and at each image size asked ---------------------
    def wrapper(self, sizes: list[Any], timm: bool) -> AuditReport:
        """A multimodal model (a text model beside a vision tower whose table posenc reads): the text model's
        positions audited as any model's (:meth:`run`), then the tower's table as a vision model's
        (:meth:`vision`), its rows labelled ``vision ...``: one report covers both towers."""
        try:
            report = self.run()
        except InputError as exc:
            if "nothing to audit" not in str(exc):
                raise
            return self.vision(sizes, timm)  # the text model applies no positions: the tower is all there is
        from ..models.config_file import load_config
        from ..models.vision import tower_table_stored

        f = self.found
        assert f.config is not None
        try:
            absent = tower_table_stored(os.path.dirname(f.config) or ".", load_config(f.config))
        except PosencError as exc:  # refused (code posenc does not reproduce) or switched off: one row says it
            if not any(r.layer_type == "vision tower" for r in report.rows):  # (run() names a refused tower itself)
                report.rows.append(_unread_row("weights", "vision tower", "hf", exc))
            return report
        if absent is not None:
            if sizes or timm:  # asked of the tower, which cannot be read here
                raise InputError(f"{f.label}: vision tower: {absent}; {param('image_size')} needs its table")
            report.rows.append(AuditRow("weights", "vision tower", "hf", "skipped", f"not checked: {absent}"))
            return report
        tower = self.vision(sizes, timm, tower=True)
        report.rows += tower.rows
        report.engines += [e for e in tower.engines if e not in report.engines]
        report.notes += [f"vision tower: {n}" for n in tower.notes]
        return report

    def vision(self, sizes: list[Any], timm: bool, tower: bool = False) -> AuditReport:
        """A vision model's table read from its weights at its native size and at each of ``sizes``: checked
        for its properties (row count: the grid plus its extra rows, read with the model's rule), and with
        ``timm``, timm's resampling of it measured against the model's own (the difference named); then each
        further table of the model (each later stage of PVT, each per-layer table of YOLOS:
        :func:`~posenc_cli.models.vision.further_tables`) at each size where the first was read, so that the audit
        covers every position table the weights hold. ``tower``: the vision tower of a multimodal model, its rows
        labelled ``vision native``, ``vision HxW``."""
        from ..models.config_file import load_config
        from ..models.vision import claims, further_tables, parse_image_size

        f = self.found
        assert f.config is not None
        data = load_config(f.config)
        assert claims(data, sizes[0] if sizes else "native")
        root = os.path.dirname(f.config) or "."
        mt = data.get("model_type") if isinstance(data.get("model_type"), str) else data.get("architecture")
        report = AuditReport(source=f.label, config=f.relative(f.config), model_type=str(mt), length=None,
                             engines=["hf", *(["timm"] if timm else [])], against=self.against, settings={})  # fmt: skip
        parsed = [parse_image_size(s) for s in sizes]
        read = []  # the sizes whose first table was read: the model's further tables are read there too
        for image in [None, *dict.fromkeys(parsed)]:
            rows = self._vision_rows(root, image, timm, tower)
            report.rows += rows
            read += [image] if rows[0].verdict not in ("error", "refused", "skipped") else []
        try:
            more = further_tables(root, data)
        except PosencError:
            more = []  # the first table's row already says why the weights could not be read
        for image in read:
            for what, kwargs in more:
                report.rows += self._vision_rows(root, image, False, tower, what, kwargs)
        if not report.compared and report.exit_code != 2:
            report.notes.append("nothing compared: no table was read (each row says why)")
        return report

    def _vision_rows(self, root: str, image: tuple[int, int] | None, timm: bool, tower: bool = False, what: str = "",
                     table: dict[str, Any] | None = None) -> list[AuditRow]:  # fmt: skip
        """The rows of one table at ``image`` (None: native): the model's first table, or with ``what`` and
        ``table`` (keyword arguments of :func:`~posenc_cli.models.vision.vision_table`) a further one; the
        repeats the model makes by design are known of its first table only (:meth:`_by_design`)."""
        from ..inspect.diagnose import diagnose
        from ..models.config_file import load_config
        from ..models.vision import is_timm_config, vision_table
        from ..sources import Source

        data = load_config(self.found.config or os.path.join(root, "config.json"))
        size = "native" if image is None else f"{image[0]}x{image[1]}"
        own = "timm" if is_timm_config(data) else "hf"
        named = f" {what}" if what else ""
        try:
            rows, meta = vision_table(root, data, image_size=image, **(table or {}))
        except PosencError as exc:
            bad = _unread_row("weights", f"vision {size}{named}" if tower else f"{size}{named}", own, exc)
            return [replace(bad, explanation=f"vision tower: {bad.explanation}") if tower else bad]
        native = " native" if image is None else ""
        # "vision native" / "vision 448x308" (fits the column), the size in the words
        label = f"vision {size}{named}" if tower else f"{meta['image_size']}{native}{named}"
        said = f"vision tower at {meta['image_size']}{' (native)' if native else ''}: " if tower else ""
        said += f"{what}: " if what else ""
        src = Source(root, {"pe": rows}, meta)
        rep = self.verbs.check(src)
        expected = [] if rep.ok or table else self._by_design(root, data, image, rows, meta, rep)
        extra = f" + rows {meta['extra_rows']}" if meta["extra_rows"] else ""
        why = said + _verdict(
            f"grid {meta['grid']}{extra}, {meta['resampling']}", rep, expected, "the model's own table"
        )
        details = [*(f"expected: {x}" for x in expected), *(f"{r.name}: {r.detail}" for r in rep.results)]
        out = [AuditRow(meta["weights_file"], label, own, "agree" if rep.ok or expected else "failed", why, None,
                        int(rows.shape[0]), details=details, expected=expected)]  # fmt: skip
        if timm and own == "hf":
            try:
                t_rows, t_meta = vision_table(root, data, image_size=image, engine="timm")
            except PosencError as exc:
                bad = _unread_row("weights", label, "timm", exc)
                return [*out, replace(bad, explanation=said + bad.explanation)]
            import numpy as np

            diff = float(np.abs(np.asarray(t_rows, np.float32) - np.asarray(rows, np.float32)).max())
            if diff == 0:
                out.append(AuditRow(meta["weights_file"], label, "timm", "agree",
                                    f"{said}timm resamples it as the model does ({t_meta['resampling']})", 0.0,
                                    int(rows.shape[0])))  # fmt: skip
            else:
                why_t = diagnose(rows, t_rows, a_name="the model's", b_name="timm's", metadata=(meta, t_meta))
                summary = (
                    why_t.best.summary if why_t.best is not None else f"{meta['resampling']} vs {t_meta['resampling']}"
                )
                out.append(AuditRow(meta["weights_file"], label, "timm", "differ", said + summary, diff,
                                    int(rows.shape[0])))  # fmt: skip
        return out

    def _by_design(self, root: str, data: Any, image: Any, rows: Any, meta: dict[str, str], rep: Any) -> list[str]:
        """The failed properties of a vision table that fail as the model's own arithmetic makes them, each in
        words (empty: a failure of the table). They must be properties of repeated rows (``distinct``,
        ``unique``), the model's rule at this size must repeat rows whatever its weights hold
        (:func:`~posenc_cli.models.vision.designed_repeats`), and each property must hold over the position rows it
        keeps apart: then every repeat in the table is one the model makes."""
        from ..encodings.grid import parse_extra_rows
        from ..models.vision import designed_repeats
        from ..sources import Source

        failed = list(rep.failed)
        if not failed or any(name not in ("distinct", "unique") for name in failed):
            return []
        try:
            design = designed_repeats(root, data, image_size=image)
        except PosencError:
            return []
        if design is None:
            return []
        extra = parse_extra_rows(meta.get("extra_rows") or "", "metadata extra_rows")
        positions = [i for i in range(int(rows.shape[0])) if i not in extra]
        apart = [i for i in positions if int(design[i]) == i]
        again = self.verbs.check(Source(root, {"pe": rows[apart]}, {}), require=failed, identify=False)
        if not again.ok:
            return []
        return [
            f"{name} fails: {len(positions) - len(apart)} of {len(positions)} position rows repeat others, as the "
            f"model's own resampling makes them; over the {len(apart)} rows it keeps apart, {name} holds"
            for name in failed
        ]

    # ----- learned tables in the weights ----------------------------------------------------------------
    def _learned(self, lt: str, params: dict[str, Any], data: dict[str, Any]) -> AuditRow:
        from ..sources import open_source

        f = self.found
        root = os.path.dirname(f.config or "") or "."
        weights = str(params.get("weights_tensor"))
        hub_info = f.hub
        if hub_info is not None and hub_info[1] and not _has_weights(root):
            self._fetch_positions(hub_info[0], root, weights)
            root = os.path.dirname(f.config or "")
        if not f.weights or not _has_weights(root):
            return AuditRow(
                "weights", lt, "hf", "skipped",
                f"learned positions ({weights}) live in the weights, which are not here"
                + (f": pass {param('download')} to fetch that tensor only" if hub_info is not None else ""),
            )  # fmt: skip
        try:
            src = open_source(root, layer_type=None if lt == "default" else lt, length=self.length)
            rep = self.verbs.check(src)
        except PosencError as exc:
            return AuditRow("weights", lt, "hf", "error", _one_line(exc))
        artifact = src.metadata.get("weights_file", "weights")
        name = src.metadata.get("weights_tensor", weights)
        arr_shape = "x".join(str(s) for s in src.tensors[src.names[0]].shape) if src.names else "?"
        why = _verdict(f"learned {name} ({arr_shape})", rep, what_is="the stored table")
        n = int(src.tensors[src.names[0]].shape[0]) if src.names else None
        # the reader held the table against its config (width, rows with offset rows, padding row): say what
        against = src.metadata.get("config_checked")
        details = ([f"config: {against}"] if against else []) + [f"{r.name}: {r.detail}" for r in rep.results]
        return AuditRow(artifact, lt, "hf", "agree" if rep.ok else "failed", why, None, n, details=details)

    def _fetch_positions(self, hub_id: str, root: str, tensor: str) -> None:
        """``--download`` of a model with learned positions: that tensor, by byte ranges, into a copy of the
        snapshot's config.json's directory (the cache itself is never given partial weights)."""
        import json
        import shutil

        f = self.found
        repo, rev = hub.split(hub_id)
        local = tempfile.mkdtemp(prefix="positions-", dir=self.tmp)
        shutil.copy(f.config or "", os.path.join(local, "config.json"))
        index = os.path.join(root, "model.safetensors.index.json")
        files = ["model.safetensors"]
        if os.path.isfile(index):
            with open(index, encoding="utf-8") as fh:
                files = sorted({os.path.basename(str(v)) for v in json.load(fh).get("weight_map", {}).values()})
        fetcher = hub.range_fetcher(repo, rev)

        def wanted(name: str) -> bool:
            return name == tensor or name.endswith("." + tensor)

        hub.fetch_tensors({n: fetcher(n) for n in files}, wanted, os.path.join(local, "model.safetensors"))
        f.config = os.path.join(local, "config.json")
        f.weights = True

    # ----- conversions ----------------------------------------------------------------------------------
    def _gguf(self, path: str, config_path: str, length: int | None) -> list[AuditRow]:
        """One row per attention type: llama.cpp's tables for the GGUF file against HF's for the config
        (:func:`posenc_cli.api.check_gguf`)."""
        from ..models.conversion import verdict
        from ..models.llamacpp import LLAMACPP_VERSION

        name = self.found.relative(path)
        if importlib.util.find_spec("gguf") is None:
            return [AuditRow(name, "-", "llamacpp", "skipped", "reading GGUF needs: pip install 'posenc-cli[gguf]'")]
        try:
            # once: each attention type's part inside, the sliding layers compared, the weights in a row of their own
            whole = verdict(path, config_path, n_ctx=self.n_ctx, length=length, weights="skip")
            types: list[str | None] = [*whole.numbers] or [None]
            verdicts = {lt: whole if len(types) == 1 else whole.by_type[str(lt)] for lt in types}
        except PosencError as exc:
            return [AuditRow(name, "-", "llamacpp", "error", _one_line(exc)), self._gguf_weights(path, config_path)]
        rows = []
        for lt, v in verdicts.items():
            nums = v.numbers.get(lt, {}) if lt is not None else {}
            details = [f"divergence: {d}" for d in v.divergences] + [f"equivalent: {e}" for e in v.equivalences]
            details += [f"note: {n}" for n in v.notes]
            if v.ok:
                why = v.equivalences[0] if v.equivalences else f"llama.cpp's tables equal HF's ({LLAMACPP_VERSION})"
            else:
                why = v.divergences[0]
            max_abs = nums.get("max_abs_vs_hf")
            row = AuditRow(name, lt or "-", "llamacpp", "agree" if v.ok else "differ", why,
                           None if max_abs is None else float(max_abs), v.length, details=details)  # fmt: skip
            if not v.ok and lt is not None:
                row.picture = _gguf_picture(path, config_path, lt, v)
            rows.append(row)
        rows.append(self._gguf_weights(path, config_path))
        return rows

    def _gguf_weights(self, path: str, config_path: str) -> AuditRow:
        """The GGUF's Q/K weights against HF's beside the config: one row (:mod:`posenc_cli.models.qk_weights`)."""
        from ..models.qk_weights import audit_verdict

        verdict, why, details = audit_verdict(path, config_path)
        return AuditRow(self.found.relative(path), "weights", "llamacpp", verdict, why, details=details)

    def _mlx_weights(self, path: str, config_path: str) -> AuditRow:
        """An MLX directory's Q/K weights and rope flag against HF's: one row (:mod:`posenc_cli.models.mlx_weights`);
        skipped when the reference is the MLX directory's own config (no HF weights given)."""
        from ..models.mlx_weights import audit_verdict
        from ..models.qk_weights import hf_weights_dir

        name = self.found.relative(path)
        name = "." if name == path and self.found.root == path else name
        hf_dir = hf_weights_dir(config_path)
        if hf_dir is None or os.path.abspath(hf_dir) == os.path.abspath(path):
            why = "weights not checked: no HF model to compare the MLX weights with; give it with --against DIR"
            return AuditRow(name, "weights", "mlx", "skipped", why)
        verdict, why, details = audit_verdict(path, hf_dir)
        return AuditRow(name, "weights", "mlx", verdict, why, details=details)

    def _onnx(self, path: str, config_path: str) -> list[AuditRow]:
        """One row per attention type the export's caches hold (:func:`posenc_cli.api.check_onnx` matches each
        cache to its type), with the largest difference of those caches from HF's tables."""
        name = self.found.relative(path)
        if importlib.util.find_spec("onnx") is None:
            return [AuditRow(name, "-", "onnx", "skipped", "reading ONNX needs: pip install 'posenc-cli[onnx]'")]
        missing = re.compile(r"^no cache of .* holds the (\S+) layers' tables$")
        from ..models.onnx import observing

        try:
            # the model read once; each cache the check compares in full with HF's tables is measured as it goes
            with observing(_OnnxSeen()) as seen:
                results = self.verbs.check_onnx(path, config_path, engine="hf", max_bytes=self.max_bytes)
                # the pictures only when a row differs (binning them costs more than the difference itself)
                diverging = any(res.divergences for res in results)
                diffs, closest = _onnx_differences(self.verbs, path, config_path, self.max_bytes, pictures=diverging,
                                                   seen=seen)  # fmt: skip
        except NoTableError as exc:  # a graph that rotates with ordinary ops: nothing to compare, not a bad file
            return [AuditRow(name, "-", "onnx", "skipped", _one_line(exc)), *self._onnx_weights(path, config_path)]
        except PosencError as exc:
            return [AuditRow(name, "-", "onnx", "error", _one_line(exc)), *self._onnx_weights(path, config_path)]
        rows = []
        lacking = [m.group(1) for res in results for x in res.divergences if (m := missing.match(x))]
        for res in results:
            lt = res.label[res.label.rindex("[") + 1 : -1] if res.label.endswith("]") else None
            own = [x for x in res.divergences if not missing.match(x)]
            d, n = diffs.get(lt, (None, None)) if lt is not None else _worst_of(diffs)
            why = own[0] if own else (res.matched[0] if res.matched else "no rotary cache")
            verdict = "differ" if own else ("agree" if res.matched else "skipped")
            details = [f"divergence: {x}" for x in own] + [f"ok: {x}" for x in res.matched]
            row = AuditRow(name, lt or "-", "onnx", verdict, why, None if d is None else d.max_abs, n,
                           details=details + [f"note: {w}" for w in res.warnings])  # fmt: skip
            if verdict == "differ" and d is not None:
                row.picture = d.picture
            rows.append(row)
        for lt in lacking:  # an attention type no cache holds: its own row, with the closest cache's difference
            d, n = closest.get(lt, (None, None))
            row = AuditRow(name, lt, "onnx", "differ", f"no cache of {name} holds the {lt} layers' tables"
                           + ("" if d is None else f"; the closest cache differs from them by {d.max_abs:.3g}"),
                           None if d is None else d.max_abs, n)  # fmt: skip
            row.picture = None if d is None else d.picture
            rows.append(row)
        return rows + self._onnx_weights(path, config_path)

    def _onnx_weights(self, path: str, config_path: str) -> list[AuditRow]:
        """The export's Q/K initializers against HF's weights beside the config: one row, none without them
        (:mod:`posenc_cli.models.onnx_weights`)."""
        from ..models.onnx_weights import audit_verdict

        found = audit_verdict(path, config_path)
        if found is None:
            return []
        verdict, why, details = found
        return [AuditRow(self.found.relative(path), "weights", "onnx", verdict, why, details=details)]


# ----- helpers ----------------------------------------------------------------------------------------------
def _one_row(row: AuditRow) -> list[AuditRow]:
    return [row]


def _default_lengths(data: dict[str, Any], layers: dict[str, Any]) -> list[str]:
    """Each layer type's length when ``--len`` is not given and its reading sets none (T5 buckets, Bloom's ALiBi
    apply at any length): the config's context (:data:`~posenc_cli.models.records.CONTEXT_KEYS`), else the kind's
    own default (:attr:`~posenc_cli.encodings.base.Encoding.DEFAULT_LENGTH`). Sets it in ``layers``; returns the
    notes that say where it came from."""
    from ..encodings import get_kind
    from ..models.records import CONTEXT_KEYS

    said: dict[str, list[str]] = {}
    for lt, v in layers.items():
        if v is None or "length" in v[1] or "weights_tensor" in v[1]:
            continue
        kind, params = v
        key = next((k for k in CONTEXT_KEYS if type(data.get(k)) is int and data[k] > 0), None)
        default = get_kind(kind).DEFAULT_LENGTH
        if key is not None:
            params["length"], why = data[key], f"config key {key}"
        elif default is not None:
            params["length"], why = default[0], f"{kind}'s own default, {default[1]}; the config sets none"
        else:
            continue
        said.setdefault(f"{params['length']} positions ({why})", []).append(lt)
    return [f"{', '.join(lts)}: compared at {what}; {param('length')} N overrides" for what, lts in said.items()]


def _properties(check: Callable[..., Any], artifact: str, lt: str, enc: Any) -> AuditRow:
    """The reference table of a layer type no engine's rules cover, checked for the properties its kind
    requires (``check``: the api's, as ``posenc check`` does): what the audit compares it with."""
    try:
        rep = check(enc)
    except PosencError as exc:
        return AuditRow(artifact, lt, "check", "error", _one_line(exc))
    why = _verdict(f"{enc.KIND} table", rep, what_is="HF's own table")
    return AuditRow(artifact, lt, "check", "agree" if rep.ok else "failed", why, None, _rows_of(enc),
                    details=[f"{r.name}: {r.detail}" for r in rep.results])  # fmt: skip


def _verdict(what: str, rep: Any, expected: Sequence[str] = (), what_is: str = "the table") -> str:
    """One check report in an audit row: what held or failed, and the rows left out as not positions. A failure
    is a property of the table itself (``what_is``), not a difference; one ``expected`` of the model (rows its own
    arithmetic repeats) is said as such."""
    held = ", ".join(r.name for r in rep.results if r.passed)
    failed = ", ".join(rep.failed) or "a required property"
    if rep.ok:
        said = f"{what}: every required property holds ({held})"
    elif expected:
        said = f"{what}: {what_is}; " + (f"{held} {'holds' if ', ' not in held else 'hold'}; " if held else "")
        said += f"expected of it: {'; '.join(expected)}"
    else:
        said = f"{what}: {what_is}, nothing differs; a required property fails: {failed}"
    return said + (f"; {rep.left_out['text']}" if rep.left_out else "")


def _unread_row(artifact: str, label: str, engine: str, exc: PosencError) -> AuditRow:
    """The row of a table not made: ``skipped`` when the config says the model has none (no table to read: not
    checked), ``refused`` when the model makes it with code posenc does not reproduce, else ``error``."""
    if isinstance(exc, NoTableError):
        return AuditRow(artifact, label, engine, "skipped", f"not checked: {_one_line(exc)}")
    return AuditRow(artifact, label, engine, "refused" if isinstance(exc, RefusedError) else "error", _one_line(exc))


def _one_line(exc: BaseException) -> str:
    """The error's message on one line, its parameter references kept (the report's reader spells them:
    :meth:`~.report.AuditReport.respelled`)."""
    text = BaseException.__str__(exc) if isinstance(exc, PosencError) else str(exc)
    return " ".join(str(text).split())


def _rows_of(enc: Any) -> int:
    return int(getattr(enc, "length", 0) or next(iter(enc.tensor_specs().values())).shape[0])


def _describe(enc: Any) -> str:
    """The reference in one line: its kind, width and the parameters that differ from the kind's defaults."""
    import dataclasses

    shown = []
    for f in dataclasses.fields(enc):
        if f.name in ("length", "dim", "dtype") or not f.init:
            continue
        value = getattr(enc, f.name)
        default = f.default if f.default is not dataclasses.MISSING else None
        if (value != default or f.name == "base") and value is not None:
            text = ", ".join(f"{x:g}" if isinstance(x, float) else str(x) for x in value) if isinstance(
                value, (list, tuple)) else (f"{value:g}" if isinstance(value, float) else str(value))  # fmt: skip
            shown.append(f"{f.name} {text if len(text) <= 40 else text[:37] + '...'}")
    return f"HF transformers: {enc.KIND} dim {getattr(enc, 'dim', '-')}" + "".join(", " + x for x in shown)


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _has_weights(root: str) -> bool:
    return any(os.path.isfile(os.path.join(root, n)) for n in ("model.safetensors", "model.safetensors.index.json"))


def _about(text: str, lt: str) -> bool:
    words = lt.replace("_attention", "")
    return words in text or lt in text


def _atol(a: Any, b: Any) -> float:
    from ..inspect.tolerance import default_atol

    return max(default_atol(a.out_dtype), default_atol(b.out_dtype))


#: an engine's table measured against HF's: (the largest difference, why it is HF's table in the engine's
#: arithmetic or None, whether the row agrees, the picture of a diverging row)
_Measured = tuple[Difference | None, str | None, bool, Any]


class _Measurements:
    """The audit's step that measures every distinct engine table of one reference (:meth:`add` each, keyed by
    its table key), all in one pass (:func:`_measure`): called, the results by key."""

    def __init__(self, ref: Any) -> None:
        self.ref = ref
        self.encs: dict[Any, Any] = {}

    def add(self, key: Any, enc: Any) -> None:
        self.encs.setdefault(key, enc)

    def __call__(self) -> dict[Any, _Measured]:
        return _measure(self.encs, self.ref)


def _measure(encs: dict[Any, Any], ref: Any) -> dict[Any, _Measured]:
    """Each engine table of ``encs`` against HF's ``ref``: read once, block by block together (each block of
    ``ref`` computed once for all of them), for the differences and each arithmetic's judge; the picture only
    for a diverging row (read again then: an agreeing row is the common case)."""
    from ..models.engines import ArithmeticJudge

    judges = {key: ArithmeticJudge(enc, ref) for key, enc in encs.items()}
    diffs = _encodings_differences(encs, ref, judges=judges, pictures=False)
    out: dict[Any, _Measured] = {}
    for key, enc in encs.items():
        d, judge = diffs[key], judges[key]
        if d is None:
            out[key] = (None, None, False, None)
            continue
        arithmetic = judge.result()
        ok = arithmetic is not None or d.max_abs <= _atol(enc, ref)
        if not ok:  # one rule for engine rows: a row that differs says what differs (the judge names it)
            arithmetic = judge.difference() or None
        picture = None
        if not ok:
            drawn = _encodings_difference(enc, ref)
            if drawn is not None and drawn.picture is not None:
                picture = drawn.picture
                picture.spectrum = _spectrum(enc, ref)
        out[key] = (d, arithmetic, ok, picture)
    return out


def _encodings_difference(
    a: Any, b: Any, rows: int | None = None, judge: Any = None, pictures: bool = True
) -> Difference | None:
    """The worst of the 2-D tensors ``a`` and ``b`` both have with the same width, over their first ``rows``
    rows (default: both have the same shape), read block by block."""
    judges = None if judge is None else {0: judge}
    return _encodings_differences({0: a}, b, rows, judges, pictures)[0]


def _encodings_differences(
    encs: dict[Any, Any], b: Any, rows: int | None = None, judges: dict[Any, Any] | None = None,
    pictures: bool = True
) -> dict[Any, Difference | None]:  # fmt: skip
    """:func:`_encodings_difference` of each table of ``encs`` against ``b`` (by the same keys), read together
    block by block: each block of ``b``'s tensors is computed once for all of them."""
    sb = b.tensor_specs()
    by_rows: dict[int, list[Side]] = {}  # tensors of the same length are read block by block together
    owner: dict[int, list[Any]] = {}  # the key of each side, in the same order
    shared: dict[tuple[int, str], _SharedRows] = {}
    for key, a in encs.items():
        for name, spec in a.tensor_specs().items():
            other = sb.get(name)
            if other is None or len(spec.shape) != 2 or len(other.shape) != 2 or other.shape[1] != spec.shape[1]:
                continue
            if rows is None and tuple(other.shape) != tuple(spec.shape):
                continue
            n = int(spec.shape[0]) if rows is None else min(rows, int(spec.shape[0]), int(other.shape[0]))
            judge = None if judges is None else judges.get(key)
            feed = None if judge is None else functools.partial(judge.feed, name)
            b_rows = shared.setdefault((n, name), _SharedRows(b, name))
            by_rows.setdefault(n, []).append(Side(name, _rows(a, name), b_rows, int(spec.shape[1]), feed))
            owner.setdefault(n, []).append(key)
    found: dict[Any, list[Difference]] = {key: [] for key in encs}
    for n, sides in by_rows.items():
        for key, d in zip(owner[n], differences(sides, n, pictures)):
            found[key].append(d)
    return {key: worst(ds) for key, ds in found.items()}


def _rows(enc: Any, name: str) -> Callable[[int, int], Any]:
    def rows(start: int, stop: int) -> Any:
        return enc.rows(name, start, stop)

    return rows


class _SharedRows:
    """Rows ``start:stop`` of tensor ``name`` of ``enc`` as float64 (read-only), the last block kept: the sides
    that compare several tables with this one read each of its blocks in turn (:func:`differences` reads every
    side's block before the next block), and it is computed once for them."""

    def __init__(self, enc: Any, name: str) -> None:
        self.enc, self.name = enc, name
        self.last: tuple[tuple[int, int], Any] | None = None

    def __call__(self, start: int, stop: int) -> Any:
        if self.last is None or self.last[0] != (start, stop):
            import numpy as np

            block = np.asarray(self.enc.rows(self.name, start, stop), dtype=np.float64)
            block.flags.writeable = False
            self.last = ((start, stop), block)
        return self.last[1]


def _slices(array: Any) -> Callable[[int, int], Any]:
    def rows(start: int, stop: int) -> Any:
        return array[start:stop]

    return rows


def _spectrum(a: Any, b: Any) -> dict[str, list[float]] | None:
    """Both sides' frequencies (radians per position), when both encodings have them."""
    if not (hasattr(a, "inv_freq") and hasattr(b, "inv_freq")):
        return None
    try:
        fa, fb = a.inv_freq(), b.inv_freq()
    except (PosencError, ValueError, TypeError):
        return None
    return {"artifact": [float(x) for x in fa], "reference": [float(x) for x in fb]}


def _gguf_picture(path: str, config_path: str, lt: str, v: Any) -> Any:
    """Where llama.cpp's tables for the GGUF differ from HF's: both read at the verdict's length."""
    from ..encodings import make_encoding
    from ..models.config_file import load_config
    from ..models.llamacpp import gguf_tables
    from ..models.readers import rotary_config

    try:
        tensors, _meta, _ = gguf_tables(path, n_ctx=v.n_ctx, length=v.length,
                                        layer_type=None if lt in ("default", "full_attention") else lt)  # fmt: skip
        cfg = rotary_config(load_config(config_path))
        enc = make_encoding(cfg.kind, cfg.params(None if lt == "default" else lt, v.length))
    except (PosencError, KeyError, ValueError):
        return None
    diffs = []
    for name in ("cos", "sin"):
        if (
            name in tensors
            and name in enc.tensor_specs()
            and tuple(enc.tensor_specs()[name].shape) == tensors[name].shape
        ):
            diffs.append(of_arrays(name, tensors[name], enc.array(name)))
    d = worst(diffs)
    if d is None or d.picture is None:
        return None
    if "inv_freq" in tensors and hasattr(enc, "inv_freq"):
        d.picture.spectrum = {"artifact": [float(x) for x in tensors["inv_freq"]],
                              "reference": [float(x) for x in enc.inv_freq()]}  # fmt: skip
    return d.picture


class _OnnxSeen:
    """The differences from HF's tables of each ONNX cache that :func:`~posenc_cli.models.onnx.check_against`
    compared in full (an :class:`~posenc_cli.models.onnx.Observer`): the audit's rows take them instead of
    computing the expected tables again (:func:`_onnx_differences`)."""

    def __init__(self) -> None:
        self.running: dict[Any, Pushed] = {}
        self.done: dict[Any, list[Difference]] = {}

    def block(self, key: Any, rows: int, start: int, stop: int, stored: Any, expected: Any) -> None:
        width = stored.shape[1] // 2
        if start == 0 or key not in self.running:
            self.running[key] = Pushed(["cos_cache", "sin_cache"], rows, width, pictures=False)
        self.running[key].take(start, stop, [stored[:, :width], stored[:, width:]],
                               [expected[:, :width], expected[:, width:]])  # fmt: skip

    def finished(self, key: Any, complete: bool) -> None:
        pushed = self.running.pop(key, None)
        if complete and pushed is not None:
            self.done[key] = pushed.result()


def _onnx_differences(
    verbs: Verbs, path: str, config_path: str, max_bytes: int | None, pictures: bool = True,
    seen: _OnnxSeen | None = None,
) -> tuple[dict[Any, Any], dict[Any, Any]]:  # fmt: skip
    """Per attention type (None for a model with one table): the largest difference of the stored caches that
    are that type's (each cache goes to the type it differs from least) from HF's tables, and their most rows;
    and per type, the cache closest to its tables (for a type no cache holds). Expected rows are computed block
    by block (:func:`models.onnx.expected_encoding`), unless ``seen`` holds the difference (without pictures) of a
    cache the check compared in full; ``pictures=False`` measures without binning."""
    from ..models import onnx
    from ..models.engines import engine_params, model_facts

    model = onnx.read_onnx(path, max_bytes=max_bytes)
    types = verbs.layer_types(config_path)
    per_cache: list[dict[Any, tuple[Difference | None, int]]] = []
    for cache in model.caches:
        by_type: dict[Any, tuple[Difference | None, int]] = {}
        for lt in types:
            facts = model_facts(config_path, layer_type=lt)
            expect = engine_params(facts, "hf", seq_len=None)
            diffs = []
            for role, _n, cos, sin in onnx._roles(cache, facts, facts.params.get("scaling") == "longrope") or []:
                if 2 * cos.shape[1] != facts.rot_dim or cos.shape[0] == 0:
                    continue
                held = None if seen is None or pictures else seen.done.get((lt, "hf", id(cache), role))
                if held is not None:
                    diffs += held
                    continue
                enc, _s, _w = onnx.expected_encoding(expect, int(cos.shape[0]), role, facts)
                sides = [Side(name, _slices(stored), _rows(enc, name), int(cos.shape[1]))
                         for name, stored in (("cos_cache", cos), ("sin_cache", sin))]  # fmt: skip
                diffs += differences(sides, int(cos.shape[0]), pictures)
            by_type[lt] = (worst(diffs), int(cache.cos.shape[0]))
        per_cache.append(by_type)
    out: dict[Any, tuple[Difference | None, int | None]] = {}
    for by_type in per_cache:
        measured = {lt: v for lt, v in by_type.items() if v[0] is not None}
        if not measured:
            continue
        lt = min(measured, key=lambda t: measured[t][0].max_abs)  # type: ignore[union-attr]
        d, n = measured[lt]
        old = out.get(lt)
        if old is None or old[0] is None or (d is not None and d.max_abs > old[0].max_abs):
            out[lt] = (d, max(n, old[1] or 0) if old else n)
    closest: dict[Any, tuple[Difference | None, int | None]] = {}
    for lt in types:
        near = [c[lt] for c in per_cache if c.get(lt, (None, 0))[0] is not None]
        if near:
            closest[lt] = min(near, key=lambda v: v[0].max_abs)  # type: ignore[union-attr]
    return out, closest


def _worst_of(diffs: dict[Any, tuple[Difference | None, int | None]]) -> tuple[Difference | None, int | None]:
    found = [v for v in diffs.values() if v[0] is not None]
    return max(found, key=lambda v: v[0].max_abs) if found else (None, None)  # type: ignore[union-attr]
