"""Benchmark posenc against the issue's targets, side by side in one run.

Run from the repository root: ``.venv/bin/python tests/benchmarks/bench.py [--quick] [--reps N]``.
Contenders of a row are timed in interleaved repetitions (A B C, A B C, ...) and compared by medians, so
load from other processes hits them alike. Whole-process rows run the venv's ``posenc`` console script;
peak memory is the child's own ``ru_maxrss`` (from ``os.wait4``). Big files go to a temporary directory
that is removed at the end. ``--quick`` uses smaller sizes for a smoke run (ratios are then indicative).
Not collected by pytest (no ``test_`` prefix).
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from posenc_cli.encodings import make_encoding  # noqa: E402 (after the path insert)

ROWS: list[tuple[str, str, str, str]] = []  # what, measured, target, verdict


def report(what: str, measured: str, target: str, ok: bool | None) -> None:
    verdict = "n/a" if ok is None else ("PASS" if ok else "MISS")
    ROWS.append((what, measured, target, verdict))
    print(f"  -> {what}: {measured} (target {target}) {verdict}", flush=True)


# ----- contenders ---------------------------------------------------------------------------------
def tf_tutorial(length: int, depth: int) -> np.ndarray:
    """The seed's code, verbatim from the TensorFlow tutorial, plus the float32 cast."""
    depth = depth / 2
    positions = np.arange(length)[:, np.newaxis]  # (seq, 1)
    depths = np.arange(depth)[np.newaxis, :] / depth  # (1, depth)
    angle_rates = 1 / (10000**depths)  # (1, depth)
    angle_rads = positions * angle_rates  # (pos, depth)
    pos_encoding = np.concatenate([np.sin(angle_rads), np.cos(angle_rads)], axis=-1)
    return pos_encoding.astype(np.float32)


def torch_tutorial(torch, length: int, d: int):
    """The PyTorch tutorial's PositionalEncoding table."""
    position = torch.arange(length).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
    pe = torch.zeros(length, d)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


def posenc_array(length: int, dim: int) -> np.ndarray:
    return make_encoding("sinusoidal", {"length": length, "dim": dim}).array()


def kernels(length: int, dim: int) -> dict[str, Callable[[], np.ndarray]]:
    """Every generation kernel the issue names, as a user calls it: the table of ``length x dim`` float32
    (grids of as many cells), built from its parameters and filled on every core."""
    side = math.isqrt(length // 2)
    grid2 = f"{side}x{length // side}"  # 256x512 for 131072 rows
    grid3 = f"{length // 4096}x64x64" if length % 4096 == 0 else f"1x{side}x{length // side}"
    yarn = {"scaling": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}
    specs: dict[str, tuple[str, dict[str, object], str | None]] = {
        "sinusoidal interleaved": ("sinusoidal", {}, None),
        "sinusoidal split (tf-tutorial)": ("sinusoidal", {"preset": "tf-tutorial"}, None),
        "sinusoidal split-cos-first (musicgen)": ("sinusoidal", {"preset": "musicgen"}, None),
        "rope cos, half": ("rope", {"layout": "half"}, "cos"),
        "rope sin, half, llama3.1 scaling": ("rope", {"preset": "llama3.1"}, "sin"),
        "rope cos, interleaved, yarn scaling": ("rope", {"layout": "interleaved", **yarn}, "cos"),
        "rope sin, interleaved, linear scaling": (
            "rope",
            {"layout": "interleaved", "scaling": "linear", "factor": 2.0},
            "sin",
        ),
        f"sinusoidal-2d grid {grid2} (mae)": ("sinusoidal-2d", {"grid": grid2}, None),
        f"sinusoidal-3d grid {grid3}": ("sinusoidal-3d", {"grid": grid3}, None),
    }
    out = {}
    for label, (kind, params, tensor) in specs.items():
        size = {} if kind.startswith("sinusoidal-") else {"length": length}
        out[label] = lambda kind=kind, params=params, tensor=tensor, size=size: make_encoding(
            kind, {**size, "dim": dim, **params}
        ).array(tensor)
    return out


# ----- timing helpers ------------------------------------------------------------------------------
def interleaved(contenders: dict[str, Callable[[], object]], reps: int, with_min: bool = False) -> Any:
    """Median wall time of each contender over ``reps`` interleaved rounds (one warm-up round first); with
    ``with_min``, also the minimum (the round least disturbed by other work on a shared machine)."""
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for rep in range(reps + 1):
        for name, fn in contenders.items():
            t0 = time.perf_counter()
            result = fn()
            dt = time.perf_counter() - t0
            del result
            if rep:
                times[name].append(dt)
    med = {k: statistics.median(v) for k, v in times.items()}
    low = {k: min(v) for k, v in times.items()}
    print("  " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in med.items()), flush=True)
    return (med, low) if with_min else med


