"""--hf-config from the command line: a file, a model directory or stdin; --layer-type; --all-layer-types writing
one table per attention type (and check reading them back group by group); kinds --hf-config; M-RoPE grids.

Values are held against the golden arrays of tests/data/golden (transformers' own rotary classes), so these
tests check the wiring, not the reader again: the right layer type reaches the right tensors.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from posenc_cli.formats import read_table

from .conftest import ROOT, cli
from .each import each

CONFIGS = ROOT / "tests" / "data" / "configs"


def golden_inv_freq(family: str, layer_type: str) -> np.ndarray:
    """inv_freq of ``layer_type`` as transformers' own rotary class computed it (tests/data/golden)."""
    data = json.loads((ROOT / "tests" / "data" / "golden" / f"hf_{family}.json").read_text())
    return np.asarray(data["layer_types"][layer_type]["inv_freq"], dtype=np.float64)


def test_config_file_directory_and_stdin_give_the_same_tables(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    shutil.copy(CONFIGS / "llama.json", model / "config.json")
    outs = []
    for i, (src, stdin) in enumerate(
        [(str(CONFIGS / "llama.json"), b""), (str(model), b""), ("-", (CONFIGS / "llama.json").read_bytes())]
    ):
        out = tmp_path / f"r{i}.safetensors"
        code, _, err = cli(["generate", "--hf-config", src, "--len", "32", "-o", str(out)], input=stdin)
        assert code == 0, err
        outs.append(read_table(str(out)))
    for t in outs[1:]:
        assert t.metadata == outs[0].metadata
        for name in ("cos", "sin", "inv_freq"):
            np.testing.assert_array_equal(t.tensors[name], outs[0].tensors[name])
    assert outs[0].metadata["scaling"] == "llama3" and outs[0].metadata["base"] == "500000.0"


def test_layer_type_selects_the_tables_and_missing_lists_the_choices(tmp_path):
    cfg = str(CONFIGS / "gemma3_text.json")
    code, _, err = cli(["generate", "--hf-config", cfg, "--len", "8", "-o", str(tmp_path / "x.safetensors")])
    assert code == 2 and "--layer-type" in err and "full_attention, sliding_attention" in err, err
    bases = {}
    for lt in ("full_attention", "sliding_attention"):
        out = tmp_path / f"{lt}.safetensors"
        code, _, err = cli(["generate", "--hf-config", cfg, "--layer-type", lt, "--len", "8", "-o", str(out)])
        assert code == 0, err
        table = read_table(str(out))
        bases[lt] = float(table.metadata["base"])
    assert bases == {"full_attention": 1_000_000.0, "sliding_attention": 10_000.0}  # Gemma 3's two bases
    code, _, err = cli(["generate", "--hf-config", cfg, "--layer-type", "global", "--len", "8", "-o", "-"])
    assert code == 2 and "unknown --layer-type 'global'" in err and "sliding_attention" in err


def test_all_layer_types_writes_one_table_per_type_and_check_reads_each(tmp_path):
    out = tmp_path / "gemma3.safetensors"
    code, _, err = cli(
        [
            "generate",
            "--hf-config",
            str(CONFIGS / "gemma3_text.json"),
            "--all-layer-types",
            "--len",
            "64",
            "-o",
            str(out),
        ]
    )
    assert code == 0, err
    table = read_table(str(out))
    assert sorted(table.tensors) == sorted(
        f"{lt}.{n}" for lt in ("full_attention", "sliding_attention") for n in ("cos", "sin", "inv_freq")
    )
    assert table.metadata["posenc_groups"] == "full_attention,sliding_attention"
    assert table.metadata["sliding_attention.base"] == "10000.0"
    np.testing.assert_allclose(
        table.tensors["sliding_attention.inv_freq"], golden_inv_freq("gemma3_text", "sliding_attention"), rtol=2**-22
    )
    code, out_text, err = cli(["check", str(out), "--json"])
    assert code == 0, err
    reports = json.loads(out_text)
    assert [r["source"] for r in reports] == [f"{out} [full_attention]", f"{out} [sliding_attention]"]
    assert all(r["ok"] and "matches-spec" in r["required"] for r in reports)
    # a changed value in one group fails that group's matches-spec only
    bad = {k: np.array(v) for k, v in table.tensors.items()}
    bad["sliding_attention.sin"][5, 3] += 0.01
    from posenc_cli.formats import ArrayTensor, write_table

    tampered = tmp_path / "tampered.safetensors"
    write_table(str(tampered), {k: ArrayTensor(k, v) for k, v in bad.items()}, table.metadata, "safetensors")
    code, out_text, _ = cli(["check", str(tampered), "--json"])
    assert code == 1
    assert [r["ok"] for r in json.loads(out_text)] == [True, False]


def test_all_layer_types_skips_nope_layers_and_says_so(tmp_path):
    out = tmp_path / "c2.safetensors"
    code, _, err = cli(
        ["generate", "--hf-config", str(CONFIGS / "cohere2.json"), "--all-layer-types", "--len", "16", "-o", str(out)]
    )
    assert code == 0, err
    assert "full_attention: applies no position encoding" in err
    assert sorted(read_table(str(out)).tensors) == [
        "sliding_attention.cos",
        "sliding_attention.inv_freq",
        "sliding_attention.sin",
    ]


def test_all_layer_types_refusals(tmp_path_factory):
    each(
        [
            (["--all-layer-types", "-n", "4", "-d", "8"], "--all-layer-types cannot apply"),
            (["--all-layer-types", "--hf-config", "{cfg}", "-o", "{tmp}/x.npy"], "cannot hold"),
            (
                ["--all-layer-types", "--hf-config", "{cfg}", "--layer-type", "full_attention", "-o", "{tmp}/x.npz"],
                "--layer-type cannot apply",
            ),
        ],
        lambda c: _all_layer_types_refusals(tmp_path_factory.mktemp("case"), c[0], c[1]),
    )


def _all_layer_types_refusals(tmp_path, args, needle):
    args = [a.replace("{cfg}", str(CONFIGS / "gemma3_text.json")).replace("{tmp}", str(tmp_path)) for a in args]
    code, _, err = cli(["generate", *args])
    assert code == 2 and needle in err, err


def test_kinds_hf_config_says_what_was_read_and_from_where():
    code, out, _ = cli(["kinds", "--hf-config", str(CONFIGS / "gemma3_text.json"), "--json"])
    assert code == 0
    reports = json.loads(out)
    assert [r["layer_type"] for r in reports] == ["full_attention", "sliding_attention"]
    assert reports[1]["base"] == {"value": 10000.0, "from": reports[1]["base"]["from"]}
    code, text, _ = cli(["kinds", "--hf-config", str(CONFIGS / "cohere.json")])
    assert code == 0 and "layout" in text.decode() and "interleaved" in text.decode()
    for line in text.decode().splitlines():
        assert len(line) <= 80, line


def test_mrope_text_and_image_grid_from_the_command_line(tmp_path):
    cfg = str(CONFIGS / "qwen2_vl.json")
    out = tmp_path / "m.safetensors"
    code, _, err = cli(
        ["generate", "--hf-config", cfg, "--len", "24", "-p", "grid=1x4x4,text_offset=2", "-o", str(out)]
    )
    assert code == 0, err
    table = read_table(str(out))
    assert table.metadata["kind"] == "mrope" and table.metadata["grid"] == "1x4x4"
    code, _, err = cli(["check", str(out), "-q"])
    assert code == 0, err
    text_only = tmp_path / "t.safetensors"
    assert cli(["generate", "--hf-config", cfg, "--len", "24", "-o", str(text_only)])[0] == 0
    plain = read_table(str(text_only)).tensors
    # the text before the image is the same in both; the image rows differ (2-D positions)
    np.testing.assert_array_equal(table.tensors["cos"][:2], plain["cos"][:2])
    assert not np.array_equal(table.tensors["cos"][2:18], plain["cos"][2:18])


def test_hostile_config_from_the_command_line_is_one_line(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    zero = tmp_path / "zero.json"
    zero.write_text(json.dumps({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 0}))
    for path in (deep, zero):
        code, out, err = cli(["generate", "--hf-config", str(path), "-o", str(tmp_path / "o.npy")])
        assert code == 2 and out == b"" and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert not (tmp_path / "o.npy").exists()
    assert "num_attention_heads" in cli(["generate", "--hf-config", str(zero), "-o", "-"])[2]


def test_unknown_model_type_is_refused_and_read_as_reads_it(tmp_path):
    cfg = tmp_path / "c.json"
    cfg.write_text(
        json.dumps(
            {
                "model_type": "fancynet",
                "hidden_size": 64,
                "num_attention_heads": 4,
                "max_position_embeddings": 16,
                "rope_theta": 1234.0,
            }
        )
    )
    code, _, err = cli(["generate", "--hf-config", str(cfg), "-o", str(tmp_path / "o.safetensors")])
    assert code == 2 and "unknown model_type 'fancynet'" in err and len(err.strip().splitlines()) == 1, err
    code, _, err = cli(
        ["generate", "--hf-config", str(cfg), "--read-as", "llama", "-o", str(tmp_path / "o.safetensors")]
    )
    assert code == 0, err
    assert read_table(str(tmp_path / "o.safetensors")).metadata["base"] == "1234.0"


def test_path_of_the_golden_file_exists():
    assert Path(ROOT / "tests" / "data" / "golden" / "hf_gemma3_text.json").exists()
