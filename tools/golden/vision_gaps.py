"""Goldens of the vision tables read last: Qwen3-VL's learned grid, BEiT's bias at other image sizes, and the
video tables at other frame counts, each made by the model's own code (transformers 5.24, torch 2.13), run once.

    PYTHONPATH=/work/side/tvstub /work/side/venv/bin/python tools/golden/vision_gaps.py tests/data

Writes tests/data/vision/gaps_goldens.npz (key ``model|size|what``; a size the model's own code refuses has key
``...|refused``, the error it raised) and the tiny models it made:

* ``qwen3_vl_vision``, ``qwen3_5_vision`` (towers) and ``qwen3_vl`` (the full model, its tower under ``model.visual``):
  tests/data/models/vision_<type>/. A patch grid ``HxW`` (``grid_thw = [[1, H, W]]``, flattened patches of zeros),
  the patch projection zeroed, so that what the first block gets is ``pos_embeds`` alone, caught by a forward
  pre-hook on ``blocks[0]`` (Qwen3VLVisionModel.forward, qwen3_vl/modeling_qwen3_vl.py l.686-696), with the
  ``position_embeddings`` (cos, sin) its rotary gives the blocks (keys ``...|cos``, ``...|sin``).
* BEiT and Data2Vec-Vision (the committed tests/data/vision/models/tiny_beit and tiny_data2vec_vision, and a
  BEiT made here with a non-square native grid, tiny_beit_rect): at an image size ``HxW`` (pixels), the bias each
  ``*RelativePositionBias`` module returns in the model's forward (a forward hook; ``what`` is the weight's name)
  and the index ``generate_relative_position_index`` gives for ``(H // patch, W // patch)``.
* PVT (tests/data/models/vision_pvt): each stage's rows at an image size, key ``pvt|HxW|stageK``.
* ViViT and TimeSformer (the committed tests/data/models/vision_vivit and vision_timesformer): at ``F`` frames (and
  an image size), the rows the embeddings add (the patch projection and class token zeroed), key
  ``vivit|f5|rows`` or ``timesformer|f5@24x16|rows``.
"""

import sys
from pathlib import Path

import numpy as np
import torch
import transformers as tf

QWEN_GRIDS = [(6, 6), (8, 8), (4, 4), (8, 12), (10, 6), (2, 8), (12, 4), (2, 2), (5, 6)]
BEIT_SIZES = [None, (12, 12), (8, 12), (6, 10), (4, 2), (2, 2), (9, 9), (1, 8), (8, 1)]
VIVIT_FRAMES = [4, 5, 2, 6, 3, 1]
TIMESFORMER = [(3, None), (2, None), (5, None), (6, None), (1, None), (5, (24, 16)), (4, (8, 24))]


def _error(exc: Exception) -> np.ndarray:
    return np.array(f"{type(exc).__name__}: {exc}"[:300])


def _qwen(make, key: str, root: Path, golden: dict, tower_of=lambda m: m) -> None:
    torch.manual_seed(0)
    model = make().eval()
    tower = tower_of(model)
    with torch.no_grad():
        tower.pos_embed.weight.normal_(std=0.5)
    out = root / "models" / f"vision_{key}"
    model.save_pretrained(out)
    for extra in ("generation_config.json",):
        (out / extra).unlink(missing_ok=True)
    cfg = tower.config
    per = cfg.in_channels * cfg.temporal_patch_size * cfg.patch_size**2
    with torch.no_grad():
        tower.patch_embed.proj.weight.zero_()
        tower.patch_embed.proj.bias.zero_()
        for h, w in QWEN_GRIDS:
            seen = {}

            def catch(mod, args, kwargs):
                seen.setdefault("x", args[0] if args else kwargs["hidden_states"])
                seen.setdefault("rope", kwargs.get("position_embeddings"))

            hook = tower.blocks[0].register_forward_pre_hook(catch, with_kwargs=True)
            try:
                tower(torch.zeros(h * w, per), grid_thw=torch.tensor([[1, h, w]]))
                golden[f"{key}|{h}x{w}|rows"] = seen["x"].numpy().astype(np.float32)
                cos, sin = seen["rope"]  # what the tower's rotary gives its blocks (Qwen3VLVisionModel.forward l.697)
                golden[f"{key}|{h}x{w}|cos"] = cos.numpy().astype(np.float32)
                golden[f"{key}|{h}x{w}|sin"] = sin.numpy().astype(np.float32)
            except Exception as exc:  # the tower's own code refuses this grid
                golden[f"{key}|{h}x{w}|refused"] = _error(exc)
            finally:
                hook.remove()