#: Runs one command and reports its wall time and its own peak RSS. Why a separate small process: on Linux
#: a child's ru_maxrss starts from the high-water RSS of the process it was forked from (kept across exec),
#: so children of this benchmark (hundreds of MiB after the in-memory row) would all report that.
_RUNNER = """
import json, os, subprocess, sys, time
t0 = time.perf_counter()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
err = p.stderr.read()
_, status, usage = os.wait4(p.pid, 0)
dt = time.perf_counter() - t0
print(json.dumps({"wall": dt, "maxrss": usage.ru_maxrss * 1024, "rc": os.waitstatus_to_exitcode(status)}))
sys.stderr.write(err.decode(errors="replace")[-2000:])
"""


def run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, int]:
    """Run ``cmd`` (stdout discarded); (wall seconds, the child's own peak RSS in bytes). Raises on failure."""
    import json

    # Children may cache bytecode like any installed package (numpy's is compiled at install; an editable
    # posenc would otherwise recompile every module at every start under PYTHONDONTWRITEBYTECODE=1).
    full_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER, *cmd], capture_output=True, env=full_env, text=True, check=False
    )
    if proc.returncode:
        raise RuntimeError(f"runner failed: {proc.stderr[-2000:]}")
    res = json.loads(proc.stdout)
    if res["rc"] not in (0, 1):  # check exits 1 when a property fails: still a measurement
        raise RuntimeError(f"{' '.join(cmd)} exited {res['rc']}: {proc.stderr}")
    return res["wall"], res["maxrss"]


def interleaved_runs(contenders: dict[str, Callable[[], tuple[float, int]]], reps: int) -> dict[str, tuple[float, int]]:
    """Median wall time and max peak RSS of whole processes over interleaved rounds (plus a warm-up)."""
    times: dict[str, list[float]] = {k: [] for k in contenders}
    rss: dict[str, int] = {k: 0 for k in contenders}
    for rep in range(reps + 1):
        for name, fn in contenders.items():
            dt, peak = fn()
            if rep:
                times[name].append(dt)
                rss[name] = max(rss[name], peak)
    med = {k: (statistics.median(v), rss[k]) for k, v in times.items()}
    print("  " + ", ".join(f"{k} {t * 1e3:.0f} ms / {r / 2**20:.0f} MiB" for k, (t, r) in med.items()), flush=True)
    return med


def posenc_cmd() -> list[str]:
    script = Path(sys.executable).parent / "posenc"
    return [str(script)] if script.exists() else [sys.executable, "-m", "posenc_cli"]


# ----- rows ----------------------------------------------------------------------------------------
def bench_in_memory(length: int, dim: int, reps: int) -> None:
    print(f"[{length} x {dim} float32 tables in memory: every kernel, np.ones, the seed code]", flush=True)
    contenders: dict[str, Callable[[], object]] = {
        "tf-seed": lambda: tf_tutorial(length, dim),
        "np.ones": lambda: np.ones((length, dim), dtype=np.float32),
        **kernels(length, dim),
    }
    try:
        import torch

        torch.set_num_threads(2)
        contenders["torch-2thr"] = lambda: torch_tutorial(torch, length, dim)
    except ImportError:
        torch = None
    med, low = interleaved(contenders, reps, with_min=True)
    for label in kernels(length, dim):
        what = f"{length} x {dim} float32 {label}"
        r_ones, r_ones_min = med[label] / med["np.ones"], low[label] / low["np.ones"]
        report(what, f"{r_ones:.2f}x the time of np.ones (min {r_ones_min:.2f}x)", "<= 3x", r_ones <= 3)
        r_seed, r_seed_min = med["tf-seed"] / med[label], low["tf-seed"] / low[label]
        report(what, f"{r_seed:.1f}x faster than the seed TF code (min {r_seed_min:.1f}x)", ">= 20x", r_seed >= 20)
    what = f"{length} x {dim} float32 sinusoidal, in memory"
    if torch is None:
        report(what, "skipped: torch not installed", "faster than the 2-thread PyTorch formula", None)
    else:
        r = med["torch-2thr"] / med["sinusoidal interleaved"]
        report(what, f"{r:.2f}x faster than the 2-thread PyTorch formula", "> 1x", r > 1)


