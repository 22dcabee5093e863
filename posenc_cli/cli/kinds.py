"""`posenc kinds`: the registry of encoding kinds, for people and machines."""

from ..errors import ExitCode
from . import _options as o

DESCRIPTION = """\
List the encoding kinds, or show one kind's tensors, parameters, presets and
references; with a model config (KIND may be its path, or give --hf-config),
what the config sets and from which key; with a GGUF file, what llama.cpp reads
from which key or tensor and the choices it makes at --n-ctx."""


def run(
    kind: o.KindArg = None,
    hf_config: o.HfConfig = None,
    layer_type: o.LayerType = None,
    read_as: o.ReadAs = None,
    engines: o.EnginesTable = False,
    max_model_len: o.MaxModelLen = None,
    n_ctx: o.NCtx = None,
    json_out: o.Json = False,
    quiet: o.Quiet = 0,
) -> int:
    from ..api import describe
    from ..render import description_report

    found = describe(
        kind,
        hf_config=hf_config,
        layer_type=layer_type,
        read_as=read_as,
        engines=engines,
        max_model_len=max_model_len,
        n_ctx=n_ctx,
    )
    description_report(found, json_out=json_out, quiet=quiet, spell=o.FLAGS.get)
    return ExitCode.OK
