"""Hub model ids (``org/name``, ``org/name@revision``) read from the local Hugging Face cache, and the few small
files ``audit --download`` fetches.

The cache is the one ``huggingface_hub`` writes (``HF_HUB_CACHE``, else ``HF_HOME/hub``, else
``~/.cache/huggingface/hub``)::

    models--ORG--NAME/refs/main                  the commit a branch or tag points at
    models--ORG--NAME/snapshots/COMMIT/FILE      the files of that commit (links into blobs/)

Reading the cache needs nothing extra. ``--download`` needs ``huggingface_hub`` (``pip install
'posenc-cli[hub]'``) and fetches only config.json, the safetensors index, and the position tensors of a model
that keeps them in its weights: the header of their safetensors file and the tensors' own byte ranges (HTTP
range requests), never whole weights. ``HF_HUB_OFFLINE=1`` forbids every download.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable
from typing import Any

from ..errors import InputError, param

#: ``org/name`` or ``org/name@revision`` (a branch, tag or commit)
HUB_ID = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)(?:@(?P<rev>[\w./-]+))?$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
#: the most bytes a safetensors header may have (safetensors' own limit is 100 MB)
MAX_HEADER = 100_000_000


def is_hub_id(text: str) -> bool:
    """``org/name[@rev]`` that is not an existing path."""
    return not os.path.exists(text) and HUB_ID.match(text) is not None


def split(text: str) -> tuple[str, str | None]:
    m = HUB_ID.match(text)
    if m is None:
        raise InputError(f"{text}: not a Hub model id; write org/name or org/name@revision")
    return m.group("repo"), m.group("rev")


def cache_dir() -> str:
    """Where huggingface_hub keeps models, from the same variables it reads."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            return os.path.expanduser(os.environ[var])
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache"), "huggingface"
    )
    return os.path.join(os.path.expanduser(home), "hub")


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")


def cached(repo: str, rev: str | None) -> str | None:
    """The snapshot directory of ``repo`` at ``rev`` (default: main) in the cache, or None."""
    base = os.path.join(cache_dir(), "models--" + repo.replace("/", "--"))
    ref = rev or "main"
    commit = ref if _COMMIT.match(ref) else None
    if commit is None:
        try:
            with open(os.path.join(base, "refs", *ref.split("/")), encoding="utf-8") as fh:
                commit = fh.read().strip()
        except OSError:
            return None
    snap = os.path.join(base, "snapshots", commit)
    if not _COMMIT.match(commit) or not os.path.isfile(os.path.join(snap, "config.json")):
        return None
    return snap


def resolve(text: str, *, download: bool = False) -> str:
    """The local directory of the Hub id ``text``: its cached snapshot, or (``download``) a snapshot holding
    config.json and the safetensors index fetched now. Refused in one line when not cached and no download is
    allowed."""
    repo, rev = split(text)
    snap = cached(repo, rev)
    if snap is not None:
        return snap
    if not download or offline():
        how = (
            f"unset HF_HUB_OFFLINE and pass {param('download')}"
            if offline()
            else f"pass {param('download')} to fetch its config and position tensors (needs: pip install 'posenc-cli[hub]')"
        )
        raise InputError(f"{text} is not in the Hugging Face cache ({cache_dir()}); {how}")
    hf = _hub()
    try:
        config = hf.hf_hub_download(repo, "config.json", revision=rev)
    except Exception as exc:  # huggingface_hub's errors: no such repo, revision or file, no network
        raise InputError(f"{text}: cannot download config.json ({type(exc).__name__}: {_line(exc)})") from None
    with contextlib.suppress(Exception):  # a model in one file has no index
        hf.hf_hub_download(repo, "model.safetensors.index.json", revision=rev)
    return os.path.dirname(config)


def _hub():
    try:
        import huggingface_hub
    except ImportError:
        raise InputError(
            f"{param('download')} needs huggingface_hub; install it with: pip install 'posenc-cli[hub]'"
        ) from None
    return huggingface_hub


def _line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else ""


# ----- the position tensors only, by HTTP range requests ------------------------------------------------------
Fetch = Callable[[str, int, int], bytes]


def range_fetcher(repo: str, rev: str | None) -> Callable[[str], Fetch]:
    """``fetcher(filename)(url_unused, start, stop)``: bytes [start, stop) of a file of the repo over HTTP."""
    hf = _hub()
    headers = hf.utils.build_hf_headers()

    def for_file(filename: str) -> Fetch:
        url = hf.hf_hub_url(repo, filename, revision=rev)

        def get(_name: str, start: int, stop: int) -> bytes:
            import urllib.request

            req = urllib.request.Request(url, headers={**headers, "Range": f"bytes={start}-{stop - 1}"})
            with urllib.request.urlopen(req, timeout=60) as resp:
                data = resp.read(stop - start + 1)
            if len(data) != stop - start:
                raise InputError(f"{repo}/{filename}: asked for {stop - start} bytes, got {len(data)}")
            return bytes(data)

        return get

    return for_file


def fetch_tensors(files: dict[str, Fetch], wanted: Callable[[str], bool], dest: str) -> list[str]:
    """Write the tensors whose names ``wanted`` accepts, read by ranges from ``files`` (filename -> fetch), into
    the safetensors file ``dest``; the names written. Only headers and those tensors' bytes are read."""
    import numpy as np

    tensors: dict[str, np.ndarray] = {}
    for filename, get in files.items():
        size = int.from_bytes(get(filename, 0, 8), "little")
        if not 2 <= size <= MAX_HEADER:
            raise InputError(f"{filename}: a safetensors header of {size} bytes; not a safetensors file")
        try:
            header = json.loads(get(filename, 8, 8 + size))
        except ValueError as exc:
            raise InputError(f"{filename}: its safetensors header is not JSON ({exc})") from None
        for name, entry in header.items():
            if name == "__metadata__" or not wanted(name):
                continue
            a, b = (int(x) for x in entry["data_offsets"])
            raw = get(filename, 8 + size + a, 8 + size + b)
            tensors[name] = _decode(raw, str(entry["dtype"]), [int(s) for s in entry["shape"]], name)
    if tensors:
        from ..formats import ArrayTensor, write_table

        lazy: dict[str, Any] = {n: ArrayTensor(n, a) for n, a in tensors.items()}
        write_table(dest, lazy, {"source": "posenc audit --download: position tensors only"}, "safetensors", force=True)
    return list(tensors)


def _decode(raw: bytes, dtype: str, shape: list[int], name: str):
    import numpy as np

    from ..encodings.base import resolve_dtype

    names = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16"}
    if dtype not in names:
        raise InputError(f"tensor {name} has dtype {dtype}; a position table is floating")
    arr = np.frombuffer(raw, dtype=resolve_dtype(names[dtype]))
    if arr.size != int(np.prod(shape)):
        raise InputError(f"tensor {name}: {arr.size} values for shape {shape}")
    return arr.reshape(shape)
