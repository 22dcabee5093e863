"""The CI conventions of docs/ci.md, run: the GitHub Actions workflow is parsed and its commands run as a runner
would (its env, $GITHUB_STEP_SUMMARY, the report files the later steps read), and the hooks of
.pre-commit-hooks.yaml run on good and broken tables, by their own entry and through pre-commit's try-repo
where pre-commit is installed (it is not a test extra: try-repo installs the hook's environment from the
network)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, copy_checkout, inproc, link_checkout

yaml = pytest.importorskip("yaml", reason="the CI tests parse YAML: pip install pyyaml (in the test extra)")

CI_DOC = ROOT / "docs" / "ci.md"
HOOKS = ROOT / ".pre-commit-hooks.yaml"


def workflow() -> dict:
    text = CI_DOC.read_text()
    block = re.search(r"<!-- workflow:begin -->\n```yaml\n(.*?)```\n<!-- workflow:end -->", text, re.S)
    assert block, "docs/ci.md holds the workflow between <!-- workflow:begin --> and <!-- workflow:end -->"
    return yaml.safe_load(block.group(1))


def bash(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    bindir = str(Path(sys.executable).parent)
    full = {k: v for k, v in os.environ.items() if not k.startswith("_POSENC")}
    full.update({"PATH": f"{bindir}:{full['PATH']}", "PYTHONPATH": str(ROOT), "NO_COLOR": "1", **env})
    return subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=cwd, env=full, capture_output=True,
                          timeout=300)  # fmt: skip


def entry_run(entry: list[str], args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """A hook's entry with ``args``, as pre-commit runs it (no shell): a ``posenc`` entry runs in this process."""
    assert entry[0] == "posenc", entry
    return inproc([*entry[1:], *args], cwd=cwd)


def test_the_workflow_audits_uploads_and_summarises(tmp_path, checkout):
    wf = workflow()
    (job,) = wf["jobs"].values()
    steps = job["steps"]
    runs = [s for s in steps if "run" in s]
    (install,) = [s for s in runs if s["run"].startswith("pip install")]
    extras = re.search(r"posenc-cli\[([\w,]+)\]", install["run"]).group(1).split(",")
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert all(re.search(rf"^{e} = \[", pyproject, re.M) for e in extras), extras
    (audit,) = [s for s in runs if s["run"].startswith("posenc audit")]
    args = shlex.split(audit["run"])
    html, md = args[args.index("--html") + 1], args[args.index("--markdown") + 1]
    (upload,) = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact")]
    assert upload["with"]["path"] == html and upload.get("if") == "always()"
    (summary,) = [s for s in runs if "GITHUB_STEP_SUMMARY" in s["run"]]
    assert summary.get("if") == "always()" and md in summary["run"]
    # run every command after the install, in order, as the runner would
    repo = link_checkout(checkout, tmp_path / "repo")
    step_summary = tmp_path / "step_summary.md"
    step_summary.write_text("earlier step\n")
    env = {k: str(v) for k, v in job.get("env", {}).items()} | {"GITHUB_STEP_SUMMARY": str(step_summary)}
    assert env["MODEL"] == "docs/examples/llama-3.1-8b.json"
    # the model is the workflow's setting a user edits: a small published config every engine loads (exllamav3 does
    # not load Olmo2ForCausalLM: a divergence), its context cut to 4096 positions, keeps the suite quick
    small = json.loads((ROOT / "tests/data/configs/published/qwen3-0.6b.json").read_text())
    small["max_position_embeddings"] = 4096
    (tmp_path / "model.json").write_text(json.dumps(small))
    env["MODEL"] = str(tmp_path / "model.json")
    for step in runs:
        if step is install:
            continue
        proc = bash(step["run"], repo, env)
        assert proc.returncode == 0, (step["run"], proc.stderr.decode())
    text = step_summary.read_text()
    assert text.startswith("earlier step\n## posenc audit:")  # appended, not replaced
    assert "| artifact | layer type | engine | verdict |" in text
    page = (repo / html).read_text()
    assert page.startswith("<!DOCTYPE html>") and 'id="verdicts"' in page


