"""Bad parameters through the real command: one line `Error: ...` naming the bad value and the fix, exit 2,
no traceback, nothing on stdout and no file written (issue: hostile input, group 2)."""

from __future__ import annotations

from .conftest import inproc as run
from .each import each

CASES = [
    # unknown kind or parameter: list the valid ones
    (
        ["generate", "--kind", "rotary2", "-n", "8", "-d", "4"],
        "unknown encoding 'rotary2'; choose from: alibi, binary, deberta, index, learned, mrope, normalized, relative, rope, rope-2d, sinusoidal",
    ),
    (
        ["generate", "-n", "8", "-d", "4", "-p", "rotary=1"],
        "unknown parameter 'rotary' for sinusoidal; choose from: angle_dtype, base, dim, dtype, freq, layout, length, max_timescale",
    ),
    (
        ["generate", "-n", "8", "-d", "4", "-p", "layout=diagonal"],
        "unknown layout 'diagonal' for sinusoidal; choose from: interleaved, split, split-cos-first",
    ),
    (
        ["generate", "-n", "8", "-d", "4", "-p", "preset=gpt9"],
        "unknown preset 'gpt9' for sinusoidal; choose from: paper",
    ),
    (
        ["generate", "-n", "8", "-d", "4", "--dtype", "int8"],
        "unknown dtype 'int8' for sinusoidal; choose from: float64",
    ),
    (["check", "sinusoidal", "-n", "4", "-d", "4", "--expect", "nosuch"], "unknown encoding 'nosuch'; choose from:"),
    (
        ["check", "sinusoidal", "-n", "4", "-d", "4", "--expect", "sinusiodal"],
        "unknown encoding 'sinusiodal'; did you mean 'sinusoidal'",
    ),
    (["generate", "--kind", "ropee", "-n", "4", "-d", "4"], "unknown encoding 'ropee'; did you mean 'rope'"),
    (["check", "sinusiodal", "-n", "4", "-d", "4"], "unknown encoding 'sinusiodal'; did you mean 'sinusoidal'"),
    (
        ["generate", "--kind", "sinusoidal", "--hf-config", "cfg.json", "-n", "4"],
        "--hf-config: a config without model_type is not one posenc reads as t5, alibi, sinusoidal, sinusoidal-2d, "
        "deberta or learned positions; drop --kind",
    ),
    (
        ["generate", "--layer-type", "sliding_attention", "-n", "4", "-d", "4"],
        "--layer-type cannot apply: the source is a spec; it applies to model configs",
    ),
    (
        ["check", "sinusoidal", "-n", "4", "-d", "4", "--require", "finite,sparkly"],
        "unknown check 'sparkly'; choose from: finite",
    ),
    # negative or zero len/dim
    (["generate", "-n", "-5", "-d", "4"], "parameter length=-5 is out of range; sinusoidal needs length >= 1"),
    (["generate", "-n", "0", "-d", "4"], "parameter length=0 is out of range; sinusoidal needs length >= 1"),
    (["generate", "-n", "4", "-d", "0"], "parameter dim=0 is out of range; sinusoidal needs dim >= 1"),
    (["generate", "-n", "4", "-d", "-4"], "parameter dim=-4 is out of range"),
    (["generate", "--kind", "alibi", "-n", "8", "-d", "0"], "parameter dim=0 is out of range; alibi needs dim >= 1"),
    (["generate", "-n", "8"], "sinusoidal needs dim: pass --dim 128, say"),
    (["generate", "-d", "8"], "sinusoidal needs length: pass --len 512, say"),
    # odd dims where a convention needs even ones
    (["generate", "--kind", "rope", "-n", "4", "-d", "7"], "rot_dim=7 is odd"),
    (
        ["generate", "--kind", "sinusoidal-2d", "--grid", "4x4", "--dim", "6", "-p", "preset=mae"],
        "got dim=6; pass --dim 8",
    ),
    (["generate", "--kind", "binary", "-n", "20", "-d", "4"], "pass --dim 5 or more"),
    # non-numeric values
    (["generate", "-n", "4", "-d", "4", "-p", "base=ten"], "parameter base='ten' is not a number; use e.g. base=1.5"),
    (["generate", "--kind", "t5", "-n", "8", "-p", "num_buckets=abc"], "parameter num_buckets='abc' is not an integer"),
    (
        ["generate", "--len", "abc", "--dim", "4"],
        "Invalid value for '--len' / '-n': 'abc' is not a whole number (each kind says its own range) (see posenc generate --help)",
    ),
    (
        ["generate", "-n", "4", "-d", "4", "-p", "nonsense"],
        "parameter 'nonsense' is not key=value; write e.g. base=10000",
    ),
    (["generate", "--kind", "sinusoidal-2d", "--grid", "4xq", "--dim", "8"], "grid='4xq' is not a 2-D grid"),
    # base <= 0, NaN / Inf
    (
        ["generate", "-n", "4", "-d", "4", "-p", "base=0"],
        "parameter base=0.0 is out of range; sinusoidal needs base > 0.0",
    ),
    (["generate", "-n", "4", "-d", "4", "-p", "base=-10"], "parameter base=-10.0 is out of range"),
    (["generate", "-n", "4", "-d", "4", "-p", "base=nan"], "parameter base='nan' must be a finite number"),
    (["generate", "-n", "4", "-d", "4", "-p", "base=inf"], "parameter base='inf' must be a finite number"),
    (["generate", "--kind", "rope", "-n", "4", "-d", "8", "-p", "base=-inf"], "must be a finite number"),
    # missing scaling parameters
    (
        ["generate", "--kind", "rope", "-n", "8", "-d", "8", "-p", "scaling=yarn"],
        "scaling=yarn needs factor; pass e.g. factor=4.0",
    ),
    # tables that would not fit: size in human units and the option that raises the limit
    (
        ["generate", "-n", "10000000", "-d", "100000"],
        "sinusoidal would need 3.6 TiB, above the 8.0 GiB limit; lower --len/--dim or pass --max-bytes 4000000000000",
    ),
    (["generate", "-n", "512", "-d", "128", "--max-bytes", "1000"], "would need 256.0 KiB, above the 1000 B limit"),
    (["generate", "--kind", "alibi", "-n", "100000", "-d", "16"], "alibi would need"),
    (["check", "sinusoidal", "-n", "10000000", "-d", "100000"], "would need 3.6 TiB"),
]