def bench_generate_big(tmp: Path, length: int, dim: int, reps: int) -> None:
    what = f"posenc generate --len {length} --dim {dim} -o big.npy, whole process"
    print(f"[{what}]", flush=True)
    ours, base = tmp / "big.npy", tmp / "base.npy"
    save = f"import numpy as np; a = np.ones(({length}, {dim}), dtype=np.float32); np.save({str(base)!r}, a)"
    # posenc writes atomically and durably (fsync of the file and its directory): the like-for-like baseline
    durable = (
        f"import os, numpy as np; a = np.ones(({length}, {dim}), dtype=np.float32)\n"
        f"with open({str(base)!r}, 'wb') as f:\n    np.save(f, a); f.flush(); os.fsync(f.fileno())"
    )
    med = interleaved_runs(
        {
            "posenc": lambda: run(
                [*posenc_cmd(), "generate", "--len", str(length), "--dim", str(dim), "-o", str(ours), "--force", "-q"]
            ),
            "np.save": lambda: run([sys.executable, "-c", save]),
            "durable np.save": lambda: run([sys.executable, "-c", durable]),
        },
        reps,
    )
    r = med["posenc"][0] / med["np.save"][0]
    report(what, f"{r:.2f}x a numpy np.save script", "<= 2x", r <= 2)
    r = med["posenc"][0] / med["durable np.save"][0]
    report(what, f"{r:.2f}x a durable np.save script (fsync)", "<= 2x", r <= 2)
    ours.unlink(missing_ok=True)
    base.unlink(missing_ok=True)


#: Rounds of the start-up row (whole processes of about 0.1 s each).
STARTUP_REPS = 25


def bench_startup(reps: int) -> None:
    print("[startup: posenc --help / completion / small generate]", flush=True)
    # An installed posenc has its bytecode compiled (pip compiles on install); an editable checkout run with
    # PYTHONDONTWRITEBYTECODE=1 would recompile every edited module on every call and measure the compiler.
    import compileall

    import posenc_cli

    compileall.compile_dir(Path(posenc_cli.__file__).parent, quiet=1)
    with tempfile.TemporaryDirectory(prefix="posenc-bench-") as d:
        small = Path(d) / "pe.npy"
        med = interleaved_runs(
            {
                "import numpy": lambda: run([sys.executable, "-c", "import numpy"]),
                "--help": lambda: run([*posenc_cmd(), "--help"]),
                "completion": lambda: run(
                    posenc_cmd(),
                    env={"_POSENC_COMPLETE": "complete_bash", "COMP_WORDS": "posenc gen", "COMP_CWORD": "1"},
                ),
                # with its normal "wrote ..." message, as a user runs it
                "generate 512x128": lambda: run(
                    [*posenc_cmd(), "generate", "--len", "512", "--dim", "128", "-o", str(small), "--force"]
                ),
            },
            reps,
        )
    base = med["import numpy"][0]
    for name, label in (("--help", "posenc --help"), ("completion", "posenc shell completion")):
        r = med[name][0] / base
        report(f"{label}, whole process", f"{r:.2f}x python -c 'import numpy'", "<= 1.0x", r <= 1.0)
    r = med["generate 512x128"][0] / base
    report(
        "posenc generate --len 512 --dim 128 -o pe.npy, whole process",
        f"{r:.2f}x python -c 'import numpy'",
        "<= 1.5x",
        r <= 1.5,
    )


def check_against_script(what: str, path: Path, reps: int) -> dict[str, tuple[float, int]]:
    """``posenc check PATH -q`` side by side with a NumPy script that loads the file and measures its row
    distances (what a user would write); reports the time ratio (target 4x) and returns both medians."""
    script = (
        f"import numpy as np; a = np.load({str(path)!r}); "
        "d = np.sqrt(np.einsum('ij,ij->i', np.diff(a, axis=0), np.diff(a, axis=0))); print(d.min(), d.max())"
    )
    med = interleaved_runs(
        {
            "posenc check": lambda: run([*posenc_cmd(), "check", str(path), "-q"]),
            "numpy script": lambda: run([sys.executable, "-c", script]),
        },
        reps,
    )
    r = med["posenc check"][0] / med["numpy script"][0]
    report(what, f"{r:.2f}x a load + row-distance script", "<= 4x", r <= 4)
    return med