def test_the_workflow_step_fails_the_job_when_a_row_differs(tmp_path, checkout):
    wf = workflow()
    (job,) = wf["jobs"].values()
    (audit,) = [s for s in job["steps"] if s.get("run", "").startswith("posenc audit")]
    repo = link_checkout(checkout, tmp_path / "repo")
    (repo / "bad.json").write_text((repo / "docs/examples/phi-3.5-mini.json").read_text())
    # the step is one command (no pipe, list or redirection that could hide its exit code): its exit code is the
    # step's, which fails the job; run in this process (the workflow test above runs the steps in bash)
    line = audit["run"].replace('"$MODEL"', "bad.json")
    assert not set(line) & set("|&;<>`$()"), audit["run"]
    words = shlex.split(line)
    assert words[0] == "posenc"
    proc = inproc([*words[1:], "--len", "1024", "--engine", "hf,mlx"], cwd=repo)  # the exit code is the property
    assert proc.returncode == 1, proc.stderr.decode()
    assert "differ" in (repo / "posenc-audit.md").read_text()


# ----- pre-commit hooks ---------------------------------------------------------------------------------------
def hooks() -> dict[str, dict]:
    return {h["id"]: h for h in yaml.safe_load(HOOKS.read_text())}


def tables(where: Path) -> tuple[str, str]:
    """A table posenc wrote, and a copy whose bytes were edited after (its metadata still says the original)."""
    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file

    import posenc_cli

    good, bad = where / "pe.safetensors", where / "bad.safetensors"
    posenc_cli.write(str(good), posenc_cli.generate("sinusoidal", length=64, dim=16))
    with safe_open(str(good), "np") as f:
        meta = f.metadata()
    t = load_file(str(good))
    t["pe"] = t["pe"].copy()
    t["pe"][3, 3] = np.float32(0.5)
    save_file(t, str(bad), metadata=meta)
    return good.name, bad.name


def test_the_check_hook_passes_good_tables_and_fails_edited_ones(tmp_path):
    hook = hooks()["posenc-check"]
    assert hook["language"] == "python" and hook["entry"].split()[:2] == ["posenc", "check"]
    files = re.compile(hook["files"])
    assert all(files.search(n) for n in ("a.npy", "t/b.safetensors", "c.npz"))
    assert not any(files.search(n) for n in ("README.md", "config.json", "model.gguf"))
    good, bad = tables(tmp_path)
    entry = shlex.split(hook["entry"])
    assert entry_run(entry, [good], tmp_path).returncode == 0
    proc = entry_run(entry, [good, bad], tmp_path)
    assert proc.returncode == 1 and b"bad.safetensors: required properties failed" in proc.stderr


def test_the_audit_hook_audits_the_model_in_args(tmp_path):
    hook = hooks()["posenc-audit"]
    assert hook["pass_filenames"] is False and re.search(hook["files"], "models/x/config.json")
    entry = shlex.split(hook["entry"])
    ok = entry_run(entry, [str(ROOT / "tests/data/configs/published/qwen3-0.6b.json"), "--len", "1024"], tmp_path)
    assert ok.returncode == 0, ok.stderr.decode()
    differs = entry_run(entry, [str(ROOT / "docs/examples/phi-3.5-mini.json"), "--len", "1024"], tmp_path)
    assert differs.returncode == 1


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("pre-commit") is None and not (Path(sys.executable).parent / "pre-commit").exists(),
                    reason="pre-commit is not installed (not a test extra: try-repo installs the hook from the network)")  # fmt: skip
def test_the_check_hook_through_pre_commit_try_repo(tmp_path):
    """pre-commit's own try-repo: it clones this repository, builds the hook's environment (pip install of the
    checkout) and runs the hook on the files given."""
    exe = shutil.which("pre-commit") or str(Path(sys.executable).parent / "pre-commit")
    repo = copy_checkout(tmp_path / "repo")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "x"]):
        subprocess.run([*git, *args], cwd=repo, check=True, capture_output=True)
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run([*git, "init", "-q"], cwd=work, check=True)
    good, bad = tables(work)
    subprocess.run([*git, "add", "-A"], cwd=work, check=True)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "NO_COLOR": "1"}
    run = [exe, "try-repo", str(repo), "posenc-check", "--files"]
    ok = subprocess.run([*run, good], cwd=work, env=env, capture_output=True, timeout=900)
    assert ok.returncode == 0, ok.stdout.decode()[-3000:]
    failed = subprocess.run([*run, good, bad], cwd=work, env=env, capture_output=True, timeout=900)
    assert failed.returncode == 1 and b"bad.safetensors: required properties failed" in failed.stdout
