"""`posenc kinds`: the registry of encoding kinds, for people and machines."""

from ..errors import ExitCode, ParameterError
from . import _options as o
from ._common import msg, print_json, refuse

DESCRIPTION = """\
List the encoding kinds, or show one kind's tensors, parameters, presets and
references; with a model config (KIND may be its path, or give --hf-config),
what the config sets and from which key; with a GGUF file, what llama.cpp reads
from which key or tensor and the choices it makes at --n-ctx."""


def run(
    kind: o.KindArg = None,
    hf_config: o.HfConfig = None,
    layer_type: o.LayerType = None,
    read_as: o.ReadAs = None,
    engines: o.EnginesTable = False,
    max_model_len: o.MaxModelLen = None,
    n_ctx: o.NCtx = None,
    json_out: o.Json = False,
    quiet: o.Quiet = 0,
) -> int:
    from ..api import kinds as all_kinds
    from ..encodings import get_kind
    from ..kindinfo import kind_info
    from ..sources import is_config, is_gguf

    if kind is not None and is_gguf(kind):
        given = [("--hf-config", hf_config), ("--layer-type", layer_type), ("--read-as", read_as),
                 ("--engines", engines), ("--max-model-len", max_model_len)]  # fmt: skip
        refuse(given, f"{kind} is a GGUF file: kinds says what llama.cpp reads from it")
        return _gguf(kind, n_ctx, json_out, quiet)
    if kind is not None and (kind == "-" or is_config(kind)):
        if hf_config is not None:
            raise ParameterError(f"the model config is given twice: {kind} and --hf-config {hf_config}")
        kind, hf_config = None, kind
    if hf_config is not None and hf_config != "-":
        from ..sources import split_engine

        hf_config, engine = split_engine(hf_config)
        if engine is not None:
            raise ParameterError(
                f"kinds says what {hf_config} sets; for where engine {engine} departs from it, use "
                f"posenc kinds {hf_config} --engines"
            )
    if hf_config is None and (engines or max_model_len is not None or n_ctx is not None):
        raise ParameterError(
            "--engines, --max-model-len and --n-ctx apply to a model config (--n-ctx also to a GGUF file); give its "
            "config.json"
        )
    if hf_config is not None and engines:
        return _engines(hf_config, layer_type, max_model_len, n_ctx, json_out)
    if max_model_len is not None or n_ctx is not None:
        raise ParameterError("--max-model-len and --n-ctx apply with --engines")
    if hf_config is not None:
        return _config(hf_config, kind, layer_type, read_as, json_out, quiet)
    for flag, value in (("--layer-type", layer_type), ("--read-as", read_as)):
        if value is not None:
            raise ParameterError(f"{flag} applies to a model config; drop it or give the model's config.json")
    if kind is None:
        rows = all_kinds()
        if json_out:
            print_json(rows)
        else:
            from ..render import kinds_list

            kinds_list(rows)
        return ExitCode.OK
    info = kind_info(get_kind(kind))
    if json_out:
        print_json(info)
    else:
        from ..render import kind_detail

        kind_detail(info)
    return ExitCode.OK


def _config(
    path: str, kind: str | None, layer_type: str | None, read_as: str | None, json_out: bool, quiet: int
) -> int:
    from ..api import load_config
    from ..models.readers import describe_model_config, model_config_layers
    from ..render import config_report

    config = load_config(path)
    if layer_type is not None:
        types: list[str | None] = [layer_type]
    else:  # every attention type that applies an encoding, or the one table when all types share it
        layers = model_config_layers(config, kind=kind, read_as=read_as)
        rotating = [lt for lt, v in layers.items() if v is not None]
        distinct = {repr(v) for v in layers.values() if v is not None}
        types = list(rotating) if len(distinct) > 1 else [None]
    reports = [describe_model_config(config, kind=kind, layer_type=lt, read_as=read_as) for lt in types]
    if json_out:
        for w in dict.fromkeys(w for r in reports for w in r.get("warnings") or []):
            msg(f"Warning: {w}", quiet)
        print_json(reports if layer_type is None and len(reports) > 1 else reports[0])
    else:
        for i, report in enumerate(reports):
            if i:
                print()
            config_report(report, quiet=quiet)
    return ExitCode.OK


def _gguf(path: str, n_ctx: int | None, json_out: bool, quiet: int) -> int:
    """What llama.cpp reads from a GGUF file, from which key or tensor, and its choices at ``n_ctx``."""
    from ..models.llamacpp import describe

    rows = describe(path, n_ctx=n_ctx)
    if json_out:
        print_json([{"name": n, "value": v, "from": f} for n, v, f in rows])
        return ExitCode.OK
    from ..render import wrap

    for name, value, origin in rows:
        if name == "warning":
            msg(f"Warning: {value}", quiet)
            continue
        line = f"{name:<22} {value}" + (f"  ({origin})" if origin else "")
        print("\n".join(wrap(line, 80, "", " " * 23)))
    return ExitCode.OK


def _engines(path: str, layer_type: str | None, max_model_len: int | None, n_ctx: int | None, json_out: bool) -> int:
    """kinds CONFIG --engines: per engine, the rules that apply to this model and whether its tables depart
    from HF's (posenc_cli.models.engines.departures)."""
    from ..models.engines import departures
    from ..render import wrap
    from . import _options

    rows = departures(path, layer_type=layer_type, max_model_len=max_model_len, n_ctx=n_ctx)
    for row in rows:  # an option a rule needs, spelled as the flag that gives it
        exc = row.pop("error")
        if exc is not None:
            row["note"] = exc.render(_options.FLAGS.get)
    if json_out:
        print_json(rows)
        return ExitCode.OK
    for row in rows:
        verdict = "DIFFERS" if row["differs"] else ("n/a" if row["note"] else "same as hf")
        print(f"{row['engine']:<11} {verdict:<10} {row['version']}")
        for r in row["rules"]:
            print("\n".join(wrap(f"{r['says']} ({r['source']})", 74, "  rule: ", " " * 8)))
        for lim in row["limits"]:
            text = f"no table from position {lim['from_position']} on: {lim['says']} ({lim['source']})"
            print("\n".join(wrap(text, 73, "  limit: ", " " * 9)))
        if row["note"]:
            print("\n".join(wrap(row["note"], 76, "  ", "    ")))
    return ExitCode.OK