def _qwen3_vl_vision() -> torch.nn.Module:
    return tf.Qwen3VLVisionModel(tf.Qwen3VLVisionConfig(
        depth=1, hidden_size=8, num_heads=2, intermediate_size=16, patch_size=4, temporal_patch_size=1,
        spatial_merge_size=2, num_position_embeddings=36, out_hidden_size=8, deepstack_visual_indexes=[]))


def _qwen3_5_vision() -> torch.nn.Module:
    return tf.Qwen3_5VisionModel(tf.Qwen3_5VisionConfig(
        depth=1, hidden_size=8, num_heads=2, intermediate_size=16, patch_size=4, temporal_patch_size=1,
        spatial_merge_size=2, num_position_embeddings=36, out_hidden_size=8))


def _qwen3_vl() -> torch.nn.Module:
    return tf.Qwen3VLModel(tf.Qwen3VLConfig(
        vision_config=dict(depth=1, hidden_size=8, num_heads=2, intermediate_size=16, patch_size=4,
                           temporal_patch_size=1, spatial_merge_size=2, num_position_embeddings=64, out_hidden_size=8,
                           deepstack_visual_indexes=[]),
        text_config=dict(vocab_size=32, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                         num_key_value_heads=1, head_dim=8, intermediate_size=16,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 1, 1]})))


