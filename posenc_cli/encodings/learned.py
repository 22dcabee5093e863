r"""Learned absolute position embeddings as models initialise them, reproducibly and row by row.

A learned table (BERT, GPT-2, ViT ``pos_embed``) starts as random noise; this kind writes that starting
point so that checks can show what an untrained table does (nothing positional) and so experiments can
share one exact initial table.

.. math::

    PE(t, k) = \sigma\, z_{t,k}, \qquad z_{t,k} \sim \mathcal{N}(0, 1)
    \quad\text{or}\quad z_{t,k} \sim \mathcal{N}(0, 1)\ \text{truncated to}\ [-a, a]

with :math:`\sigma` = ``std`` (0.02 default: BERT's and GPT-2's ``initializer_range``) and :math:`a` =
``truncation`` (2 standard deviations default).

``init=normal`` is ``nn.init.normal_(std=0.02)`` (HF BERT/GPT-2 ``_init_weights`` for position
embeddings). ``init=truncated-normal`` redraws every value outside :math:`\pm a\,\sigma`, the
distribution of TensorFlow's ``truncated_normal_initializer(stddev)`` (original BERT) and of timm's
``trunc_normal_tf_`` (bounds in units of std). Beware: timm's plain ``trunc_normal_(pos_embed, std=.02)``
as used by ViT/DeiT takes *absolute* bounds ``a=-2, b=2``, i.e. :math:`\pm 100\sigma`, so it does not
truncate in practice; ``init=normal`` or ``truncation=100`` reproduces that distribution.

Random stream (exact, so any machine and any row split give the same table)
---------------------------------------------------------------------------
``key = numpy.random.SeedSequence(seed).generate_state(2, numpy.uint64)`` (a 128-bit Philox key). Row
:math:`t` (0-based row index, independent of the other rows) is drawn from its own counter range::

    g = numpy.random.Generator(numpy.random.Philox(key=key, counter=t << 128))  # counter words [0, 0, t, 0]
    z = g.standard_normal(dim)                                                   # float64
    # truncated-normal: while any |z| > truncation: z[those] = g.standard_normal(count), in column order
    pe[t] = std * z   # then rounded once to the output dtype

Rows never share counters (each uses at most 2**128 counter values), so ``rows(a, b)`` equals
``array()[a:b]`` for any block split. Philox's raw stream is fixed by NumPy's compatibility policy, but
``Generator.standard_normal`` may change between NumPy feature releases; the tests pin golden values to
catch that.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ..errors import ParameterError, ref
from .base import Encoding, TensorSpec, param

INITS = ("normal", "truncated-normal")
#: Philox's counter is four 64-bit words; rows live in word 2, so each row owns 2**128 counter values.
MAX_ROWS = 2**63


@dataclass(frozen=True)
class Learned(Encoding):
    """A freshly initialised learned position-embedding table ``pe`` (len x dim)."""

    KIND = "learned"
    PROPERTIES = {
        "finite": True,
        "matches-spec": True,
        "bounded": False,
        "unique": True,
        "constant-norm": False,
        "equidistant": False,
        "offset-invariant": False,
        "shift-linear": False,
        "symmetric": False,
        "decay": False,
        "precision": False,
    }
    VIEWS = ("heatmap", "dot", "compare")
    SUMMARY = "learned absolute embeddings at initialisation: N(0, std^2) or truncated, reproducible by row"
    REFERENCES = (
        "normal: huggingface/transformers models/bert/modeling_bert.py _init_weights (normal_, std=initializer_range=0.02)",
        "normal: huggingface/transformers models/gpt2/modeling_gpt2.py _init_weights (wpe ~ N(0, 0.02^2))",
        "truncated-normal: google-research/bert modeling.py create_initializer (truncated_normal_initializer, 2 std)",
        "truncated-normal: huggingface/pytorch-image-models timm/layers/weight_init.py trunc_normal_tf_ (bounds x std)",
    )
    PRESETS = {
        "bert": {"init": "normal", "std": 0.02},
        "bert-tf": {"init": "truncated-normal", "std": 0.02, "truncation": 2.0},
        "gpt2": {"init": "normal", "std": 0.02},
        "vit": {"init": "truncated-normal", "std": 0.02, "truncation": 100.0},
    }
    PRESET_DOCS = {
        "bert": "HF BertEmbeddings.position_embeddings: normal_(mean=0, std=0.02)",
        "bert-tf": "original TF BERT: truncated_normal_initializer(stddev=0.02), cut at 2 std",
        "gpt2": "HF GPT2Model.wpe: normal_(mean=0, std=0.02)",
        "vit": "timm ViT trunc_normal_(pos_embed, std=.02): absolute bounds +-2 = +-100 std",
    }

    init: str = param(
        "normal", "distribution: normal or truncated-normal (redraw beyond truncation*std)", choices=INITS
    )
    std: float = param(0.02, "standard deviation (BERT/GPT-2 initializer_range)", low=0.0, low_open=True)
    truncation: float = param(
        2.0, "truncated-normal: bound in units of std (TF/BERT and trunc_normal_tf_: 2)", low=0.0, low_open=True
    )
    seed: int = param(0, "random seed (SeedSequence entropy for the Philox key)", low=0)

    #: the structure reader of posenc_cli/inspect/hints that proposes this kind's parameters from a table (data)
    IDENTIFY = "learned:hints_learned"

    def validate(self) -> None:
        if self.length > MAX_ROWS:
            raise ParameterError(f"learned supports at most {MAX_ROWS} rows, got {ref('length')} {self.length}")
        if self.init == "truncated-normal" and self.truncation < 0.1:
            # below ~0.1 std almost every draw is rejected; refuse rather than spin
            raise ParameterError(f"truncation={self.truncation} rejects nearly every draw; pass truncation=0.1 or more")

    @cached_property
    def _key(self) -> np.ndarray:
        return np.random.SeedSequence(self.seed).generate_state(2, np.uint64)

    def tensor_specs(self) -> dict[str, TensorSpec]:
        return {"pe": TensorSpec("pe", (self.length, self.dim), self.out_dtype)}

    def fill(self, name: str, start: int, stop: int, out: np.ndarray) -> None:
        self._draw(range(start, stop), out)

    def _take(self, name: str, idx: np.ndarray, out: np.ndarray) -> None:
        # every row is its own stream: draw the rows asked for, none of the rows between them
        rows, inverse = np.unique(idx, return_inverse=True)
        drawn = np.empty((len(rows), self.dim), dtype=out.dtype)
        self._draw(rows.tolist(), drawn)
        out[...] = drawn[inverse.reshape(-1)]

    def _draw(self, rows: range | list[int], out: np.ndarray) -> None:
        """Row ``rows[i]`` of the table into ``out[i]``."""
        # One bit generator per call (threads never share one); re-keying it per row through ``state`` is
        # the same stream as Philox(key=key, counter=row << 128) at a third of the construction cost.
        bitgen = np.random.Philox(key=self._key)
        gen = np.random.Generator(bitgen)
        counter = np.zeros(4, dtype=np.uint64)  # the setter copies it: one array re-used for every row
        state: dict[str, Any] = {
            "bit_generator": "Philox",
            "state": {"counter": counter, "key": self._key},
            "buffer": np.zeros(4, dtype=np.uint64),
            "buffer_pos": 4,
            "has_uint32": 0,
            "uinteger": 0,
        }
        truncated = self.init == "truncated-normal"
        bound = self.truncation
        for i, row in enumerate(rows):
            counter[2] = row
            bitgen.state = state  # type: ignore[assignment]  # numpy's stub wants a TypedDict
            z = gen.standard_normal(self.dim)
            if truncated:
                bad = np.flatnonzero(np.abs(z) > bound)
                while bad.size:
                    z[bad] = gen.standard_normal(bad.size)
                    bad = bad[np.abs(z[bad]) > bound]
            out[i] = self.std * z
