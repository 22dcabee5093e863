"""The inspection house: what a table is, and why two tables differ.

Modules, in the one direction their imports run (each imports only those after it, plus ``encodings`` and
``errors``):

- :mod:`.diagnose` - why two tables differ: a registry of explanations (:data:`.diagnose.registry.EXPLANATIONS`),
  each entry carrying the functions that say whether it applies, propose its models and word its explanation,
  searched by a short driver; the explanations live in one module per thing they explain (:mod:`.diagnose.columns`,
  :mod:`.diagnose.offsets`, :mod:`.diagnose.frequencies`, :mod:`.diagnose.angles`, :mod:`.diagnose.heads`).
- :mod:`.identification` - which kind, preset and parameters reproduce a table (verifies and names candidates).
- :mod:`.hints` - each kind's structure reader, proposing candidates from a table's analysis.
- :mod:`.candidates` - a proposed reading (:class:`.candidates.Candidate`) and the helpers the readers share.
- :mod:`.metrics` - compare's numbers (max |difference|, ulps, cosine) and verdict.
- :mod:`.analysis` - table structure: column frequencies and phases, pairs, layouts, spectra, Toeplitz structure.
- :mod:`.tolerance` - every threshold, as a named constant with the function that applies it.

Nothing is imported here, so ``import posenc_cli.inspect.tolerance`` does not pay for the analysis.
"""
