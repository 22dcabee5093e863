"""Readers that turn a model's own description (config.json, weights, GGUF, ONNX) into kind specs, and engines' rules as data."""