def test_bad_parameter_is_one_line_exit_two(tmp_path):
    """Every case (:func:`tests.each.each`: each failure named), each in a folder of its own."""
    each(range(len(CASES)), lambda i: _bad_parameter(tmp_path / str(i), *CASES[i]))


def _bad_parameter(tmp_path, args, needle):
    tmp_path.mkdir()
    (tmp_path / "cfg.json").write_text('{"hidden_size": 64, "num_attention_heads": 4, "max_position_embeddings": 16}')
    proc = run(args + (["-o", str(tmp_path / "out.npy")] if args[0] == "generate" else []), cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 2, (proc.returncode, err)
    assert "Traceback" not in err and proc.stdout == b""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), err
    assert needle in lines[0], lines[0]
    assert not (tmp_path / "out.npy").exists()


def test_kind_names_match_case_insensitively(tmp_path):
    proc = run(["generate", "--kind", "RoPE", "-n", "4", "-d", "8", "-o", str(tmp_path / "r.safetensors")])
    assert proc.returncode == 0, proc.stderr
    proc = run(["check", "SINUSOIDAL:preset=tf-tutorial", "-n", "5", "-d", "6", "--json"])
    assert proc.returncode == 0, proc.stderr
    assert b'"kind": "sinusoidal"' in proc.stdout


def test_unknown_command_says_which_one_was_meant():
    each(
        [
            ("genrate", "Did you mean 'generate'?"),  # a typo
            ("gen", "Did you mean 'generate'?"),  # the start of one
            ("c", "Did you mean 'check' or 'compare'?"),  # the start of two
            ("xyz", ""),
        ],
        lambda c: _unknown_command_says_which_one_was_meant(*c),
    )


def _unknown_command_says_which_one_was_meant(typed, hint):
    proc = run([typed])
    err = proc.stderr.decode()
    assert proc.returncode == 2 and proc.stdout == b""
    end = f" {hint} (see posenc --help)\n" if hint else " (see posenc --help)\n"
    assert err == f"Error: No such command '{typed}'.{end}", err
