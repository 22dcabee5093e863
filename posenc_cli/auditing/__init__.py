"""``posenc audit``: everything checkable about a model's positions, each checked against HF's reference.

The one door is :func:`posenc_cli.api.audit` (``posenc_cli.audit(...)``); this package holds its parts:

- :mod:`.discover`: what a SOURCE holds (a model directory, a config.json, a GGUF or ONNX file, a Hub id);
- :mod:`.hub`: Hub ids resolved from the local Hugging Face cache, and the small downloads ``--download`` allows;
- :mod:`.differences`: the largest difference of two tables, read block by block, and where it lies (pictures);
- :mod:`.run`: one row per artifact x layer type x engine, each checked against the reference;
- :mod:`.report`: the typed report (:class:`AuditReport`, :class:`AuditRow`) and its versioned JSON
  (``schema.json`` beside this file).

Rendering lives in :mod:`posenc_cli.render` (terminal) and :mod:`posenc_cli.report_html` (Markdown, HTML).
The package is not named ``audit`` so that ``posenc_cli.audit`` stays the function.
"""