def bench_check(tmp: Path, length: int, dim: int, reps: int) -> None:
    what = f"posenc check of a {length} x {dim} float32 file"
    print(f"[{what}]", flush=True)
    path = tmp / "check.npy"
    run([*posenc_cmd(), "generate", "--len", str(length), "--dim", str(dim), "-o", str(path), "--force", "-q"])
    size = path.stat().st_size
    med = check_against_script(what, path, reps)
    peak = med["posenc check"][1]
    report(
        what,
        f"peak RSS {peak / 2**20:.0f} MiB = {peak / size:.2f}x the file ({size / 2**20:.0f} MiB)",
        "<= 2x file size",
        peak <= 2 * size,
    )
    path.unlink(missing_ok=True)


def bench_export(tmp: Path, length: int, dim: int) -> None:
    gib = length * dim * 4 / 2**30
    for suffix in ("npy", "safetensors"):
        what = f"export of a {length} x {dim} float32 table ({gib:.3g} GiB) to .{suffix}"
        print(f"[{what}]", flush=True)
        path = tmp / f"export.{suffix}"
        dt, peak = run(
            [
                *posenc_cmd(),
                "export",
                "sinusoidal",
                "--len",
                str(length),
                "--dim",
                str(dim),
                "-o",
                str(path),
                "--force",
                "-q",
            ]
        )
        size = path.stat().st_size
        path.unlink(missing_ok=True)
        print(f"  {dt:.1f} s, {size / 2**30:.2f} GiB written, peak RSS {peak / 2**20:.0f} MiB", flush=True)
        report(what, f"peak RSS {peak / 2**20:.0f} MiB", "< 64 MiB", peak < 64 * 2**20)


