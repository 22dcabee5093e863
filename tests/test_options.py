"""Every option of every command, against every kind of source: honoured (the output changes) or refused by
name (exit 2, one line). An option that is accepted and does nothing is the defect this walk catches.

The options come from the parser itself, so a new option fails :func:`test_every_option_has_a_case` until it
has a case here. Runs in process (``conftest.cli``); a source of kind ``stdin`` feeds ``.npy`` bytes.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import numpy as np
import pytest

from posenc_cli.cli import COMMANDS, build_command

from .conftest import cli

CONFIG = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_attention_heads": 4,
    "max_position_embeddings": 32,
    "rope_theta": 10000.0,
}

#: option -> its value ("" for a flag); {path} stands for the temporary directory.
VALUES = {
    "--len": "6", "--dim": "6", "--param": "base=100", "--dtype": "float64", "--grid": "2x3", "--kind": "index",
    "--output": "{path}/out.npz", "--format": "json", "--tensor": "pe", "--force": "", "--hf-config": "{path}/cfg.json",
    "--layer-type": "full_attention", "--precision": "2", "--max-bytes": "100", "--quiet": "", "--json": "", "--json-details": "",
    "--expect": "learned", "--require": "finite", "--probes": "3", "--seed": "7", "--atol": "0.5", "--rtol": "0.5",
    "--name": "x", "--onnx-rope": "", "--all-layer-types": "", "--verbose": "", "--view": "dot",
    "--pair": "1", "--positions": "8", "--at": "2", "--max-offset": "5", "--cosine": "", "--head": "0", "--size": "4x3",
    "--dpi": "50", "--no-explain": "", "--against": "sinusoidal:base=100", "--no-identify": "", "--read-as": "llama",
    "--engine": "mlx", "--max-model-len": "4096", "--n-ctx": "4096", "--engines": "",
    "--markdown": "{path}/out.md", "--html": "{path}/out.html", "--download": "", "--image-size": "24x12",
    "--tower": "vision", "--patch": "1,1", "--extra-rows": "0:cls",
}  # fmt: skip

SMALL = ["--size", "1x1", "--dpi", "10"]  # a 10 x 10 pixel picture; --size and --dpi cases give other values
#: command -> source kind -> the arguments of the baseline run.
BASELINES = {
    "generate": {"spec": ["--kind", "rope", "-n", "8", "-d", "8", "-o", "{path}/out.safetensors"]},
    "check": {"spec": ["sinusoidal", "-n", "8", "-d", "8"], "file": ["{path}/pe.safetensors"], "stdin": ["-"]},
    "compare": {"spec": ["sinusoidal:length=8,dim=8", "sinusoidal:length=8,dim=8"],
                "file": ["{path}/pe.safetensors", "{path}/pe.npy"], "stdin": ["-", "{path}/pe.npy"]},
    "export": {"spec": ["sinusoidal", "-n", "8", "-d", "8", "-o", "{path}/out.safetensors"],
               "file": ["{path}/pe.safetensors", "-o", "{path}/out.safetensors"],
               "stdin": ["-", "-o", "{path}/out.safetensors"]},
    "kinds": {"none": ["sinusoidal"]},
    "audit": {"config": ["{path}/cfg.json"]},
    "identify": {"file": ["{path}/plain.npy"], "stdin": ["-"]},
    # (pictures are not drawn: test_every_option_is_honoured_or_refused_by_name)
    "plot": {"spec": ["sinusoidal", "-n", "16", "-d", "8", "-o", "{path}/out.png", *SMALL],
             "file": ["{path}/pe.safetensors", "-o", "{path}/out.png", *SMALL],
             "stdin": ["-", "-o", "{path}/out.png", *SMALL]},
}  # fmt: skip

#: (command, option) pairs whose value differs from VALUES, for the case to mean something.
SPECIAL = {
    ("generate", "--tensor"): "sin", ("check", "--tensor"): "sin", ("compare", "--tensor"): "sin",
    ("export", "--tensor"): "sin", ("identify", "--tensor"): "sin", ("check", "--require"): "finite,unique",
    ("generate", "--output"): "{path}/out.json", ("export", "--output"): "{path}/out.npz",
    ("plot", "--output"): "{path}/out.svg", ("plot", "--dtype"): "float16",
}  # fmt: skip


#: (command, option, source kind) -> the baseline to add the option to, where the usual one cannot show it (a
#: --tensor needs several tensors to choose from; --hf-config replaces the kind and the dim).
BASE_FOR = {
    ("generate", "--hf-config", "spec"): ["-n", "8", "-o", "{path}/out.safetensors"],
    ("check", "--tensor", "spec"): ["rope", "-n", "8", "-d", "8"],
    ("export", "--hf-config", "spec"): ["-n", "8", "-o", "{path}/out.safetensors"],
    # kinds says nothing on stderr but a model config's warnings
    ("kinds", "--quiet", "none"): ["{path}/cfg_warn.json"],
    ("check", "--tensor", "file"): ["{path}/rope.safetensors"],
    ("check", "--tensor", "stdin"): ["-"],
    # identification applies to a table without a kind: a plain .npy written by NumPy
    ("check", "--no-identify", "file"): ["{path}/plain.npy"],
    ("check", "--no-identify", "stdin"): ["-"],
    ("identify", "--tensor", "file"): ["{path}/rope.safetensors"],
    ("identify", "--tensor", "stdin"): ["-"],
    ("compare", "--tensor", "spec"): ["rope:length=8,dim=8", "rope:length=8,dim=8"],
    ("compare", "--param", "spec"): ["sinusoidal", "{path}/pe.npy"],  # -p on both specs would change both alike
    # explanations are looked for (and shown) only where the tables differ
    **{
        ("compare", flag, kind): base
        for flag in ("--no-explain", "--verbose")
        for kind, base in (
            ("spec", ["sinusoidal:length=8,dim=8", "sinusoidal:length=8,dim=8,base=100"]),
            ("file", ["{path}/pe.safetensors", "sinusoidal:base=100"]),
            ("stdin", ["-", "sinusoidal:base=100"]),
        )
    },
    ("compare", "--tensor", "file"): ["{path}/rope.safetensors", "{path}/rope.safetensors"],
    ("compare", "--tensor", "stdin"): ["-", "{path}/rope.safetensors"],
    ("export", "--tensor", "spec"): ["rope", "-n", "8", "-d", "8", "-o", "{path}/out.safetensors"],
    ("export", "--tensor", "file"): ["{path}/rope.safetensors", "-o", "{path}/out.safetensors"],
    ("export", "--tensor", "stdin"): ["-", "-o", "{path}/out.safetensors"],
    # --force overwrites a report: the baseline writes one
    ("audit", "--force", "config"): ["{path}/cfg.json", "--markdown", "{path}/out.md"],
}
#: Sources fed on stdin where the usual .npy bytes hold one tensor only.
STDIN_FOR = {
    ("check", "--tensor"): "rope.safetensors",
    ("check", "--no-identify"): "plain.npy",
    ("identify", "--tensor"): "rope.safetensors",
    ("compare", "--tensor"): "rope.safetensors",
    ("export", "--tensor"): "rope.safetensors",
}


def options_of(command: str) -> list[tuple[str, str]]:
    """(long flag, dest) of every option of ``command``, as its parser declares them."""
    return [(flag, dest) for flag, dest, _ in _options(command)]


@functools.cache
def _options(command: str) -> list[tuple[str, str, list[str]]]:
    """(long flag, dest, every spelling) of ``command``'s options; once per command in a process (a build of the
    command costs 0.01 CPU-s, and every refused case asks for the spellings)."""
    out = []
    for param in build_command(command).params:
        longs = [s for s in getattr(param, "opts", []) if s.startswith("--")]
        if param.param_type_name == "option" and longs and longs[0] != "--help":
            out.append((longs[0], param.name, [*param.opts, *param.secondary_opts]))
    return out


def names_the_option(line: str, command: str, flag: str) -> bool:
    """Whether an error line names ``flag``: one of its spellings (``-p`` or ``--param``) as a word."""
    spellings = next(strings for long, _, strings in _options(command) if long == flag)
    spellings = [*spellings, flag.lstrip("-")]
    return any(re.search(rf"(?<![\w-]){re.escape(s)}(?![\w-])", line) for s in spellings)


#: (command, flags): options read only after every source is read (posenc_cli/cli/plot.py passes them to
#: ``plot.plot``, or ``msg`` for --quiet, with the tables ``plot_tables`` read, the same calls for a spec, a file
#: and stdin; none is a source option of ``TableOptions``); each is tested with a spec source, and a file or stdin
#: source would render the same picture twice more to show nothing new.
AFTER_READING = {"plot": ("--size", "--dpi", "--force", "--json", "--output", "--quiet")}
#: (command, source kind): one case each, over every option of the command (a case per option cost each test
#: process a build of every command at collection, and the run 1-2 ms of pytest's own a case, for 315 cases).
CASES = [(command, kind) for command, kinds in BASELINES.items() for kind in kinds]


def flags_for(command: str, kind: str) -> list[str]:
    """The options ``command`` is tried with for a source of ``kind`` (:data:`AFTER_READING`)."""
    first = next(iter(BASELINES[command]))
    return [f for f, _ in options_of(command) if kind == first or f not in AFTER_READING.get(command, ())]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("opts")
    assert cli(["generate", "-n", "8", "-d", "8", "-o", str(path / "pe.safetensors")])[0] == 0
    assert cli(["generate", "-n", "8", "-d", "8", "-o", str(path / "pe.npy")])[0] == 0
    assert cli(["generate", "--kind", "rope", "-n", "8", "-d", "8", "-o", str(path / "rope.safetensors")])[0] == 0
    (path / "cfg.json").write_text(json.dumps(CONFIG))
    # a rope key the rule in force does not read: a warning ("ignored, as transformers does")
    warn = {**CONFIG, "rope_scaling": {"rope_type": "linear", "factor": 2.0, "beta_fast": 8}}
    (path / "cfg_warn.json").write_text(json.dumps(warn))
    # a table without posenc's metadata (identified by check and identify): sinusoidal, built with NumPy
    t, k = np.arange(8)[:, None], np.arange(4)[None, :]
    plain = np.empty((8, 8))
    plain[:, 0::2], plain[:, 1::2] = np.sin(t * 10000.0 ** (-k / 4)), np.cos(t * 10000.0 ** (-k / 4))
    np.save(path / "plain.npy", plain.astype(np.float32))
    return path


def fill(args: list[str], path: Path) -> list[str]:
    return [a.replace("{path}", str(path)) for a in args]


def outputs(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.glob("out.*"))}


def run_case(args: list[str], path: Path, stdin: bytes) -> tuple[int, bytes, str, dict[str, bytes]]:
    for p in path.glob("out.*"):
        p.unlink()
    code, out, err = cli(args, input=stdin)
    return code, out, err, outputs(path)


def test_every_option_has_a_case():
    for command in BASELINES:
        for flag, _ in options_of(command):
            assert flag in VALUES, f"posenc {command} {flag}: add a value to VALUES (and check it is honoured)"
    assert set(COMMANDS) == set(BASELINES)


INPUTS = ("pe.safetensors", "pe.npy", "rope.safetensors", "cfg.json", "cfg_warn.json", "plain.npy")
#: (folder, baseline arguments, stdin) -> the baseline's (code, stdout, stderr, outputs): the cases of one command
#: and source kind share a folder and a test, so each baseline runs once (a plot baseline renders a figure).
_BASELINES: dict[tuple[str, tuple[str, ...], bytes], tuple[int, bytes, str, dict[str, bytes]]] = {}


def baseline(args: list[str], path: Path, stdin: bytes) -> tuple[int, bytes, str, dict[str, bytes]]:
    key = (str(path), tuple(args), stdin)
    if key not in _BASELINES:
        _BASELINES[key] = run_case(args, path, stdin)
    return _BASELINES[key]


def figure_contents(fig, **savefig_kwargs) -> bytes:
    """What a picture is drawn from, as bytes: savefig's arguments (format, dpi), the figure's size and texts,
    and each panel's artists (type, text, data, limits, colour map), limits, scales and tick places, in the
    figure's own order. Two figures whose pictures differ differ here (the pixels are computed from these, the
    ticks' labels from their places); a tenth of the CPU of a drawing."""
    parts = [repr(sorted(savefig_kwargs.items(), key=lambda kv: kv[0])), repr(fig.get_size_inches().tolist())]
    artists = [*fig.texts, *fig.images, *fig.lines, *fig.patches]
    for ax in fig.axes:
        artists += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
        artists += [*ax.images, *ax.lines, *ax.collections, *ax.patches, *ax.texts, *ax.artists]
        parts += [repr(ax.get_position().bounds), repr((ax.get_xscale(), ax.get_yscale()))]
        parts += [repr((ax.get_xlim(), ax.get_ylim())), ax.get_xticks().tobytes(), ax.get_yticks().tobytes()]
    for artist in artists:
        parts.append(type(artist).__name__)
        for getter in FIGURE_GETTERS:
            get = getattr(artist, getter, None)
            if get is None:
                continue
            value = get()
            if isinstance(value, np.ndarray):
                parts.append(f"{value.shape} {value.dtype}")
                value = np.ma.getdata(value).tobytes() + np.ma.getmaskarray(value).tobytes()
            elif getter == "get_cmap":
                value = value.name
            parts.append(value if isinstance(value, bytes) else repr(value).encode())
    return b"\n".join(p if isinstance(p, bytes) else p.encode() for p in parts)


