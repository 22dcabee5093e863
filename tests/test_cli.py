"""The real `posenc` command in subprocesses: exact exit codes, stdout data vs stderr messages."""

from __future__ import annotations

import io
import json

import numpy as np

from posenc_cli.encodings import make_encoding

from .conftest import cli_tty
from .conftest import inproc as run
from .conftest import run as run_process
from .each import each


def load_npy(data: bytes) -> np.ndarray:
    return np.load(io.BytesIO(data), allow_pickle=False)


def one_error_line(proc) -> str:
    err = proc.stderr.decode()
    assert proc.returncode == 2, (proc.returncode, err)
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), err
    assert proc.stdout == b""
    return lines[0]


def test_version_and_module_entry_point():
    proc = run_process(["--version"])
    assert proc.returncode == 0 and proc.stdout.decode().startswith("posenc 0.")


def test_help_lists_every_command():
    out = run(["--help"]).stdout.decode()
    for command in ("generate", "check", "compare", "export", "kinds"):
        assert command in out


def test_generate_previews_the_seed_table_on_a_terminal():
    # on the stand-in terminal: test_docs holds it to a real pseudo-terminal, with this very command
    rc, shown = cli_tty(["generate", "--len", "5", "--dim", "6", "-p", "preset=tf-tutorial"])
    assert rc == 0, shown
    for row in ("[ 0.841  0.046  0.002  0.540  0.999  1.000]", "[-0.757  0.185  0.009 -0.654  0.983  1.000]"):
        assert row in shown
    assert "5 x 6" in shown and "float32" in shown and "layout=split" in shown and "value range" in shown


def test_generate_writes_npy_bytes_when_piped():
    proc = run(["generate", "--len", "64", "--dim", "16", "-p", "preset=fairseq,padding_idx=1"])
    assert proc.returncode == 0 and proc.stderr == b""
    got = load_npy(proc.stdout)
    expected = make_encoding("sinusoidal", {"length": 64, "dim": 16, "preset": "fairseq", "padding_idx": 1}).array()
    np.testing.assert_array_equal(got, expected)
    assert np.all(got[1] == 0)


def test_generate_refuses_binary_to_a_terminal_with_minus_o():
    rc, shown = cli_tty(["generate", "--len", "5", "--dim", "6", "-o", "-"])
    assert rc == 2 and "refusing to write binary data to a terminal" in shown


def test_generate_output_formats_from_suffix(tmp_path):
    """Each writer chosen by the output's suffix (one test over the five: :func:`tests.each.each` names each
    failing one)."""
    each(["npy", "npz", "safetensors", "csv", "json"], lambda suffix: _generated_format(tmp_path, suffix))


def _generated_format(tmp_path, suffix):
    out = tmp_path / f"pe.{suffix}"
    proc = run(["generate", "--len", "8", "--dim", "4", "-o", str(out)])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"" and out.exists()
    expected = make_encoding("sinusoidal", {"length": 8, "dim": 4}).array()
    if suffix == "npy":
        np.testing.assert_array_equal(np.load(out), expected)
    elif suffix == "npz":
        np.testing.assert_array_equal(np.load(out)["pe"], expected)
    elif suffix == "safetensors":
        from safetensors.numpy import load_file

        np.testing.assert_array_equal(load_file(str(out))["pe"], expected)
    elif suffix == "csv":
        np.testing.assert_allclose(np.loadtxt(out, delimiter=",", ndmin=2), expected, rtol=0, atol=0)
    else:
        data = json.loads(out.read_text())
        assert data["metadata"]["kind"] == "sinusoidal"
        np.testing.assert_array_equal(np.array(data["tensors"]["pe"]["data"], dtype=np.float32), expected)


def test_format_option_overrides_the_suffix(tmp_path):
    out = tmp_path / "table.bin"
    assert run(["generate", "-n", "8", "-d", "4", "-o", str(out), "--format", "npy"]).returncode == 0
    assert np.load(out).shape == (8, 4)


def test_no_overwrite_without_force(tmp_path):
    out = tmp_path / "pe.npy"
    out.write_bytes(b"precious")
    err = one_error_line(run(["generate", "-n", "8", "-d", "4", "-o", str(out)]))
    assert "exists; pass --force to overwrite" in err and str(out.name) in err
    assert out.read_bytes() == b"precious"
    assert run(["generate", "-n", "8", "-d", "4", "-o", str(out), "--force"]).returncode == 0
    assert np.load(out).shape == (8, 4)


def test_done_when_generate_then_check_exits_zero_with_every_property(tmp_path):
    out = tmp_path / "pe.safetensors"
    assert run(["generate", "--len", "512", "--dim", "128", "-o", str(out)]).returncode == 0
    proc = run(["check", str(out)])
    text = proc.stdout.decode()
    assert proc.returncode == 0, text + proc.stderr.decode()
    for prop in (
        "finite",
        "bounded",
        "unique",
        "constant-norm",
        "equidistant",
        "offset-invariant",
        "shift-linear",
        "symmetric",
        "decay",
        "matches-spec",
    ):
        assert prop in text, prop
    assert "FAIL" not in text