def bench_accuracy(quick: bool) -> None:
    print("[accuracy: sampled 200-bit mpmath comparison at positions up to 2**24]", flush=True)
    import mpmath as mp

    from tests.test_accuracy import column_map, exact_freqs, near_zeros, ulp_error

    mp.mp.prec = 200
    rng = np.random.default_rng(0)
    dim, length = 1024, 2048
    cols = column_map(dim, "interleaved", "paper")
    ws = exact_freqs(dim, dim // 2, "paper", 10000.0)
    starts = [0, 1_000_000 - length // 2, 2**24 - length] + [
        int(s) for s in rng.integers(0, 2**24 - length, 2 if quick else 6)
    ]
    per_window = 300 if quick else 1500
    adversarial = near_zeros(ws, 6, 1000, 2**24)
    for dtype in ("float32", "float64"):
        worst, n = 0.0, 0
        jobs = [(s, rng.integers(0, length, per_window), rng.integers(0, dim, per_window)) for s in starts]
        jobs += [(t - 700, np.array([700]), np.array([2 * k + (w == "cos")])) for t, k, w in adversarial]
        for start, rows, cs in jobs:
            table = make_encoding("sinusoidal", {"length": length, "dim": dim, "offset": start, "dtype": dtype}).array()
            for r, c in zip(rows, cs):
                k, which = cols[c]
                t = start + int(r)
                exact = mp.sin(t * ws[k]) if which == "sin" else mp.cos(t * ws[k])
                worst = max(worst, ulp_error(table[r, c], exact, np.dtype(dtype)))
                n += 1
        report(
            f"{dtype} accuracy at positions up to 2^24", f"max {worst:.3f} ulp over {n} samples", "<= 2 ulp", worst <= 2
        )


def hf_cos(length: int, dim: int, base: float = 500000.0) -> np.ndarray:
    """A cos cache as transformers computes it, in float32 (tests/formula_tables.py, plain NumPy)."""
    from tests.formula_tables import hf_cos_sin, hf_inv_freq

    return hf_cos_sin(hf_inv_freq(dim, base), length)[0]


def bench_inspect(tmp: Path, length: int, dim: int, reps: int) -> None:
    """identify, and compare with its diagnosis, of a float32-formula table against compare without diagnosis."""
    import posenc_cli as pe

    what = f"identify / diagnosis of a {length} x {dim} HF-style float32 cache"
    print(f"[{what}]", flush=True)
    a_path, b_path = tmp / "hf_cos.npy", tmp / "exact_interleaved.npy"
    np.save(a_path, hf_cos(length, dim))
    np.save(
        b_path,
        make_encoding("rope", {"length": length, "dim": dim, "base": 500000.0, "layout": "interleaved"}).array("cos"),
    )
    med = interleaved(
        {
            "compare": lambda: pe.compare(str(a_path), str(b_path), explain=False),
            "compare + diagnosis": lambda: pe.compare(str(a_path), str(b_path)),
            "identify": lambda: pe.identify(str(a_path)),
        },
        reps,
    )
    for name in ("identify", "compare + diagnosis"):
        r = med[name] / med["compare"]
        report(f"{name} of a {length} x {dim} HF-style cache", f"{r:.2f}x compare without diagnosis", "<= 3x", r <= 3)
    a_path.unlink(missing_ok=True)
    b_path.unlink(missing_ok=True)


def bench_check_formula(tmp: Path, length: int, dim: int, reps: int) -> None:
    """check of a metadata-free .npy (identified first, judged within the float32 formula's error)."""
    what = f"posenc check of a metadata-free {length} x {dim} HF-style .npy"
    print(f"[{what}]", flush=True)
    path = tmp / "hf_check.npy"
    np.save(path, hf_cos(length, dim))
    check_against_script(what, path, reps)
    path.unlink(missing_ok=True)


def audit_model_dir(tmp: Path, length: int, weights_gib: int) -> tuple[Path, Path]:
    """A model directory as users hold one: config.json (Llama 3.1's rope), a sparse multi-GB model.safetensors,
    a GGUF conversion with a sparse multi-GB token_embd tensor beside rope_freqs (llama.cpp's real conversion's
    keys), and an ONNX export whose rotary caches (``length`` rows) live in external data. Returns the directory
    and the config's largest table written by ``posenc generate`` (what ``posenc check`` is timed on)."""
    import json

    import gguf

    from tests.onnx_models import rotary_model, save

    model = tmp / "audit-model"
    (model / "onnx").mkdir(parents=True, exist_ok=True)
    config = json.loads((REPO / "tests/data/llamacpp/llama31.config.json").read_text())
    config["max_position_embeddings"] = length
    (model / "config.json").write_text(json.dumps(config))
    big = weights_gib * 2**30
    header = json.dumps({"model.embed_tokens.weight": {"dtype": "F32", "shape": [big // 1024, 256],
                                                       "data_offsets": [0, big]}}).encode()  # fmt: skip
    with open(model / "model.safetensors", "wb") as fh:  # the weights are a hole: sparse on disk
        fh.write(len(header).to_bytes(8, "little") + header)
        fh.truncate(8 + len(header) + big)
    # the GGUF: the real conversion's keys and rope_freqs, and a token_embd tensor of weights_gib GiB (a hole)
    src = gguf.GGUFReader(str(REPO / "tests/data/llamacpp/llama31.gguf"))
    w = gguf.GGUFWriter(str(model / "model.gguf"), "llama")
    for key, f in src.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        value = length if key == "llama.context_length" else f.contents()
        if f.types[0] == gguf.GGUFValueType.ARRAY:
            w.add_key_value(key, value, f.types[0], sub_type=f.types[-1])
        else:
            w.add_key_value(key, value, f.types[0])
    (rope,) = [np.asarray(t.data, dtype=np.float32) for t in src.tensors if t.name == "rope_freqs.weight"]
    w.add_tensor_info("rope_freqs.weight", rope.shape, np.dtype(np.float32), rope.nbytes)
    w.add_tensor_info("token_embd.weight", (big // 1024, 256), np.dtype(np.float32), big)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    with open(model / "model.gguf", "r+b") as fh:
        start = fh.seek(0, os.SEEK_END)
        start += -start % 32  # general.alignment
        fh.seek(start)
        fh.write(rope.tobytes())
        fh.truncate(start + rope.nbytes + (-rope.nbytes % 32) + big)
    # the ONNX export: HF's half-width caches, float32, in external data beside the model
    table = tmp / "audit-largest.safetensors"
    run([*posenc_cmd(), "generate", "--hf-config", str(model / "config.json"), "-o", str(table), "--force", "-q"])
    from safetensors.numpy import load_file

    t = load_file(str(table))
    half = t["cos"].shape[1] // 2
    caches = (np.ascontiguousarray(t["cos"][:, :half]), np.ascontiguousarray(t["sin"][:, :half]))
    del t
    onnx_model = rotary_model({"": caches}, num_heads=2, head_size=128, kv_num_heads=1)
    path = model / "onnx" / "model.onnx"
    save(onnx_model, str(path), external="model.onnx_data")
    # and the model's other weights in the same external data file: weights_gib GiB more, a hole on disk
    import onnx

    proto = onnx.load(str(path), load_external_data=False)
    data = model / "onnx" / "model.onnx_data"
    offset = data.stat().st_size + (-data.stat().st_size % 4096)
    weight = onnx.TensorProto(name="model.embed_tokens.weight", data_type=onnx.TensorProto.FLOAT,
                              dims=[big // 1024, 256], data_location=onnx.TensorProto.EXTERNAL)  # fmt: skip
    for key, value in (("location", "model.onnx_data"), ("offset", str(offset)), ("length", str(big))):
        weight.external_data.add(key=key, value=value)
    proto.graph.initializer.append(weight)
    onnx.save(proto, str(path))
    with open(data, "r+b") as fh:
        fh.truncate(offset + big)
    return model, table


#: An 8B-shaped Llama (Llama 3.1 8B's attention): 32 layers, 32 query and 8 KV heads of 128, 4096 wide.
EIGHT_B = {"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096,
           "head_dim": 128}  # fmt: skip


def add_qk_weights(model: Path, qtype: str, *, gguf_name: str = "model.gguf") -> None:
    """Give ``model`` (config.json, model.safetensors and a GGUF, as :func:`audit_model_dir` writes them) an
    8B-shaped attention: the config's head counts, and every layer's q_proj/k_proj (bf16) in the safetensors file
    and attn_q/attn_k (``qtype``: F16 or Q8_0) in the GGUF, the GGUF's rows the converter's permutation of HF's.
    The tensors are holes on disk except the first 32 columns of every row (what the weights check reads), so
    the files are 8B-sized and a few hundred MiB on disk."""
    import json

    import gguf

    from posenc_cli.models.gguf import validate
    from posenc_cli.models.qk_weights import llama_permute

    cfg = json.loads((model / "config.json").read_text())
    cfg.update(EIGHT_B)
    (model / "config.json").write_text(json.dumps(cfg))
    n_layer, n_head, n_kv, width, hd = (EIGHT_B[k] for k in ("num_hidden_layers", "num_attention_heads",
                                                             "num_key_value_heads", "hidden_size", "head_dim"))  # fmt: skip
    shapes = {"q": (n_head * hd, width), "k": (n_kv * hd, width)}
    # the safetensors file: its header rewritten with the q/k tensors after what it held
    st = model / "model.safetensors"
    with open(st, "rb") as fh:
        n = int.from_bytes(fh.read(8), "little")
        header = json.loads(fh.read(n))
    end = max(e["data_offsets"][1] for k, e in header.items() if k != "__metadata__")
    for i in range(n_layer):
        for r, shape in shapes.items():
            size = shape[0] * shape[1] * 2
            header[f"model.layers.{i}.self_attn.{r}_proj.weight"] = {"dtype": "BF16", "shape": list(shape),
                                                                     "data_offsets": [end, end + size]}  # fmt: skip
            end += size
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    tmp_st = model / "model.safetensors.new"
    with open(tmp_st, "wb") as fh:
        fh.write(len(raw).to_bytes(8, "little") + raw)
        fh.truncate(8 + len(raw) + end)
    os.replace(tmp_st, st)
    base = 8 + len(raw)
    # the GGUF: its keys with the 8B head counts, then its tensors and the q/k ones, rewritten
    path = model / gguf_name
    src = gguf.GGUFReader(str(path))
    arch = src.fields["general.architecture"].contents()
    keep = [(t.name, np.asarray(t.data), t.tensor_type) for t in src.tensors if t.name == "rope_freqs.weight"]
    others = [(t.name, tuple(int(x) for x in reversed(t.shape)), t.tensor_type, int(t.n_bytes))
              for t in src.tensors if t.name != "rope_freqs.weight"]  # fmt: skip
    w = gguf.GGUFWriter(str(path) + ".new", arch)
    over = {f"{arch}.block_count": n_layer, f"{arch}.attention.head_count": n_head,
            f"{arch}.attention.head_count_kv": n_kv, f"{arch}.embedding_length": width,
            f"{arch}.rope.dimension_count": hd}  # fmt: skip
    for key, f in src.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture" or key in over:
            continue
        if f.types[0] == gguf.GGUFValueType.ARRAY:
            w.add_key_value(key, f.contents(), f.types[0], sub_type=f.types[-1])
        else:
            w.add_key_value(key, f.contents(), f.types[0])
    for key, value in over.items():
        w.add_uint32(key, value)
    qt = gguf.GGMLQuantizationType[qtype]
    block, tsize = gguf.GGML_QUANT_SIZES[qt]
    for name, data, _ in keep:
        w.add_tensor_info(name, data.shape, np.dtype(np.float32), data.nbytes)
    for name, shape, _, nbytes in others:
        w.add_tensor_info(name, shape, np.dtype(np.float32), nbytes)
    for i in range(n_layer):
        for r, (rows, cols) in shapes.items():
            nbytes = rows * cols // block * tsize
            if qtype == "F16":
                w.add_tensor_info(f"blk.{i}.attn_{r}.weight", (rows, cols), np.dtype(np.float16), nbytes, raw_dtype=qt)
            else:
                w.add_tensor_info(f"blk.{i}.attn_{r}.weight", (rows, nbytes // rows), np.dtype(np.uint8), nbytes,
                                  raw_dtype=qt)  # fmt: skip
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    os.replace(str(path) + ".new", path)
    sizes = {name: nbytes for name, _, _, nbytes in others}
    sizes.update({name: data.nbytes for name, data, _ in keep})
    for i in range(n_layer):
        for r, (rows, cols) in shapes.items():
            sizes[f"blk.{i}.attn_{r}.weight"] = rows * cols // block * tsize
    with open(path, "rb") as fh:  # the header's end: validate needs the data in place, so grow the file first
        fh.seek(0, os.SEEK_END)
        header_end = fh.tell()
    with open(path, "r+b") as fh:
        fh.truncate(header_end + sum(n + 32 for n in sizes.values()))
    head = validate(str(path))
    total = max(t.offset + sizes[name] for name, t in head.tensors.items())
    with open(path, "r+b") as fh:
        fh.truncate(total)
        for name, data, _ in keep:
            fh.seek(head.tensors[name].offset)
            fh.write(data.astype(np.float32).tobytes())
    # the first 32 columns of every row: random bf16 in HF's file, the converter's permutation in the GGUF
    rng = np.random.default_rng(0)
    for i in range(n_layer):
        for r, (rows, cols) in shapes.items():
            v = (rng.standard_normal((rows, 32)) * 0.02).astype(np.float32)
            v = ((v.view(np.uint32) >> 16) << 16).view(np.float32)  # bf16 values
            e = header[f"model.layers.{i}.self_attn.{r}_proj.weight"]
            hf = np.memmap(st, dtype=np.uint16, mode="r+", offset=base + e["data_offsets"][0], shape=(rows, cols))
            hf[:, :32] = (v.view(np.uint32) >> 16).astype(np.uint16)
            del hf
            g = v[llama_permute(rows, n_head if r == "q" else n_kv)]
            first = g.astype(np.float16).view(np.uint8) if qtype == "F16" else gguf.quants.quantize(g, qt)
            off = head.tensors[f"blk.{i}.attn_{r}.weight"].offset
            mm = np.memmap(path, dtype=np.uint8, mode="r+", offset=off, shape=(rows, cols // block * tsize))
            mm[:, : first.shape[1]] = first
            del mm


def bench_weights(tmp: Path, length: int, reps: int) -> None:
    """The Q/K weights check of an 8B-shaped conversion (F16 and Q8_0 GGUF) against posenc check of the
    model's largest table: within 1x."""
    for qtype in ("F16", "Q8_0"):
        what = f"weights check of an 8B-shaped {qtype} GGUF (32 layers, 32/8 heads, 4096 wide)"
        print(f"[{what}]", flush=True)
        model, table = audit_model_dir(tmp, length, 1)
        add_qk_weights(model, qtype)
        script = ("import sys; from posenc_cli.models.qk_weights import check_weights as c; "
                  "r = c(sys.argv[1], sys.argv[2], sys.argv[2]); sys.exit(r.status != 'agree')")  # fmt: skip
        weights_cmd = [sys.executable, "-c", script, str(model / "model.gguf"), str(model)]
        check_cmd = [*posenc_cmd(), "check", str(table), "-q"]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        med = interleaved_runs(
            {
                "weights check": functools.partial(run, weights_cmd, env),
                "posenc check": functools.partial(run, check_cmd),
            },
            reps,
        )
        r = med["weights check"][0] / med["posenc check"][0]
        report(what, f"{med['weights check'][0]:.2f} s = {r:.2f}x posenc check of its largest table "
               f"({med['posenc check'][0]:.2f} s)", "<= 1x", r <= 1)  # fmt: skip
        shutil.rmtree(model, ignore_errors=True)
        table.unlink(missing_ok=True)


def bench_audit(tmp: Path, length: int, weights_gib: int, reps: int) -> None:
    """audit of a model directory (config, sparse weights, a multi-GB GGUF, an ONNX export) against posenc check
    of the model's largest table: time within 2x, peak memory within 2x that table."""
    what = (f"posenc audit of a model directory ({weights_gib} GiB sparse GGUF and weights, 8B-shaped Q8_0 Q/K, ONNX, "
            f"{length} positions)")  # fmt: skip
    print(f"[{what}]", flush=True)
    model, table = audit_model_dir(tmp, length, weights_gib)
    add_qk_weights(model, "Q8_0")  # an 8B-shaped attention, so the audit's weights row reads 8B-sized Q/K tensors
    size = table.stat().st_size
    med = interleaved_runs(
        {
            "posenc audit": lambda: run([*posenc_cmd(), "audit", str(model), "-q"]),
            "posenc check": lambda: run([*posenc_cmd(), "check", str(table), "-q"]),
        },
        reps,
    )
    r = med["posenc audit"][0] / med["posenc check"][0]
    report(what, f"{r:.2f}x posenc check of its largest table ({size / 2**20:.0f} MiB)", "<= 2x", r <= 2)
    peak = med["posenc audit"][1]
    report(what, f"peak RSS {peak / 2**20:.0f} MiB = {peak / size:.2f}x that table", "<= 2x table size",
           peak <= 2 * size)  # fmt: skip
    shutil.rmtree(model, ignore_errors=True)
    table.unlink(missing_ok=True)


def _want(only: set[str], name: str) -> bool:
    return not only or name in only


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        import torch

        torch_v = torch.__version__
    except ImportError:
        torch_v = "absent"
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{model}, {cores} cores, Python {platform.python_version()}, numpy {np.__version__}, torch {torch_v}; "
        f"load average {load}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer repetitions (smoke run)")
    ap.add_argument("--reps", type=int, default=None, help="repetitions per contender (median of N)")
    ap.add_argument(
        "--only",
        default="",
        help="comma-separated subset: memory,generate,startup,check,inspect,check-formula,export,weights,audit,accuracy",
    )
    args = ap.parse_args()
    quick = args.quick
    reps = args.reps or (3 if quick else 5)
    only = set(filter(None, args.only.split(",")))

    print(f"machine: {machine()}")
    print(
        f"mode: {'quick' if quick else 'full'}, median of {reps} interleaved repetitions (plus one warm-up)\n",
        flush=True,
    )
    tmp = Path(tempfile.mkdtemp(prefix="posenc-bench-", dir="/tmp"))
    try:
        if _want(only, "memory"):
            bench_in_memory(32768 if quick else 131072, 1024, reps)
        if _want(only, "generate"):
            bench_generate_big(tmp, 32768 if quick else 131072, 1024, reps)
        if _want(only, "startup"):
            # a 0.1 s process: a VM's hiccups move a median of 7 by 0.2x, of 25 by a few hundredths (4 x 25 runs, 10 s)
            bench_startup(reps if quick else max(reps, STARTUP_REPS))
        if _want(only, "check"):
            bench_check(tmp, 16384 if quick else 65536, 1024, reps)
        if _want(only, "inspect"):
            bench_inspect(tmp, 32768 if quick else 131072, 1024, reps)
        if _want(only, "check-formula"):
            bench_check_formula(tmp, 16384 if quick else 65536, 1024, reps)
        if _want(only, "export"):
            bench_export(tmp, 262144 if quick else 1048576, 1024)
        if _want(only, "weights"):
            bench_weights(tmp, 16384 if quick else 131072, reps)
        if _want(only, "audit"):
            bench_audit(tmp, 16384 if quick else 131072, 1 if quick else 4, reps)
        if _want(only, "accuracy"):
            bench_accuracy(quick)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    w = [max(len(r[i]) for r in ROWS + [("what", "measured", "target", "")]) for i in range(4)]
    print()
    print(f"{'what':<{w[0]}} | {'measured':<{w[1]}} | {'target':<{w[2]}} | result")
    print(f"{'-' * w[0]}-+-{'-' * w[1]}-+-{'-' * w[2]}-+-------")
    for what, measured, target, verdict in ROWS:
        print(f"{what:<{w[0]}} | {measured:<{w[1]}} | {target:<{w[2]}} | {verdict}")
    sys.exit(0)


if __name__ == "__main__":
    main()