FIGURE_GETTERS = ("get_text", "get_array", "get_xydata", "get_offsets", "get_extent", "get_clim", "get_cmap",
                  "get_visible")  # fmt: skip


@pytest.mark.parametrize("command,kind", CASES, ids=[f"{c}-{k}" for c, k in CASES])
def test_every_option_is_honoured_or_refused_by_name(files, command, kind, monkeypatch):
    """Each option in turn (every one tried, and every failure said, each with its option's name).

    A picture's file holds :func:`figure_contents` instead of its pixels (a drawing cost 0.16 CPU-s at 10 x 10
    pixels, 23 of them for plot's three sources; test_plot.py draws every view and reads its pixels back): an
    option is honoured when what the picture is drawn from changes, or the summary, or the exit code."""
    if command == "plot":
        from matplotlib.figure import Figure

        monkeypatch.setattr(Figure, "savefig", lambda self, fh, **kw: fh.write(figure_contents(self, **kw)))
    tmp = files / f"{command}-{kind}"
    tmp.mkdir()
    inputs = {name: (files / name).read_bytes() for name in INPUTS}  # read once: every option compares with them
    for name, data in inputs.items():
        (tmp / name).write_bytes(data)
    failed = []
    for flag in flags_for(command, kind):
        try:
            check_option(tmp, inputs, command, kind, flag)
        except AssertionError as exc:
            failed.append(f"{command} {flag} ({kind}): {exc}")
        # the folder's inputs are shared with the next options: no option may have touched them
        for name, data in inputs.items():
            if (tmp / name).read_bytes() != data:
                failed.append(f"{command} {flag} ({kind}) changed {name}")
                (tmp / name).write_bytes(data)
    assert not failed, "\n".join(failed)


