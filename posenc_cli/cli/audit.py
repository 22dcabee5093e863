"""`posenc audit`: everything about a model's positions against HF's tables, in one table and reports."""

from typing import Any

from ..errors import ExitCode
from . import _options as o
from ._common import print_json, progress_enabled

DESCRIPTION = """\
Check everything about a model's positions against HF transformers' tables:
each layer type's table, the learned table in the weights, each engine's
table (--engine NAME,NAME; default: every engine), every GGUF and ONNX file in
the directory (--against DIR or org/name for conversions kept elsewhere).
SOURCE is a model directory, a config.json, a GGUF or ONNX file, or a Hub id
org/name[@revision] from the local Hugging Face cache (--download fetches
config.json and the position tensors only, never whole weights).

One row per artifact x layer type x engine: verdict, largest |difference| at
--len (default: the model's context), why. --json, --markdown FILE and
--html FILE write the same report for machines, CI summaries and people
(--json-details: with the pictures' grids of each diverging row).

Exit 0 when every row agrees, 1 when one differs (DIFFER), a table fails a
required property (FAILED: a property of the table itself; rows the model's own
arithmetic repeats are expected of it) or nothing was compared, 2 on bad input,
a file that cannot be read, or a table posenc refuses (REFUSED, named in one
line): each its own row, the others are still checked.

Examples:

  posenc audit ./Llama-3.1-8B
  posenc audit meta-llama/Llama-3.1-8B --engine vllm,llamacpp
  posenc audit model.gguf --against ./hf-model --html audit.html
  posenc audit ./dinov2 --image-size 320 --image-size 448x308 --engine timm"""


def run(
    source: o.Model = None,
    against: o.Against = None,
    engine: o.Engine = None,
    length: o.Length = None,
    n_ctx: o.NCtx = None,
    max_model_len: o.MaxModelLen = None,
    download: o.Download = False,
    json_out: o.Json = False,
    json_details: o.JsonDetails = False,
    markdown: o.Markdown = None,
    html: o.Html = None,
    force: o.Force = False,
    verbose: o.Verbose = False,
    max_bytes: o.MaxBytes = None,
    image_size: o.ImageSizes = None,
    quiet: o.Quiet = 0,
) -> int:
    from ..api import audit
    from ..errors import ParameterError
    from ..render import audit_report
    from ..report_html import refuse_existing, write_report

    if source is None:
        raise ParameterError("audit needs a SOURCE: a model directory, a config.json, a GGUF or ONNX file, or org/name")
    if force and markdown is None and html is None:
        raise ParameterError("--force cannot apply: audit writes no file without --markdown or --html; drop it")
    for dest in (markdown, html):
        refuse_existing(dest, force)
    import os

    name = os.path.basename(source.rstrip("/")) or source
    with _LateProgress(f"auditing {name}", progress_enabled(quiet)) as on_progress:
        report = audit(
            source,
            against=against,
            engine=engine,
            length=length,
            n_ctx=n_ctx,
            max_model_len=max_model_len,
            download=download,
            max_bytes=max_bytes,
            on_progress=on_progress,
            image_size=image_size,
        )
    from . import _spelling

    report = report.respelled(_spelling(["audit"]))  # --len, not length=
    if markdown is not None:
        write_report(report, markdown, "markdown", force=force)
    if html is not None:
        write_report(report, html, "html", force=force)
    if json_out or json_details:
        print_json(report.to_json(details=json_details))
    else:
        audit_report(report, quiet=quiet, verbose=verbose)
    return int(report.exit_code) if report.exit_code else ExitCode.OK


class _LateProgress:
    """A progress bar on stderr that appears only once the audit has run for :data:`AFTER` seconds (a quick audit
    prints nothing but its report)."""

    AFTER = 1.0

    def __init__(self, description: str, enabled: bool) -> None:
        import contextlib
        import time

        self.description, self.enabled = description, enabled
        self.start = time.monotonic()
        self.stack = contextlib.ExitStack()
        self.advance: Any = None

    def __enter__(self):
        return self.step

    def step(self, what: str, done: int, total: int) -> None:
        import time

        if not self.enabled:
            return
        if self.advance is None:
            if time.monotonic() - self.start < self.AFTER:
                return
            from ..render import progress_bar

            self.advance = self.stack.enter_context(progress_bar(self.description, total, True))
            self.advance(done, total)
            return
        self.advance(1, total)

    def __exit__(self, *exc) -> None:
        self.stack.close()
