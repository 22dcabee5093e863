"""`posenc kinds`: the registry of encoding kinds, for people and machines."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..encodings import KINDS
from ._common import (
    JsonOpt,
    _complete_kind,
    _pipe_safe,
    app,
)


# ----- kinds ---------------------------------------------------------------------------------------
@app.command()
@_pipe_safe
def kinds(
    kind: Annotated[Optional[str], typer.Argument(help="Show one kind in detail.", autocompletion=_complete_kind, show_default=False)] = None,
    json_out: JsonOpt = False,
) -> None:
    """List the encoding kinds, or show one kind's tensors, parameters, presets and references."""
    from ..encodings import get_kind
    from ..kindinfo import kind_info

    if kind is None:
        rows = [kind_info(get_kind(k)) for k in KINDS]
        if json_out:
            from ..render import print_json

            print_json(rows)
        else:
            from ..render import kinds_list

            kinds_list(rows)
        return
    info = kind_info(get_kind(kind))
    if json_out:
        from ..render import print_json

        print_json(info)
    else:
        from ..render import kind_detail

        kind_detail(info)