def test_done_when_compare_with_the_tf_tutorial_convention_differs(tmp_path):
    out = tmp_path / "pe.safetensors"
    assert run(["generate", "--len", "512", "--dim", "128", "-o", str(out)]).returncode == 0
    proc = run(["compare", str(out), "sinusoidal:preset=tf-tutorial", "--len", "512", "--dim", "128"])
    text = proc.stdout.decode()
    assert proc.returncode == 1, text
    assert "max abs difference" in text and " at (" in text
    assert "DIFFERENT" in proc.stderr.decode()  # the verdict line goes to stderr, like check's


def test_compare_same_table_exits_zero_and_json(tmp_path):
    out = tmp_path / "pe.npy"
    assert run(["generate", "-n", "300", "-d", "64", "-p", "preset=tensor2tensor", "-o", str(out)]).returncode == 0
    proc = run(["compare", str(out), "sinusoidal:preset=tensor2tensor", "--json"])
    assert proc.returncode == 0, proc.stdout
    data = json.loads(proc.stdout)
    (pe,) = data["tensors"]
    assert data["same"] is True and pe["max_abs"] == 0.0 and pe["shape_a"] == [300, 64] and pe["diagnosis"] is None


def test_compare_reports_the_worst_element(tmp_path):
    pe = make_encoding("sinusoidal", {"length": 100, "dim": 32}).array()
    pe[37, 5] += 0.25
    path = tmp_path / "edited.npy"
    np.save(path, pe)
    proc = run(["compare", str(path), "sinusoidal", "--json"])
    data = json.loads(proc.stdout)["tensors"][0]
    assert proc.returncode == 1
    assert data["max_abs_at"] == [37, 5] and abs(data["max_abs"] - 0.25) < 1e-6 and data["mismatched"] == 1


def test_check_seed_spec_shows_the_golden_numbers():
    proc = run(["check", "sinusoidal:preset=tf-tutorial", "--len", "5", "--dim", "6", "--verbose"])
    text = proc.stdout.decode()
    assert proc.returncode == 0, text
    for golden in ("0.9600", "1.7321", "2.5392"):  # distance, norm, and (in the details) the dot product
        assert golden in text, golden


def test_check_json_and_failure_exit_code(tmp_path):
    rng = np.random.default_rng(1)
    path = tmp_path / "learned.npy"
    np.save(path, rng.normal(0, 0.02, (200, 32)).astype(np.float32))
    proc = run(["check", str(path), "--expect", "sinusoidal", "--json"])
    assert proc.returncode == 1
    report = json.loads(proc.stdout)[0]
    status = {r["name"]: r["status"] for r in report["results"]}
    assert status["finite"] == "PASS" and status["constant-norm"] == "FAIL" and status["equidistant"] == "FAIL"
    assert "constant-norm" in report["failed"]
    proc = run(["check", str(path), "--require", "finite,unique"])
    assert proc.returncode == 0, proc.stdout


def test_check_unknown_required_property_is_bad_input(tmp_path):
    path = tmp_path / "pe.npy"
    assert run(["generate", "-n", "8", "-d", "4", "-o", str(path)]).returncode == 0
    err = one_error_line(run(["check", str(path), "--require", "finite,sparkly"]))
    assert "sparkly" in err


def test_export_bfloat16_safetensors_loads_in_safetensors(tmp_path):
    import ml_dtypes
    from safetensors import safe_open

    out = tmp_path / "pe.safetensors"
    proc = run(
        [
            "export",
            "sinusoidal",
            "--len",
            "64",
            "--dim",
            "32",
            "--dtype",
            "bfloat16",
            "-o",
            str(out),
            "--name",
            "position_embedding",
        ]
    )
    assert proc.returncode == 0, proc.stderr
    with safe_open(str(out), framework="numpy") as f:
        meta = f.metadata()
        got = f.get_tensor("position_embedding")
    assert meta["kind"] == "sinusoidal" and meta["dtype"] == "bfloat16" and meta["length"] == "64"
    exact = make_encoding("sinusoidal", {"length": 64, "dim": 32, "dtype": "float64"}).array()
    np.testing.assert_array_equal(got.view(np.uint16), exact.astype(ml_dtypes.bfloat16).view(np.uint16))


def test_export_bfloat16_npy_is_refused(tmp_path):
    err = one_error_line(
        run(["export", "sinusoidal", "-n", "8", "-d", "4", "--dtype", "bfloat16", "-o", str(tmp_path / "pe.npy")])
    )
    assert "bfloat16" in err and not (tmp_path / "pe.npy").exists()