def _beit(path: Path, key: str, golden: dict) -> None:
    cls = tf.AutoModel
    model = cls.from_pretrained(path).eval()
    cfg = model.config
    biases = [(n, m) for n, m in model.named_modules() if type(m).__name__.endswith("RelativePositionBias")]
    names = {n: f"{n}.relative_position_bias_table" for n, _ in biases}
    native = cfg.image_size if isinstance(cfg.image_size, (list, tuple)) else (cfg.image_size, cfg.image_size)
    for size in BEIT_SIZES:
        h, w = native if size is None else size
        label = "native" if size is None else f"{h}x{w}"
        got = {}
        hooks = [m.register_forward_hook(lambda mod, args, out, n=n: got.setdefault(n, out)) for n, m in biases]
        try:
            with torch.no_grad():
                model(torch.zeros(1, 3, h, w))
            for n, _ in biases:
                golden[f"{key}|{label}|{names[n]}"] = got[n][0].numpy().astype(np.float32)
            window = (h // cfg.patch_size, w // cfg.patch_size)
            golden[f"{key}|{label}|index"] = biases[0][1].generate_relative_position_index(window).numpy()
            # the same with interpolate_pos_encoding (its second resize is to the same size)
            got.clear()
            with torch.no_grad():
                model(torch.zeros(1, 3, h, w), interpolate_pos_encoding=True)
            for n, _ in biases:
                golden[f"{key}|{label}|{names[n]}|interpolate_pos_encoding"] = got[n][0].numpy().astype(np.float32)
        except Exception as exc:
            golden[f"{key}|{label}|refused"] = _error(exc)
        finally:
            for hk in hooks:
                hk.remove()


def _beit_rect(root: Path) -> Path:
    torch.manual_seed(1)
    cfg = tf.BeitConfig(image_size=[8, 12], patch_size=2, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=8, use_absolute_position_embeddings=False, use_relative_position_bias=True)
    model = tf.BeitModel(cfg).eval()
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith("relative_position_bias_table"):
                p.normal_(std=0.5)
    out = root / "vision" / "models" / "tiny_beit_rect"
    model.save_pretrained(out)
    return out


def _vivit(root: Path, golden: dict) -> None:
    model = tf.VivitModel.from_pretrained(root / "models" / "vision_vivit", add_pooling_layer=False).eval()
    e = model.embeddings
    with torch.no_grad():
        e.cls_token.zero_()
        e.patch_embeddings.projection.weight.zero_()
        e.patch_embeddings.projection.bias.zero_()
        for frames in VIVIT_FRAMES:
            for interp in (False, True):
                key = f"vivit|f{frames}" + ("|interpolate_pos_encoding" if interp else "")
                try:
                    golden[key + "|rows"] = e(torch.zeros(1, frames, 3, 16, 16), interpolate_pos_encoding=interp)[0]
                except Exception as exc:
                    golden[key + "|refused"] = _error(exc)


def _timesformer(root: Path, golden: dict) -> None:
    model = tf.TimesformerModel.from_pretrained(root / "models" / "vision_timesformer").eval()
    e = model.embeddings
    with torch.no_grad():
        e.cls_token.zero_()
        e.patch_embeddings.projection.weight.zero_()
        e.patch_embeddings.projection.bias.zero_()
        for frames, size in TIMESFORMER:
            h, w = size or (16, 16)
            key = f"timesformer|f{frames}" + (f"@{h}x{w}" if size else "")
            try:
                golden[key + "|rows"] = e(torch.zeros(1, frames, 3, h, w))[0]
            except Exception as exc:
                golden[key + "|refused"] = _error(exc)


PVT_SIZES = [None, (64, 16), (16, 64), (35, 35), (48, 48), (32, 48), (8, 8), (128, 8), (66, 19)]


def _pvt(root: Path, golden: dict) -> None:
    """PVT's per-stage tables: what each stage's PvtPatchEmbeddings adds (its projection, layer norm bias and class
    token zeroed), caught by a forward hook on each, at image sizes; a size where the forward fails keeps the stages
    that ran and the error (``pvt|HxW|refused``)."""
    torch.manual_seed(2)
    cfg = tf.PvtConfig(image_size=32, num_encoder_blocks=4, depths=[1, 1, 1, 1], sequence_reduction_ratios=[2, 2, 1, 1],
                       hidden_sizes=[8, 8, 8, 8], patch_sizes=[4, 2, 2, 1], strides=[4, 2, 2, 1],
                       num_attention_heads=[1, 1, 1, 1], mlp_ratios=[1, 1, 1, 1])
    model = tf.PvtModel(cfg).eval()
    out = root / "models" / "vision_pvt"
    with torch.no_grad():
        for e in model.encoder.patch_embeddings:
            e.position_embeddings.normal_(std=0.5)
    model.save_pretrained(out)
    with torch.no_grad():
        for e in model.encoder.patch_embeddings:
            e.projection.weight.zero_()
            e.projection.bias.zero_()
            e.layer_norm.bias.zero_()
            if e.cls_token is not None:
                e.cls_token.zero_()
        for size in PVT_SIZES:
            h, w = size or (32, 32)
            label = "native" if size is None else f"{h}x{w}"
            got = {}
            hooks = [e.register_forward_hook(lambda mod, args, o, k=k: (got.setdefault(k, o[0]), None)[1])
                     for k, e in enumerate(model.encoder.patch_embeddings)]
            try:
                model(torch.zeros(1, 3, h, w))
            except Exception as exc:
                golden[f"pvt|{label}|refused"] = _error(exc)
            finally:
                for hk in hooks:
                    hk.remove()
            for k, rows in got.items():
                golden[f"pvt|{label}|stage{k}"] = rows[0].numpy().astype(np.float32)


def main(root: str) -> None:
    data = Path(root)
    golden: dict = {"torch_version": np.array(torch.__version__), "transformers_version": np.array(tf.__version__)}
    _qwen(_qwen3_vl_vision, "qwen3_vl_vision", data, golden)
    _qwen(_qwen3_5_vision, "qwen3_5_vision", data, golden)
    _qwen(_qwen3_vl, "qwen3_vl", data, golden, tower_of=lambda m: m.visual)
    _beit(data / "vision" / "models" / "tiny_beit", "tiny_beit", golden)
    _beit(data / "vision" / "models" / "tiny_data2vec_vision", "tiny_data2vec_vision", golden)
    _beit(_beit_rect(data), "tiny_beit_rect", golden)
    _vivit(data, golden)
    _timesformer(data, golden)
    _pvt(data, golden)
    golden = {k: np.asarray(v.detach().numpy() if isinstance(v, torch.Tensor) else v) for k, v in golden.items()}
    np.savez_compressed(data / "vision" / "gaps_goldens.npz", **golden)
    for k, v in golden.items():
        print(k, v.shape if v.ndim else str(v)[:120])


if __name__ == "__main__":
    main(sys.argv[1])
