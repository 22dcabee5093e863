"""How an audit computes its rows: block-major differences, the last block shared between cos and sin, engines
with the same table measured once, and rows that come out the same on one core or several.

Expected maxima and pictures are plain NumPy over whole arrays; shared blocks are checked against fresh
encodings (a second read must not see the first one's scaling applied twice); engine tables are compared bit for
bit to decide which keys may be equal.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

import posenc_cli
from posenc_cli.auditing import differences as dm
from posenc_cli.auditing import run as audit_run
from posenc_cli.encodings import make_encoding
from posenc_cli.encodings._trig import LastBlock
from posenc_cli.models import engines as eng

from .each import each

DATA = Path(__file__).resolve().parent / "data"
LLAMA31 = DATA / "llamacpp" / "llama31.config.json"


# ----- differences: blocks outermost, the same numbers as one pass over whole arrays ----------------------------
def _tables(rows: int, cols: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((rows, cols))
    b = a + rng.standard_normal((rows, cols)) * 1e-3
    b[rng.integers(rows), rng.integers(cols)] = np.nan  # a nan on one side is an infinite difference
    return a, b


@pytest.mark.parametrize(("rows", "cols"), [(1, 3), (700, 5), (5000, 96)])
def test_differences_equal_plain_numpy_over_whole_arrays(monkeypatch, rows, cols):
    monkeypatch.setattr("posenc_cli.blocks.CACHE_VALUES", 1024)  # many blocks, a last one shorter
    a, b = _tables(rows, cols, rows)
    c, d = _tables(rows, cols + 2, rows + 1)
    got = dm.differences(
        [dm.Side("x", lambda s, e: a[s:e], lambda s, e: b[s:e], cols),
         dm.Side("y", lambda s, e: c[s:e], lambda s, e: d[s:e], cols + 2)],
        rows,
    )  # fmt: skip
    for diff, (p, q) in zip(got, [(a, b), (c, d)]):
        plain = np.abs(p - q)
        plain[np.isnan(plain)] = np.inf
        r, k = np.unravel_index(int(np.argmax(plain)), plain.shape)
        assert (diff.max_abs, diff.row, diff.column) == (np.inf, r, k)
        pic = diff.picture
        assert pic is not None
        assert pic.by_column == plain.max(axis=0).tolist()
        edges = pic.positions + [rows]
        assert pic.by_position == [plain[s:e].max() for s, e in zip(edges[:-1], edges[1:])]


def test_differences_read_every_tensor_of_a_block_before_the_next_block(monkeypatch):
    monkeypatch.setattr("posenc_cli.blocks.CACHE_VALUES", 40)
    a = np.zeros((100, 4))
    seen: list[tuple[str, int]] = []

    def side(name: str) -> dm.Side:
        def rows(s: int, e: int) -> np.ndarray:
            seen.append((name, s))
            return a[s:e]

        return dm.Side(name, rows, lambda s, e: a[s:e], 4)

    dm.differences([side("cos"), side("sin")], 100, pictures=False)
    assert seen == [(name, s) for s in range(0, 100, 10) for name in ("cos", "sin")]


# ----- the last block, shared between cos and sin ---------------------------------------------------------------
def test_last_block_is_kept_per_thread_and_not_when_large():
    memo, calls = LastBlock(), []

    def compute(n: int):
        calls.append(n)
        return (np.zeros(n), np.ones(n))

    first = memo.get(("k", 1), lambda: compute(10))
    assert memo.get(("k", 1), lambda: compute(10)) is first and calls == [10]
    other: list = []
    t = threading.Thread(target=lambda: other.append(memo.get(("k", 1), lambda: compute(10))))
    t.start()
    t.join()
    assert other[0] is not first and calls == [10, 10]  # another thread computes its own
    memo.get(("k", 2), lambda: compute(10))
    assert calls == [10, 10, 10]  # another key replaces the block
    big = LastBlock.MAX_ELEMENTS
    memo.get(("big", 0), lambda: compute(big))
    memo.get(("big", 0), lambda: compute(big))
    assert calls[-2:] == [big, big]  # too large to keep


@pytest.mark.parametrize(
    "spec",
    [
        dict(dim=32, base=10000.0),
        dict(dim=32, base=500000.0, scaling="yarn", factor=4.0, original_max_position_embeddings=256),
    ],
)
def test_a_shared_block_reads_the_same_as_a_fresh_encoding(spec):
    """float64 tables take the exact path, where cos and sin share their block: every order of reads gives what a
    fresh encoding gives (the attention scaling applied once, to a copy)."""
    p = {**spec, "length": 3000, "dtype": "float64"}
    shared = make_encoding("rope", p)
    assert shared.attention_scaling != 1.0 or "scaling" not in spec
    for name in ("cos", "sin", "cos", "cos", "sin"):
        for start, stop in ((0, 1000), (1000, 3000), (0, 1000)):
            fresh = make_encoding("rope", p).rows(name, start, stop)
            np.testing.assert_array_equal(shared.rows(name, start, stop), fresh)
    t = np.arange(3000, dtype=np.float64)[:, None]
    w = shared.inv_freq()
    cos = np.cos(t * w) * shared.attention_scaling
    np.testing.assert_allclose(shared.rows("cos", 0, 3000)[:, :16], cos, rtol=0, atol=1e-12)


# ----- engines with the same table: one key, one measurement ---------------------------------------------------
CONFIGS = {
    "llama31": json.loads(LLAMA31.read_text()),
    "linear": {"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 4096,
               "rope_theta": 10000.0, "rope_scaling": {"rope_type": "linear", "factor": 2.0}},
    "plain": {"model_type": "qwen2", "hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 4096,
              "rope_theta": 1000000.0},
    # vLLM never raises the NTK base, SGLang raises it once for factor * max_position_embeddings: other tables
    "dynamic": {"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 2048,
                "rope_theta": 10000.0, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}},
}  # fmt: skip


def test_equal_table_keys_mean_equal_tables(tmp_path_factory):
    each(sorted(CONFIGS), lambda c: _equal_table_keys_mean_equal_tables(tmp_path_factory.mktemp("case"), c))


def _equal_table_keys_mean_equal_tables(tmp_path, name):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIGS[name]))
    made = {}
    for engine in ("vllm", "sglang", "mlx", "llamacpp"):
        try:
            enc, _facts = eng.engine_encoding(
                str(path), engine, length=2048, n_ctx=4096 if engine == "llamacpp" else None
            )
        except posenc_cli.ParameterError:  # llama.cpp has no dynamic NTK
            assert (engine, name) == ("llamacpp", "dynamic")
            continue
        made[engine] = (enc.table_key, {k: enc.array(k) for k in ("cos", "sin")})
    for e1, (k1, t1) in made.items():
        for e2, (k2, t2) in made.items():
            same = all(np.array_equal(t1[k], t2[k]) for k in t1)
            if k1 == k2:
                assert same, (e1, e2)
    keys = {e: k for e, (k, _t) in made.items()}
    assert len(set(keys.values())) >= 2  # the arithmetics differ
    # vLLM and SGLang compute the same torch expressions: one key where their rules agree, two where they do not
    assert (keys["vllm"] == keys["sglang"]) == (name != "dynamic")


def test_an_audit_measures_a_table_two_engines_share_once(tmp_path, monkeypatch):
    d = tmp_path / "model"
    d.mkdir()
    (d / "config.json").write_text(LLAMA31.read_text())
    measured: list[list[str]] = []
    real = audit_run._measure
    ref_blocks: list[tuple[str, int, int]] = []
    real_rows = audit_run._SharedRows.__call__

    def counting(encs, ref):
        measured.append(sorted(e.engine_name for e in encs.values()))
        return real(encs, ref)

    def reading(self, start, stop):
        if self.last is None or self.last[0] != (start, stop):
            ref_blocks.append((self.name, start, stop))
        return real_rows(self, start, stop)

    monkeypatch.setattr(audit_run, "_measure", counting)
    monkeypatch.setattr(audit_run._SharedRows, "__call__", reading)
    report = posenc_cli.audit(str(d), engine="vllm,sglang,mlx", length=4096)
    # one pass over the reference for the two distinct tables, each of its blocks computed once
    assert measured in ([["mlx", "vllm"]], [["mlx", "sglang"]])
    assert ref_blocks and len(ref_blocks) == len(set(ref_blocks))
    assert {name for name, _s, _e in ref_blocks} == {"cos", "sin"}
    by = {r.engine: r for r in report.rows}
    assert by["vllm"].verdict == by["sglang"].verdict == "agree"
    assert by["vllm"].max_abs_diff == by["sglang"].max_abs_diff > 0
    assert by["vllm"].explanation.split(":", 1)[1] == by["sglang"].explanation.split(":", 1)[1]


# ----- one core or several: the same report ---------------------------------------------------------------------
def test_the_report_is_the_same_on_one_core_and_on_several(tmp_path, monkeypatch):
    pytest.importorskip("gguf")
    import shutil

    d = tmp_path / "model"
    d.mkdir()
    shutil.copy(DATA / "llamacpp" / "qwen2.config.json", d / "config.json")
    shutil.copy(DATA / "llamacpp" / "qwen2.gguf", d / "qwen2.gguf")
    steps: list[tuple[str, int, int]] = []

    def run(n: int) -> dict:
        monkeypatch.setattr("posenc_cli.encodings.parallel.workers", lambda: n)
        steps.clear()
        report = posenc_cli.audit(str(d), length=2048, on_progress=lambda *step: steps.append(step))
        return report.to_json()

    one, order = run(1), list(steps)
    several = run(4)
    assert several == one and steps == order
    assert [r["engine"] for r in one["rows"]][:2] == ["hf", "llamacpp"]
    # one progress step per slot of the report, in its order, counted to the total
    assert [done for _, done, _ in steps] == list(range(len(steps))) and {t for _, _, t in steps} == {len(steps)}
    labels = [what for what, _, _ in steps]
    assert labels[0].endswith("the reference") and labels[-1] == "qwen2.gguf"
    # the GGUF's slot gives two rows: its tables and its Q/K weights
    assert [w.split(": ")[-1] for w in labels[1:-1]] == [r["engine"] for r in one["rows"][1:-2]]
    assert one["rows"][-1]["layer_type"] == "weights"


def test_the_key_holds_the_engines_float32_inputs_not_only_the_parameters():
    """Two torch-float32 tables of the same parameters, one dividing the positions by the linear factor (vLLM's
    and SGLang's rule) and one dividing the frequencies (HF's): other bits, so other keys."""
    base = make_encoding("rope", dict(dim=64, base=10000.0, scaling="linear", factor=3.0, length=4096))
    made = []
    for divides in (True, False):
        pairs, inputs = eng._torch_pairs(base, divides)
        made.append(eng._engine_rope_of(base, "vllm", "torch-float32", pairs, None, inputs, None, divides))
    assert not np.array_equal(made[0].array("cos"), made[1].array("cos"))
    assert made[0].table_key != made[1].table_key


# ----- an ONNX export: its caches measured as the check reads them, not computed again --------------------------
def test_an_onnx_audit_takes_the_differences_the_check_measured_in_full(tmp_path, monkeypatch):
    """The check of each cache against HF's tables shows its blocks to the audit (models.onnx.observing): the
    differences it keeps are those a separate pass over the same cache computes (tensor, position, column, value),
    the rows carry them, the model is read once, and each expected table is made once per cache and attention type
    the check read in full, not twice."""
    pytest.importorskip("onnx")
    from posenc_cli.models import onnx as onnx_mod
    from posenc_cli.models.engines import engine_params, model_facts

    from .test_audit import GEMMA_ROWS, gemma_export

    assert onnx_mod.rows_per_block(256) < GEMMA_ROWS  # a scan that stops at its first block leaves rows unread
    d = gemma_export(tmp_path, 1e6, 1e4)
    config = str(d / "config.json")
    made: list[int] = []
    again: list[int] = []
    models: list = []
    seen: list = []
    real, real_differences, real_read = onnx_mod.expected_encoding, audit_run._onnx_differences, onnx_mod._read_onnx

    def counting(*args, **kwargs):
        made.append(args[1])
        return real(*args, **kwargs)

    def measuring(*args, **kwargs):
        before = len(made)
        seen.append(kwargs["seen"])
        out = real_differences(*args, **kwargs)
        again.append(len(made) - before)
        return out

    def reading(*args):
        models.append(real_read(*args))
        return models[-1]

    monkeypatch.setattr(onnx_mod, "expected_encoding", counting)
    monkeypatch.setattr(onnx_mod, "_read_onnx", reading)
    monkeypatch.setattr(audit_run, "_onnx_differences", measuring)
    report = posenc_cli.audit(str(d), engine="hf")
    # two caches, each checked against both attention types: the check reads each against its own type in full, and
    # stops at the first block of the other (a known mistake, another base, names it): only those two are made again
    assert again == [2] and made == [GEMMA_ROWS] * len(made) and len(models) == 1
    by_type = {r.layer_type: r.max_abs_diff for r in report.rows if r.engine == "onnx"}
    ((model,), (kept,)) = models, seen
    assert len(kept.done) == 2 and not kept.running  # each cache against its own type
    caches = {id(c): c for c in model.caches}
    nearest: dict[str, float] = {}
    for (lt, engine, cache_id, role), pushed in kept.done.items():
        facts = model_facts(config, layer_type=lt)
        enc = real(engine_params(facts, engine, seq_len=None), GEMMA_ROWS, role, facts)[0]
        cache = caches[cache_id]
        sides = [dm.Side(name, lambda s, e, a=stored: a[s:e], lambda s, e, n=name, x=enc: x.rows(n, s, e), 128)
                 for name, stored in (("cos_cache", cache.cos), ("sin_cache", cache.sin))]  # fmt: skip
        pulled = dm.differences(sides, GEMMA_ROWS, pictures=False)
        assert [(x.tensor, x.max_abs, x.row, x.column) for x in pushed] == [
            (x.tensor, x.max_abs, x.row, x.column) for x in pulled
        ]
        nearest[lt] = max(nearest.get(lt, 0.0), *(x.max_abs for x in pushed))
    assert by_type == nearest and all(0 < v < GEMMA_ROWS * 2**-23 for v in by_type.values())
