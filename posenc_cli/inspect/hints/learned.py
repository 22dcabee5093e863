"""Identification hints of the learned kinds: which parameters a table's structure implies (moved out of
``encodings/learned.py`` so that the kinds do not import the inspection code; the kind names its reader in
``IDENTIFY``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import analysis as an
from ..candidates import Candidate


# ----- identification hints (read by posenc_cli.inspect.identification; analysis loads only when identifying) -
def hints_learned(tensors: dict[str, Any], ana: an.TableAnalysis, kind_cls: Any) -> list[Candidate]:
    """A freshly initialised table: zero-mean values of standard deviation std; reproducible only with its seed
    (from the metadata, else the default 0). A trained table is not reproduced by any seed."""
    from ..candidates import Candidate, base_params, round_variants

    if ana.ndim != 2 or not ana.floating:
        return []
    x = ana.x if ana.sample.usable else ana.head
    rms = float(np.sqrt(np.mean(x * x))) if x.size else 0.0
    if not rms > 0:
        return []
    seed = ana.metadata.get("seed", "0")
    seed_i = int(seed) if seed.isdigit() else 0
    peak = float(np.max(np.abs(x))) / rms
    out = []
    from ..tolerance import STD_ROUNDINGS, TRUNCATED_STD, TRUNCATION, TRUNCATION_MARGIN

    for init, trunc, shrink in (("normal", None, 1.0), ("truncated-normal", TRUNCATION, TRUNCATED_STD)):
        # a normal cut at 2 std has a standard deviation of 0.88 std and no value beyond 2 std
        if trunc is not None and peak > trunc / shrink * TRUNCATION_MARGIN:
            continue
        for std in round_variants(rms / shrink, tols=STD_ROUNDINGS, keep=False):
            p = {**base_params(ana), "init": init, "std": std, "seed": seed_i}
            if trunc is not None:
                p["truncation"] = trunc
            out.append(
                Candidate(kind_cls.KIND, p, note=f"zero-mean values, std ~{rms:.3g}, seed {seed_i}", structural=False)
            )
    return out
