"""posenc: positional-encoding tables for transformers (generate, check, compare, export)."""

__version__ = "0.1.0"
