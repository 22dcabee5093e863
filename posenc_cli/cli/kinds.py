"""`posenc kinds`: the registry of encoding kinds, for people and machines."""

from __future__ import annotations

import argparse

from ..errors import ExitCode, ParameterError
from ._common import add_json, complete_kind
from ._parser import with_completer

NAME = "kinds"
SUMMARY = "List the encoding kinds, or show one kind's tensors, parameters and presets."
DESCRIPTION = "List the encoding kinds, or show one kind's tensors, parameters, presets and references."


def add_arguments(p: argparse.ArgumentParser) -> None:
    with_completer(p.add_argument("kind", nargs="?", metavar="KIND", help="Show one kind in detail."), complete_kind)
    p.add_argument(
        "--hf-config",
        metavar="PATH",
        help="Show what this model config.json (or its directory, or -) sets, and where each value came from.",
    )
    p.add_argument("--layer-type", metavar="NAME", help="With --hf-config: the attention type to show.")
    add_json(p)


def run(args: argparse.Namespace) -> int:
    from ..api import kinds as all_kinds
    from ..encodings import get_kind
    from ..kindinfo import kind_info
    from ..render import print_json

    if args.hf_config is not None:
        return _config(args)
    if args.layer_type is not None:
        raise ParameterError("--layer-type applies to --hf-config; drop it or pass --hf-config config.json")
    if args.kind is None:
        rows = all_kinds()
        if args.json_out:
            print_json(rows)
        else:
            from ..render import kinds_list

            kinds_list(rows)
        return ExitCode.OK
    info = kind_info(get_kind(args.kind))
    if args.json_out:
        print_json(info)
    else:
        from ..render import kind_detail

        kind_detail(info)
    return ExitCode.OK


def _config(args: argparse.Namespace) -> int:
    from ..api import load_config
    from ..encodings import describe_model_config, model_config_layers
    from ..render import config_report, print_json

    config = load_config(args.hf_config)
    if args.layer_type is not None:
        types = [args.layer_type]
    else:  # every attention type that applies an encoding, or the one table when all types share it
        layers = model_config_layers(config, kind=args.kind)
        rotating = [lt for lt, v in layers.items() if v is not None]
        distinct = {repr(v) for v in layers.values() if v is not None}
        types = rotating if len(distinct) > 1 else [None]
    reports = [describe_model_config(config, kind=args.kind, layer_type=lt) for lt in types]
    if args.json_out:
        print_json(reports if args.layer_type is None and len(reports) > 1 else reports[0])
    else:
        for i, report in enumerate(reports):
            if i:
                print()
            config_report(report)
    return ExitCode.OK
