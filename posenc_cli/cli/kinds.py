"""`posenc kinds`: the registry of encoding kinds, for people and machines."""

from __future__ import annotations

import argparse

from ..errors import ExitCode
from ._common import add_json, complete_kind
from ._parser import with_completer

NAME = "kinds"
SUMMARY = "List the encoding kinds, or show one kind's tensors, parameters and presets."
DESCRIPTION = "List the encoding kinds, or show one kind's tensors, parameters, presets and references."


def add_arguments(p: argparse.ArgumentParser) -> None:
    with_completer(p.add_argument("kind", nargs="?", metavar="KIND", help="Show one kind in detail."), complete_kind)
    add_json(p)


def run(args: argparse.Namespace) -> int:
    from ..api import kinds as all_kinds
    from ..encodings import get_kind
    from ..kindinfo import kind_info
    from ..render import print_json

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