def check_option(tmp: Path, inputs: dict[str, bytes], command: str, kind: str, flag: str) -> None:
    """``flag`` honoured or refused by name, for ``command`` on a source of ``kind``; ``inputs``: the bytes of the
    files in ``tmp`` (what a stdin source is fed)."""
    base_args = fill(BASE_FOR.get((command, flag, kind), BASELINES[command][kind]), tmp)
    stdin = inputs[STDIN_FOR.get((command, flag), "pe.npy")] if kind == "stdin" else b""
    value = SPECIAL.get((command, flag), VALUES[flag])
    extra = [flag] + ([fill([value], tmp)[0]] if value else [])
    if flag == "--output" and "-o" in base_args:  # replace the baseline's output
        i = base_args.index("-o")
        base_args = base_args[:i] + base_args[i + 2 :]
    if flag == "--force":  # honoured only where the output exists: make it exist (the baseline's own output)
        made = baseline([command, *base_args], tmp, stdin)
        assert made[0] in (0, 1) and made[3], made
        for name, data in made[3].items():
            (tmp / name).write_bytes(data)
        code, out, err = cli([command, *base_args, *extra], input=stdin)
        assert code in (0, 1), err
        base = cli([command, *base_args], input=stdin)
        assert (base[0] == 2 and "exists; pass --force" in base[2]) or command not in ("generate", "export"), base
        return
    base = baseline([command, *base_args], tmp, stdin) if flag != "--output" else None
    code, out, err, files_out = run_case([command, *base_args, *extra], tmp, stdin)
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: "), err
        # (the folder's name holds no flag, so a path in the message cannot pass for the option's name)
        assert names_the_option(lines[0], command, flag), (flag, lines[0])
        return
    assert code in (0, 1), (code, err)
    if base is None:  # --output: the file it names was written
        assert files_out, f"{command} {flag} wrote nothing"
        return
    if base[0] == 2:  # the baseline needs this option (e.g. --hf-config supplies the dim)
        return
    assert base[0] in (0, 1), base
    changed = (code, out, err, files_out) != base
    assert changed, f"posenc {command} {' '.join(extra)} with a {kind} source was accepted and changed nothing"


