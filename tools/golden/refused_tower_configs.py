"""The config.json of model types whose vision tower posenc refuses (RADIO, Molmo2's; PVT, refused when this was written, is read since), as transformers builds them
from its class defaults: tests/data/configs/refused_towers/<type>.json, read by tests/test_audit.py (an audit names the refusal
in one line). Run once in the side environment (transformers 5.24)::

    /work/side/venv/bin/python tools/golden/refused_tower_configs.py
"""

from __future__ import annotations

import json
from pathlib import Path

import transformers
from transformers import AutoConfig

OUT = Path(__file__).resolve().parents[2] / "tests" / "data" / "configs" / "refused_towers"

for model_type in ("radio", "molmo2"):
    data = json.loads(AutoConfig.for_model(model_type).to_json_string())
    assert data["transformers_version"] == transformers.__version__ == "5.24.0"
    (OUT / f"{model_type}.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    print(model_type, "->", OUT / f"{model_type}.json")