def test_export_from_a_file_with_a_cast(tmp_path):
    src = tmp_path / "pe.safetensors"
    assert run(["generate", "-n", "16", "-d", "8", "--dtype", "float64", "-o", str(src)]).returncode == 0
    out = tmp_path / "pe16.npy"
    assert run(["export", str(src), "--dtype", "float16", "-o", str(out)]).returncode == 0
    np.testing.assert_array_equal(
        np.load(out),
        make_encoding("sinusoidal", {"length": 16, "dim": 8, "dtype": "float64"}).array().astype(np.float16),
    )


def test_bad_input_is_one_line_exit_two():
    cases = {
        ("check", "missing.npy"): "missing.npy: no such file",
        ("check", "sinusoidal:dim=4"): "--len",
        ("compare", "-", "-"): "only one source can be -",
        ("kinds", "nope"): "unknown encoding 'nope'",
    }

    def check(args):
        line = one_error_line(run(list(args)))
        assert cases[args] in line, line

    each(cases, check)


def test_pipeline_generate_into_check():
    gen = run(["generate", "--len", "256", "--dim", "64"])
    proc = run(["check", "-", "--expect", "sinusoidal", "--json"], input=gen.stdout)
    assert proc.returncode == 0, proc.stdout.decode()
    # what only `check` produces: a verdict per property, measured on the 256 x 64 table it was piped
    (report,) = json.loads(proc.stdout)
    assert report["kind"] == "sinusoidal" and report["ok"] is True and report["failed"] == []
    status = {r["name"]: r["status"] for r in report["results"]}
    assert {
        "finite",
        "bounded",
        "unique",
        "constant-norm",
        "equidistant",
        "offset-invariant",
        "shift-linear",
        "symmetric",
    } <= {name for name, st in status.items() if st == "PASS"}
    norm = next(r for r in report["results"] if r["name"] == "constant-norm")
    assert norm["detail"] == "every row has norm 5.6569"  # sqrt(64 / 2)
    # and a table without the properties fails with exit 1, naming them
    bad = load_npy(gen.stdout)
    bad[100] *= 1.5
    buf = io.BytesIO()
    np.save(buf, bad)
    proc = run(["check", "-", "--expect", "sinusoidal", "-q"], input=buf.getvalue())
    assert proc.returncode == 1
    assert "constant-norm" in proc.stderr.decode() + proc.stdout.decode()


def test_kinds_lists_every_kind_and_rope_parameters():
    from posenc_cli.encodings import KINDS, get_kind

    out = run(["kinds"]).stdout.decode()
    for kind in KINDS:
        assert kind in out
    detail = run(["kinds", "rope", "--json"])
    info = json.loads(detail.stdout)
    names = {p["name"] for p in info["parameters"]}
    assert {f.name for f in get_kind("rope").param_fields()} - {"length"} <= names
    assert all("default" in p for p in info["parameters"])


def test_check_refuses_tables_it_cannot_judge(tmp_path):
    path = tmp_path / "table.npy"
    ints = np.arange(20).reshape(4, 5)
    cases = [
        ("int64 --expect", ints, ["--expect", "sinusoidal"], "has int64 values; this command needs floating values"),
        ("int64", ints, [], "no property can be measured on tensor 'pe' (int64 (4, 5))"),
        ("1-D", np.arange(5.0), [], "is 1-D (shape (5,))"),
    ]

    def check(case):
        _, array, args, needle = case
        np.save(path, array)
        line = one_error_line(run(["check", str(path), *args]))
        assert needle in line and str(path) in line, line

    each(cases, check)


def test_check_all_zero_table_prints_no_warnings(tmp_path):
    path = tmp_path / "zeros.npy"
    np.save(path, np.zeros((64, 8), np.float32))
    proc = run(["check", str(path), "--expect", "sinusoidal"])
    assert proc.returncode == 1
    assert "Warning" not in proc.stderr.decode() and "required properties failed" in proc.stderr.decode()


def test_compare_counts_ulps_in_the_coarser_dtype(tmp_path):
    """A float32 table against the float64 reference is correctly rounded: 0 ulps everywhere."""
    path = tmp_path / "pe.npy"
    assert run(["generate", "-n", "2000", "-d", "64", "-p", "offset=1000000", "-o", str(path)]).returncode == 0
    data = json.loads(run(["compare", str(path), "sinusoidal:dtype=float64,offset=1000000", "--json"]).stdout)
    assert data["same"] is True and data["tensors"][0]["max_ulp"] == 0.0
    one_ulp_off = np.load(path)
    one_ulp_off[5, 7] = np.nextafter(one_ulp_off[5, 7], np.float32(2))
    np.save(path, one_ulp_off)
    data = json.loads(run(["compare", str(path), "sinusoidal:dtype=float64,offset=1000000", "--json"]).stdout)
    assert data["tensors"][0]["max_ulp"] == 1.0