def test_stdin_and_files_refuse_spec_options_by_name(files):
    code, _, err = cli(["export", str(files / "pe.npy"), "-o", str(files / "o.npy"), "--len", "10"])
    assert code == 2 and err.startswith("Error: --len cannot apply: the source is a file"), err
    code, _, err = cli(["check", "-", "-p", "base=3"], input=(files / "pe.npy").read_bytes())
    assert code == 2 and "-p cannot apply: the source is stdin" in err, err
    # a spec among the sources: the options apply to it
    code, _, err = cli(["check", str(files / "pe.npy"), "sinusoidal", "-n", "8", "-d", "8", "-q"])
    assert code == 0, err


def test_generate_tensor_writes_only_that_tensor(files):
    out = files / "only_sin.safetensors"
    assert cli(["generate", "--kind", "rope", "-n", "4", "-d", "8", "-t", "sin", "-o", str(out)])[0] == 0
    from posenc_cli.formats import read_table

    assert list(read_table(str(out)).tensors) == ["sin"]
    np.testing.assert_allclose(
        read_table(str(out)).tensors["sin"][1, :4], np.sin(10000.0 ** (-np.arange(4) / 4)), rtol=1e-6
    )


def test_preview_refuses_file_options_by_name():
    from .conftest import cli_tty as run_tty  # a terminal in this process (test_docs holds it to a real pty)

    code, shown = run_tty(["generate", "-n", "4", "-d", "4", "--format", "npz"])
    assert code == 2 and "Error: --format cannot apply: stdout is a terminal" in shown, shown
    code, shown = run_tty(["generate", "-n", "4", "-d", "4", "--force"])
    assert code == 2 and "Error: --force cannot apply" in shown, shown
    code, shown = run_tty(["generate", "--kind", "rope", "-n", "4", "-d", "8", "-t", "sin", "--precision", "2"])
    import re

    shown = re.sub(r"\x1b\[[0-9;]*m", "", shown)
    assert code == 0 and "sin rows 0..3" in shown and "0.84" in shown, shown  # honoured: that tensor, 2 decimals
