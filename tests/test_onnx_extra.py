"""Without the onnx extra: an .onnx source is one line naming the extra, exit 2 (runs whether or not it is
installed: the import is blocked in the child process)."""

from __future__ import annotations

import subprocess
import sys

from .conftest import ROOT, clean_env


def test_without_the_extra_one_line_names_it(tmp_path):
    (tmp_path / "m.onnx").write_bytes(b"\x08\x07")
    code = (
        "import sys; sys.modules['onnx'] = None\n"
        "from posenc_cli.cli import main\n"
        f"sys.argv = ['posenc', 'export', {str(tmp_path / 'm.onnx')!r}, '-o', {str(tmp_path / 'o.npz')!r}]\n"
        "main()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, env=clean_env(), cwd=ROOT, timeout=60)
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert err.count("\n") == 1 and "pip install 'posenc-cli[onnx]'" in err, err
