"""Where the test suite's time goes, in CPU-seconds, which load from other processes barely changes.

Run from the repository root: ``.venv/bin/python tests/benchmarks/suite_time.py [--top N] [PYTEST ARGS...]``.
It runs README.md's test command (``python -m pytest -q -n auto``, plus any PYTEST ARGS) with this file loaded
as a pytest plugin in every worker, and prints:

- the whole run: wall time, CPU-seconds of the process tree (user + sys of pytest, its workers and every
  subprocess a test ran), and that CPU time over 2 cores against the suite's budget of 60 s on 2 cores, as a
  ratio (the CPU time is what the machine must do whatever its load; wall time on an idle 2-core machine is
  about CPU / 2 when the workers stay busy to the end);
- per worker: its start-up and collection time (imports of every test module, assertion rewriting), the CPU
  its tests took, and when its last test ended (a worker that ends long after the others is the tail);
- the top N tests by CPU-seconds (their own process plus the subprocesses they waited for), and the top test
  files by the same sum.

Not collected by pytest (no ``test_`` prefix). No timed assertion anywhere: the numbers are for a reader (a
test added to the suite shows in these lists with its cost, and the ratio says how much room is left).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUDGET_S = 60.0  # the suite's budget: 60 s wall on 2 cores
CORES = 2
_OUT_ENV = "POSENC_SUITE_TIME_DIR"


# ----- the plugin (runs in each pytest process; does nothing unless the tool set _OUT_ENV) -------------------
def _cpu() -> float:
    """CPU-seconds of this process and of the children it has waited for."""
    return _kids() + sum(resource.getrusage(resource.RUSAGE_SELF)[:2])


def _kids() -> float:
    return sum(resource.getrusage(resource.RUSAGE_CHILDREN)[:2])


_state: dict[str, object] = {"tests": {}, "t_start": time.time(), "cpu_start": _cpu()}


def pytest_collection(session):  # (a pytest hook)
    _state["t_collect0"] = time.time()
    _state["cpu_collect0"] = _cpu()


def pytest_collection_finish(session):  # (a pytest hook)
    _state["t_collect1"] = time.time()
    _state["cpu_collect1"] = _cpu()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # (a pytest hook)
    c0, k0, t0 = _cpu(), _kids(), time.time()
    yield
    _state["tests"][item.nodeid] = (_cpu() - c0, time.time() - t0, _kids() - k0)  # type: ignore[index]
    _state["t_last"] = time.time()


def pytest_sessionfinish(session):  # (a pytest hook)
    out = os.environ.get(_OUT_ENV)
    if not out:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    try:
        import psutil

        created = psutil.Process().create_time()
    except Exception:  # psutil is a test extra; without it, start-up counts from this module's import
        created = float(_state["t_start"])  # type: ignore[arg-type]
    record = dict(_state, worker=worker, created=created, cpu_end=_cpu(), t_end=time.time())
    Path(out, f"{worker}.json").write_text(json.dumps(record))


# ----- the tool ----------------------------------------------------------------------------------------------
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--top", type=int, default=20, help="how many tests and files to list (default 20)")
    ap.add_argument("--json", type=Path, help="also write every test's CPU and wall seconds here")
    args, pytest_args = ap.parse_known_args()
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, **{_OUT_ENV: out})
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(REPO), str(Path(__file__).parent), env.get("PYTHONPATH")])
        )
        cmd = [sys.executable, "-m", "pytest", "-q", "-n", "auto", "-p", "suite_time", *pytest_args]
        print("$", " ".join(cmd), flush=True)
        load0 = os.getloadavg()
        t0 = time.time()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = time.time() - t0
        load1 = os.getloadavg()
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        records = [json.loads(p.read_text()) for p in sorted(Path(out).glob("*.json"))]
    summary = [line for line in proc.stdout.splitlines() if " passed" in line or " failed" in line]
    print(summary[-1] if summary else proc.stdout[-2000:])
    if proc.returncode:
        print(proc.stdout[-4000:], proc.stderr[-2000:], sep="\n")
    print(f"load average {load0[0]:.2f} before, {load1[0]:.2f} after (1 min)")
    print(
        f"wall {wall:.1f} s; CPU {cpu:.1f} s (user {after.ru_utime - before.ru_utime:.1f}, "
        f"sys {after.ru_stime - before.ru_stime:.1f})"
    )
    print(f"CPU / {CORES} cores = {cpu / CORES:.1f} s: {cpu / CORES / BUDGET_S:.2f}x the {BUDGET_S:.0f} s budget")
    tests: dict[str, tuple[float, ...]] = {}
    workers = [r for r in records if r["worker"] != "main"] or records
    if workers:
        t_first = min(r["created"] for r in workers)
        print(
            f"\n{'worker':8} {'start-up':>9} {'collect':>8} {'coll.CPU':>9} {'tests CPU':>10} {'n':>5} {'last end':>9}"
        )
        for r in workers:
            tests.update({k: tuple(v) for k, v in r["tests"].items()})
            tcpu = sum(v[0] for v in r["tests"].values())
            print(
                f"{r['worker']:8} {r['t_collect0'] - r['created']:8.1f}s {r['t_collect1'] - r['t_collect0']:7.1f}s "
                f"{r['cpu_collect1'] - r['cpu_collect0']:8.1f}s {tcpu:9.1f}s {len(r['tests']):5d} "
                f"{r.get('t_last', r['t_end']) - t_first:8.1f}s"
            )
    total = sum(v[0] for v in tests.values())
    kids = sum(v[2] for v in tests.values())
    n_kids = sum(1 for v in tests.values() if v[2] > 0)
    print(f"\n{len(tests)} tests, {total:.1f} CPU-s in test bodies and fixtures, {kids:.1f} of them in the")
    print(f"subprocesses of {n_kids} tests")
    print(f"\ntop {args.top} tests by CPU-seconds (in subprocesses; wall)")
    for nodeid, (c, w, k) in sorted(tests.items(), key=lambda kv: -kv[1][0])[: args.top]:
        print(f"{c:7.2f}s ({k:5.2f}s; {w:6.2f}s)  {nodeid}")
    per_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for nodeid, (c, *_rest) in tests.items():
        f = per_file[nodeid.split("::")[0]]
        f[0] += c
        f[1] += 1
    print(f"\ntop {args.top} files by CPU-seconds")
    for name, (c, n) in sorted(per_file.items(), key=lambda kv: -kv[1][0])[: args.top]:
        print(f"{c:7.2f}s  {int(n):5d} tests  {name}")
    if args.json:
        args.json.write_text(json.dumps(tests, indent=0, sort_keys=True))
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
