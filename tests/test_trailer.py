"""A pipe between posenc commands keeps the kind, the parameters and every tensor; plain .npy readers keep working.

``posenc generate ... | posenc check -`` sends the primary tensor as ``.npy`` bytes followed by a posenc trailer
(the metadata and the other tensors, as a small safetensors table). NumPy reads the array and never looks past
it; posenc reads both. A file that holds one tensor says on stderr what it leaves out.
"""

from __future__ import annotations

import io
import json
import subprocess

import numpy as np
import pytest

from posenc_cli.errors import InputError
from posenc_cli.formats import read_stream, read_table

from .conftest import ROOT, clean_env, cli, inproc, posenc_cmd
from .each import each


def piped(args: list[str]) -> bytes:
    code, out, err = cli(["generate", *args])
    assert code == 0, err
    return out


def test_a_pipe_keeps_kind_parameters_and_every_tensor():
    data = piped(["--kind", "rope", "-n", "16", "-d", "8", "-p", "base=500"])
    table = read_stream(io.BytesIO(data), "stdin")
    assert list(table.tensors) == ["cos", "sin", "inv_freq"]
    assert table.metadata["kind"] == "rope" and table.metadata["base"] == "500.0"
    code, out, err = cli(["check", "-", "--json"], input=data)
    assert code == 0, err
    (report,) = json.loads(out)
    assert report["kind"] == "rope" and {"pythagorean", "relative", "matches-spec"} <= set(report["required"])


def test_a_broken_pipe_table_fails_check():
    """The tables travel through the pipe: a sin negated in transit fails, where a lossy pipe would pass."""
    data = bytearray(piped(["--kind", "rope", "-n", "16", "-d", "8"]))
    table = read_stream(io.BytesIO(bytes(data)), "stdin")
    sin = np.asarray(table.tensors["sin"])
    raw = sin.astype("<f4").tobytes()
    at = bytes(data).index(raw)
    data[at : at + len(raw)] = (-sin).astype("<f4").tobytes()
    code, out, err = cli(["check", "-", "-q"], input=bytes(data))
    assert code == 1, (out, err)


def test_numpy_reads_the_array_and_stops(tmp_path):
    data = piped(["--kind", "rope", "-n", "16", "-d", "8"])
    path = tmp_path / "rope.npy"
    path.write_bytes(data)
    cos = np.load(path)
    assert cos.shape == (16, 8) and np.load(path, mmap_mode="r").shape == (16, 8)
    with open(path, "rb") as fh:  # np.load(sys.stdin.buffer) with a redirected file
        np.testing.assert_array_equal(np.load(fh), cos)
    # and posenc reads the file back whole
    assert list(read_table(str(path)).tensors) == ["cos", "sin", "inv_freq"]


def test_a_reader_that_stops_after_the_array_is_a_success():
    """A real reader that takes the .npy part of a real pipe (header and array: where NumPy's reader stops, as
    test_numpy_reads_the_array_and_stops shows in this process) and leaves: ``head -c`` with that many bytes, so
    the reader costs no interpreter of its own. 4096 x 64 float32: 1 MiB a tensor, 16 times a pipe's buffer, so the
    writer is still writing sin (and gets EPIPE) when the reader leaves after cos."""
    args = ["--kind", "rope", "-n", "4096", "-d", "64"]
    stream = io.BytesIO(piped(args))  # the same bytes, made in this process: where the array ends
    np.lib.format.read_magic(stream)
    shape, _, dtype = np.lib.format.read_array_header_1_0(stream)
    npy_bytes = stream.tell() + int(np.prod(shape)) * np.dtype(dtype).itemsize
    assert shape == (4096, 64) and len(stream.getvalue()) - npy_bytes > 16 * 65536  # the trailer: sin (1 MiB), ...
    cmd = f"{' '.join(posenc_cmd())} generate {' '.join(args)} | head -c {npy_bytes} > /dev/null"
    proc = subprocess.run(
        ["bash", "-o", "pipefail", "-c", cmd], capture_output=True, env=clean_env(), cwd=ROOT, timeout=120
    )
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr  # sin (1 MiB) was never read: fine


DAMAGES = {
    "unexpected bytes after the posenc trailer": lambda d: d + b"junk",
    "truncated": lambda d: d[: len(d) - 5],
    "unexpected data after the array": lambda d: d.replace(b"POSENC-TRAILER", b"POSENC-TRAILEX"),
}


def test_damaged_trailers_are_one_line_errors():
    """Each damage (:func:`tests.each.each`, named by the message it must give)."""
    data = piped(["--kind", "rope", "-n", "8", "-d", "8"])

    def refused(message):
        with pytest.raises(InputError, match=message):
            read_stream(io.BytesIO(DAMAGES[message](data)), "stdin")

    each(DAMAGES, refused)


def test_a_one_tensor_file_says_what_it_leaves_out(tmp_path):
    # several tensors to a one-tensor file: refused, naming them and the fix, and nothing is written
    code, _, err = cli(["generate", "--kind", "rope", "-n", "8", "-d", "8", "-o", str(tmp_path / "r.npy")])
    assert code == 2 and "cos, sin, inv_freq" in err and "--tensor" in err, err
    assert not (tmp_path / "r.npy").exists()
    code, _, err = cli(["generate", "--kind", "rope", "-n", "8", "-d", "8", "-t", "cos", "-o", str(tmp_path / "r.npy")])
    assert code == 0 and "cos (8, 8) float32" in err and "note: " in err and "without the metadata" in err, err
    code, _, err = cli(["generate", "-n", "8", "-d", "8", "-o", str(tmp_path / "p.csv")])
    assert code == 0 and "note:" not in err  # .csv keeps the metadata in its header line


def test_plain_npy_without_trailer_still_reads(tmp_path):
    path = tmp_path / "plain.npy"
    np.save(path, np.arange(16, dtype=np.float32).reshape(4, 4))  # four distinct rows: a table of positions
    assert list(read_table(str(path)).tensors) == ["pe"]
    # stdin is read as a stream whatever it is (formats.read_stream): this process's stdin serves; the bytes of a
    # real pipe are test_a_reader_that_stops_after_the_array_is_a_success's and test_pipelines'
    assert inproc(["check", "-", "-q"], input=path.read_bytes()).returncode == 0
