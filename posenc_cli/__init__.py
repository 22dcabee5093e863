"""posenc: positional-encoding tables for transformers (generate, check, compare, export).

The public Python API, loaded on first use (PEP 562), so that ``posenc --help`` and shell completion pay
nothing for it::

    import posenc_cli as pe

    enc = pe.generate("rope", length=4096, dim=128, preset="llama3.1")   # or a spec: "rope:preset=llama3.1"
    cos = enc.array("cos")                                               # NumPy arrays, any row range too
    pe.write("rope.safetensors", enc)                                    # atomic, with metadata
    report = pe.check("rope.safetensors")                                # every property, typed results
    diff = pe.compare("rope.safetensors", "rope:preset=llama3.1")        # metrics and a verdict
    enc = pe.from_config("config.json", length=8192)                     # the model's own tables

Parameter names are the same in Python, ``-p key=value``, specs and ``--json``. Every error is a
:class:`PosencError` (``ParameterError``, ``InputError``, ``OutputError``) with a one-line message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"

#: public name -> module that defines it
_EXPORTS = {
    "generate": "api",
    "from_config": "api",
    "load_config": "api",
    "read": "api",
    "write": "api",
    "open_table": "api",
    "check": "api",
    "check_all": "api",
    "from_config_layers": "api",
    "compare": "api",
    "identify": "api",
    "kinds": "api",
    "audit": "api",
    "AuditReport": "auditing.report",
    "check_sources": "api",
    "compare_sources": "api",
    "check_gguf": "api",
    "check_onnx": "api",
    "layer_types": "api",
    "describe": "api",
    "stored_tables": "api",
    "relative_bias": "api",
    "SourceOptions": "scopes",
    "Verdicts": "reports",
    "Description": "reports",
    "CheckReport": "reports",
    "Written": "api",
    "CheckResult": "checks.base",
    "CompareResult": "inspect.metrics",
    "Comparison": "reports",
    "TensorComparison": "reports",
    "Identification": "inspect.identification",
    "Candidate": "inspect.candidates",
    "Encoding": "encodings.base",
    "Source": "sources",
    "ExitCode": "errors",
    "PosencError": "errors",
    "ParameterError": "errors",
    "InputError": "errors",
    "OutputError": "errors",
    "UnknownTensorError": "errors",
}

__all__ = [
    "__version__",
    "generate",
    "from_config",
    "load_config",
    "read",
    "write",
    "open_table",
    "check",
    "check_all",
    "from_config_layers",
    "compare",
    "identify",
    "kinds",
    "audit",
    "AuditReport",
    "check_sources",
    "compare_sources",
    "check_gguf",
    "check_onnx",
    "layer_types",
    "describe",
    "stored_tables",
    "relative_bias",
    "SourceOptions",
    "Verdicts",
    "Description",
    "CheckReport",
    "Written",
    "CheckResult",
    "CompareResult",
    "Comparison",
    "TensorComparison",
    "Identification",
    "Candidate",
    "Encoding",
    "Source",
    "ExitCode",
    "PosencError",
    "ParameterError",
    "InputError",
    "OutputError",
    "UnknownTensorError",
]

if TYPE_CHECKING:
    from .api import (
        Written,
        audit,
        check,
        check_all,
        compare,
        from_config,
        from_config_layers,
        generate,
        identify,
        kinds,
        load_config,
        open_table,
        read,
        write,
    )
    from .auditing.report import AuditReport
    from .checks.base import CheckResult
    from .encodings.base import Encoding
    from .errors import ExitCode, InputError, OutputError, ParameterError, PosencError, UnknownTensorError
    from .inspect.candidates import Candidate
    from .inspect.identification import Identification
    from .inspect.metrics import CompareResult
    from .reports import CheckReport, Comparison, TensorComparison
    from .sources import Source


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'posenc_cli' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
