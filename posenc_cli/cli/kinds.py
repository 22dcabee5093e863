"""`posenc kinds`: the registry of encoding kinds, for people and machines."""

from ..errors import ExitCode, ParameterError
from . import _options as o
from ._common import msg, print_json

DESCRIPTION = """\
List the encoding kinds, or show one kind's tensors, parameters, presets and
references; with a model config (KIND may be its path, or give --hf-config),
what the config sets and from which key."""


def run(
    kind: o.KindArg = None,
    hf_config: o.HfConfig = None,
    layer_type: o.LayerType = None,
    read_as: o.ReadAs = None,
    json_out: o.Json = False,
    quiet: o.Quiet = 0,
) -> int:
    from ..api import kinds as all_kinds
    from ..encodings import get_kind
    from ..kindinfo import kind_info
    from ..sources import is_config

    if kind is not None and (kind == "-" or is_config(kind)):
        if hf_config is not None:
            raise ParameterError(f"the model config is given twice: {kind} and --hf-config {hf_config}")
        kind, hf_config = None, kind
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
