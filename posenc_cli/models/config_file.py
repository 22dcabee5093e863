"""Loading a model's config.json safely: what every kind that reads model configs starts from.

:func:`load_config` takes a path, a directory holding config.json, ``"-"`` (stdin) or a dict, and refuses with
a one-line :class:`~posenc_cli.errors.ParameterError` files bigger than :data:`MAX_CONFIG_BYTES` (by size,
before reading), non-UTF-8 bytes, invalid JSON, nesting deeper than :data:`MAX_DEPTH` (checked on the raw text,
so ``json`` never recurses into a RecursionError) and documents that are not an object.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import os
import sys
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import ParameterError, ref

#: config.json files bigger than this are refused before parsing (the largest real ones are ~100 kB).
MAX_CONFIG_BYTES = 4 * 1024 * 1024
#: Deepest nesting of objects/arrays accepted (real configs: 3-4).
MAX_DEPTH = 32


_memo_lock = threading.Lock()
#: (real path, mtime, size) -> the parsed config, while :func:`read_once` is active (in any thread)
_memo: dict[tuple[str, int, int], dict[str, Any]] = {}
_memo_users = 0


@contextlib.contextmanager
def read_once() -> Iterator[None]:
    """Within it, each config file is read from disk and parsed once (an audit asks its config of every step, on
    several threads); each caller gets its own copy. Nested and concurrent uses share it; it is cleared when the
    last one ends."""
    global _memo_users
    with _memo_lock:
        _memo_users += 1
    try:
        yield
    finally:
        with _memo_lock:
            _memo_users -= 1
            if not _memo_users:
                _memo.clear()


def _read_file(path: str) -> bytes:
    """The bytes of a config file (at most :data:`MAX_CONFIG_BYTES` + 1): the one place posenc reads one."""
    with open(path, "rb") as fh:
        return fh.read(MAX_CONFIG_BYTES + 1)


def load_config(source: str | os.PathLike[str] | Mapping[str, Any]) -> dict[str, Any]:
    """A config.json as a dict: a path, a directory holding config.json, ``"-"`` (stdin) or a dict.

    Refuses, with a one-line :class:`ParameterError`: files bigger than :data:`MAX_CONFIG_BYTES` (by size,
    before reading), non-UTF-8 bytes, invalid JSON, nesting deeper than :data:`MAX_DEPTH`, non-object documents.
    """
    if isinstance(source, Mapping):
        data: Any = dict(source)
        _check_depth_obj(data, "config")
        return data
    path = os.fspath(source)
    where = "stdin" if path == "-" else path
    try:
        if path == "-":
            raw = sys.stdin.buffer.read(MAX_CONFIG_BYTES + 1)
        else:
            if os.path.isdir(path):
                path = os.path.join(path, "config.json")
                where = path
            st = os.stat(path)
            size = st.st_size
            if size > MAX_CONFIG_BYTES:
                raise ParameterError(
                    f"{ref('config')} {where}: {size} bytes is far larger than any model config "
                    f"(limit {MAX_CONFIG_BYTES}); pass the model's config.json"
                )
            key = (os.path.realpath(path), st.st_mtime_ns, size)
            with _memo_lock:
                seen = _memo.get(key) if _memo_users else None
            if seen is not None:
                return copy.deepcopy(seen)
            raw = _read_file(path)
    except FileNotFoundError:
        raise ParameterError(f"{ref('config')} {where}: no such file; pass a config.json or its directory") from None
    except IsADirectoryError:
        raise ParameterError(f"{ref('config')} {where}: is a directory without config.json") from None
    except OSError as exc:
        raise ParameterError(f"{ref('config')} {where}: cannot read ({exc.strerror or exc})") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ParameterError(
            f"{ref('config')} {where}: more than {MAX_CONFIG_BYTES} bytes, far larger than any model config; "
            "pass the model's config.json"
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ParameterError(
            f"{ref('config')} {where}: not UTF-8 text (byte {exc.start}); config.json files are UTF-8 JSON"
        ) from None
    data = parse_json(text, where)
    if not isinstance(data, dict):
        raise ParameterError(f"{ref('config')} {where}: expected a JSON object at top level, got {_json_type(data)}")
    if path != "-":
        with _memo_lock:
            if _memo_users:
                _memo[key] = copy.deepcopy(data)
    return data


def parse_json(text: str, where: str = "config") -> Any:
    """``json.loads`` after a depth check on the raw text (so deep nesting never reaches RecursionError)."""
    depth = peak = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > peak:
                peak = depth
                if peak > MAX_DEPTH:
                    raise ParameterError(
                        f"{ref('config')} {where}: JSON nested deeper than {MAX_DEPTH} levels; not a model config"
                    )
        elif ch in "]}":
            depth -= 1
    try:
        return json.loads(text, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise ParameterError(
            f"{ref('config')} {where}: invalid JSON at line {exc.lineno} column {exc.colno} ({exc.msg})"
        ) from None
    except ValueError as exc:  # Python's limit on integer digits (sys.get_int_max_str_digits)
        raise ParameterError(
            f"{ref('config')} {where}: a number far too long for any model config ({_first_line(exc)}); fix the "
            "config.json"
        ) from None
    except RecursionError:  # pragma: no cover - the depth check above comes first
        raise ParameterError(f"{ref('config')} {where}: JSON nested too deeply; not a model config") from None


def _first_line(exc: BaseException) -> str:
    return str(exc).split(";")[0].strip()


def _constant(name: str) -> float:
    # NaN/Infinity are not JSON; Python's json accepts them, so they reach the value checks as non-finite floats
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[name]


def _check_depth_obj(obj: Any, where: str, depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise ParameterError(f"{where}: nested deeper than {MAX_DEPTH} levels; not a model config")
    if isinstance(obj, dict):
        for v in obj.values():
            _check_depth_obj(v, where, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _check_depth_obj(v, where, depth + 1)


def _json_type(v: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(v), type(v).__name__)  # fmt: skip


def weight_map(index: str, error: type[Exception] = ParameterError) -> dict[str, Any]:
    """The ``weight_map`` of a safetensors index (``model.safetensors.index.json``: tensor name -> shard file), or
    ``error`` in one line naming the file when it cannot be read or holds none. Shard names are the caller's to keep
    inside the model directory (the readers follow only their base names)."""
    try:
        with open(index, encoding="utf-8") as fh:
            found = json.load(fh).get("weight_map")
    except (OSError, ValueError, AttributeError) as exc:
        raise error(f"{index}: cannot read ({exc}); fix or remove it") from None
    if not isinstance(found, dict):
        raise error(f"{index}: no weight_map object; it is not a safetensors index")
    return found
