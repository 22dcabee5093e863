"""Tiny vision models and the position rows their own code adds at several image sizes (run once, side env).

    PYTHONPATH=/work/side/tvstub /work/side/venv/bin/python tools/golden/vision_models.py tests/data
    PYTHONPATH=/work/side/tvstub /work/side/venv/bin/python tools/golden/vision_models.py --towers tests/data [NAME ...]

Writes tests/data/models/vision_<type>/ (config.json + model.safetensors of a tiny random model: hidden 8, one
layer, 4x4 patches, a 4x4 native grid) for each HF model type with a ViT-family table and for two timm ViTs
(class token; class + 2 register tokens), and tests/data/vision/model_goldens.npz: for each model and image size,
the rows the model adds, made by the model's own code (HF: its embeddings' ``interpolate_pos_encoding`` called as
its forward calls it; SigLIP 2: ``resize_positional_embeddings`` with the spatial shape; Llama 4: the parameter,
added as it is; timm: ``resample_abs_pos_embed`` with the arguments ``VisionTransformer._pos_embed`` passes) and,
for the HF models, what timm's ``resample_abs_pos_embed`` makes of the same table (``--engine timm``).

``--towers``: tiny models of a sample of the types read through the inventory's ``vision_table`` observation
(:data:`TOWERS`: every distinct rule and every wrapper path) under tests/data/models/vision_<type>/, and
tests/data/vision/tower_goldens.npz: the rows the module holding the table adds to a zero image (every other
parameter of it zero: its patch projection, class token) at each size of :data:`TOWER_SIZES`, caught at its
output while the tower runs its own forward.
"""

import json
import os
import sys

import numpy as np
import torch
import transformers as tf  # before the torchvision stand-in: transformers checks for the real one
from safetensors.torch import save_file

import sitecustomize_tv  # noqa: F401,E402  (the torchvision stand-in timm imports)
import timm  # noqa: E402
from timm.layers import resample_abs_pos_embed  # noqa: E402

SIZES = [None, (24, 24), (12, 12), (24, 12), (30, 18), (32, 8), (18, 18), (8, 20)]
#: the rows before the grid (class, distillation) per model type; 1 elsewhere
EXTRA = {"deit": 2, "ijepa": 0, "siglip_vision_model": 0, "siglip": 0, "siglip2_vision_model": 0, "siglip2": 0,
         "janus_vision_model": 0}
SMALL = dict(hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16)


def hf_models():
    common = dict(image_size=16, patch_size=4, num_channels=3, **SMALL)
    yield "vit", tf.ViTModel(tf.ViTConfig(**common), add_pooling_layer=False)
    yield "vit_msn", tf.ViTMSNModel(tf.ViTMSNConfig(**common))
    yield "deit", tf.DeiTModel(tf.DeiTConfig(**common), add_pooling_layer=False)
    yield "ijepa", tf.IJepaModel(tf.IJepaConfig(**common), add_pooling_layer=False)
    yield "dinov2", tf.Dinov2Model(tf.Dinov2Config(**common))
    yield "dinov2_with_registers", tf.Dinov2WithRegistersModel(
        tf.Dinov2WithRegistersConfig(num_register_tokens=2, **common)
    )
    yield "clip_vision_model", tf.CLIPVisionModel(tf.CLIPVisionConfig(**common))
    yield "siglip_vision_model", tf.SiglipVisionModel(tf.SiglipVisionConfig(**common))
    yield "siglip2_vision_model", tf.Siglip2VisionModel(
        tf.Siglip2VisionConfig(num_patches=16, patch_size=4, num_channels=3, **SMALL)
    )
    for mt, cfg, cls in (
        ("altclip_vision_model", "AltCLIPVisionConfig", "AltCLIPVisionModel"),
        ("chinese_clip_vision_model", "ChineseCLIPVisionConfig", "ChineseCLIPVisionModel"),
        ("metaclip_2_vision_model", "MetaClip2VisionConfig", "MetaClip2VisionModel"),
        ("git_vision_model", "GitVisionConfig", "GitVisionModel"),
        ("janus_vision_model", "JanusVisionConfig", "JanusVisionModel"),
    ):
        yield mt, getattr(tf, cls)(getattr(tf, cfg)(**common))
    text = dict(vocab_size=64, max_position_embeddings=16, **SMALL)
    yield "clip", tf.CLIPModel(tf.CLIPConfig(text_config=text, vision_config=common))
    yield "siglip", tf.SiglipModel(tf.SiglipConfig(text_config=text, vision_config=common))
    yield "siglip2", tf.Siglip2Model(tf.Siglip2Config(
        text_config=text, vision_config=dict(num_patches=16, patch_size=4, num_channels=3, **SMALL)))
    yield "llama4_vision_model", tf.Llama4VisionModel(
        tf.Llama4VisionConfig(image_size=16, patch_size=4, num_channels=3, vision_output_dim=8,
                              projector_input_dim=8, projector_output_dim=8, **SMALL)
    )


def hf_rows(mt, model, size):
    """The rows the model's own code adds at image size ``size`` (None: its native size)."""
    emb = model.embeddings if hasattr(model, "embeddings") else getattr(model, "vision_model", model).embeddings \
        if mt != "llama4_vision_model" else None
    if mt == "llama4_vision_model":
        if size not in (None, (16, 16)):
            return None
        return model.positional_embedding_vlm.detach().numpy()
    h, w = size or (16, 16)
    gh, gw = h // 4, w // 4
    if mt in ("siglip2_vision_model", "siglip2"):
        table = emb.position_embedding.weight.reshape(emb.position_embedding_size, emb.position_embedding_size, -1)
        out = emb.resize_positional_embeddings(table, torch.tensor([[gh, gw]]), max_length=gh * gw)
        return out[0].detach().numpy()
    extra = EXTRA.get(mt, 1)
    dummy = torch.zeros(1, gh * gw + extra, 8)
    out = emb.interpolate_pos_encoding(dummy, h, w)
    return out.reshape(-1, out.shape[-1]).detach().numpy()


def hf_table(mt, model):
    if mt == "llama4_vision_model":
        return model.positional_embedding_vlm.detach()[None], 1
    emb = model.embeddings if hasattr(model, "embeddings") else model.vision_model.embeddings
    if hasattr(emb, "position_embeddings"):
        return emb.position_embeddings.detach(), EXTRA.get(mt, 1)
    return emb.position_embedding.weight.detach()[None], EXTRA.get(mt, 1)


def timm_models():
    for name, kw in (("timm_vit", dict(reg_tokens=0)), ("timm_vit_reg", dict(reg_tokens=2))):
        torch.manual_seed(1)
        m = timm.models.vision_transformer.VisionTransformer(
            img_size=16, patch_size=4, embed_dim=8, depth=1, num_heads=2, mlp_ratio=2.0, num_classes=0,
            dynamic_img_size=True, **kw)
        torch.nn.init.normal_(m.pos_embed, std=0.5)
        yield name, m


def main(root):
    torch.manual_seed(0)
    golden = {"torch_version": np.array(torch.__version__), "transformers_version": np.array(tf.__version__),
              "timm_version": np.array(timm.__version__)}
    for mt, model in hf_models():
        model.eval()
        with torch.no_grad():  # larger values than the init's 0.02, so that differences show in float32
            for p in model.parameters():
                if p.ndim >= 2 and p.shape[-1] == 8 and ("position" in str(p.shape) or True):
                    pass
            table, prefix = hf_table(mt, model)
            table.normal_(std=0.5)
        out = os.path.join(root, "models", f"vision_{mt}")
        model.save_pretrained(out)
        for extra in ("generation_config.json",):
            if os.path.exists(os.path.join(out, extra)):
                os.remove(os.path.join(out, extra))
        with torch.no_grad():
            for size in SIZES:
                rows = hf_rows(mt, model, size)
                if rows is None:
                    continue
                key = f"{mt}|hf|{'native' if size is None else f'{size[0]}x{size[1]}'}"
                golden[key] = rows.astype(np.float32)
                if mt == "llama4_vision_model" or size is None:
                    continue
                t = resample_abs_pos_embed(table, new_size=[size[0] // 4, size[1] // 4], old_size=[4, 4],
                                           num_prefix_tokens=prefix)
                golden[f"{mt}|timm|{size[0]}x{size[1]}"] = t[0].numpy().astype(np.float32)
    for name, m in timm_models():
        m.eval()
        out = os.path.join(root, "models", f"vision_{name}")
        os.makedirs(out, exist_ok=True)
        save_file({k: v.contiguous() for k, v in m.state_dict().items()}, os.path.join(out, "model.safetensors"))
        cfg = {"architecture": f"vit_{name}_patch4_16", "num_classes": 0, "num_features": 8,
               "pretrained_cfg": {"input_size": [3, 16, 16], "interpolation": "bicubic", "num_classes": 0}}
        with open(os.path.join(out, "config.json"), "w") as fh:
            json.dump(cfg, fh, indent=2)
        with torch.no_grad():
            for size in SIZES:
                h, w = size or (16, 16)
                # VisionTransformer._pos_embed with dynamic_img_size (timm 1.0.31 models/vision_transformer.py)
                t = resample_abs_pos_embed(m.pos_embed, new_size=(h // 4, w // 4), old_size=m.patch_embed.grid_size,
                                           num_prefix_tokens=0 if m.no_embed_class else m.num_prefix_tokens)
                key = f"{name}|timm|{'native' if size is None else f'{h}x{w}'}"
                golden[key] = t[0].numpy().astype(np.float32)
    # docs/vision.md's worked example: a DINOv2 of the published configuration's grid (image 518, patch 14: a
    # 37x37 grid) with hidden size 8, run at 448x308 by its own code and by timm's resampling
    torch.manual_seed(2)
    model = tf.Dinov2Model(tf.Dinov2Config(image_size=518, patch_size=14, num_channels=3, **SMALL)).eval()
    with torch.no_grad():
        model.embeddings.position_embeddings.normal_(std=0.5)
        docs = os.path.join(os.path.dirname(os.path.abspath(root)), "..", "docs", "examples", "dinov2-tiny")
        model.save_pretrained(os.path.normpath(docs))
        out = model.embeddings.interpolate_pos_encoding(torch.zeros(1, 32 * 22 + 1, 8), 448, 308)
        golden["docs_dinov2|hf|448x308"] = out[0].numpy().astype(np.float32)
        t = resample_abs_pos_embed(model.embeddings.position_embeddings, new_size=[32, 22], old_size=[37, 37])
        golden["docs_dinov2|timm|448x308"] = t[0].numpy().astype(np.float32)
    np.savez_compressed(os.path.join(root, "vision", "model_goldens.npz"), **golden)
    print(len(golden), "arrays")




# ----- towers read by a reviewed rule of the same code (tools/inventory/vision_tables.py) -----------------------
#: model type -> (the vision sub-config's overrides); a sample of every distinct rule and every wrapper path: the
#: type itself a tower (``model``), a wrapper's ``vision_config``, a nested ``vlm_config.vision_config``, and a
#: wrapper whose config names another tower than its default (llava with a SigLIP tower)
TOWERS = {
    "blip_vision_model": {}, "blip-2": {}, "internvl_vision": {}, "owlvit_vision_model": {}, "owlvit": {},
    "kosmos_2_vision_model": {}, "llava": {}, "llava_siglip": {"model_type": "siglip_vision_model"},
    "paligemma": {}, "colpali": {}, "tipsv2_vision_model": {"num_register_tokens": 2}, "step3p5_vision": {},
    "ovis2_vision": {}, "aimv2_vision_model": {}, "granite_docling_vision": {}, "idefics2_vision": {"image_size": 20},
    "idefics3": {"image_size": 20}, "smolvlm_vision": {"image_size": 20}, "flava_image_model": {},
    "xclip_vision_model": {},  # depth_anything and pixio have records: tools/golden/vision_rules.py
}
TOWER_SIZES = [None, (24, 24), (12, 12), (24, 12), (32, 8), (8, 20), (28, 36)]
SHRINK = dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1, intermediate_size=32,
              head_dim=8, projection_dim=16, text_hidden_size=16, vision_output_dim=16, projector_input_dim=16,
              projector_output_dim=16, embed_dim=16, num_layers=1, depth=1, layers=1, d_model=16, mm_hidden_size=16)


def _shrunk(cfg, vision_path, vision_over):
    import copy

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "inventory"))
    from make_inventory import sub_configs

    cfg = copy.deepcopy(cfg)
    for path, sub in sub_configs(cfg):
        for k, v in SHRINK.items():
            if isinstance(getattr(sub, k, None), int) and not isinstance(getattr(sub, k), bool):
                setattr(sub, k, v)
        ids = [v for k, v in vars(sub).items() if isinstance(v, int) and k.endswith(("_id", "_index"))]
        if isinstance(getattr(sub, "vocab_size", None), int) and all(i < 256 for i in ids):
            sub.vocab_size = 256
        if ".".join(path) == vision_path or (vision_path == "model" and not path):
            pair = isinstance(getattr(sub, "image_size", None), (list, tuple))
            sub.image_size, sub.patch_size = ([16, 16], [4, 4]) if pair else (16, 4)
            if hasattr(sub, "num_patches"):
                sub.num_patches = 16
            for k, v in vision_over.items():
                setattr(sub, k, v)
    return cfg


def _holder_rows(holder, size, native, tower):
    """The rows ``holder`` (the module holding the table, every other parameter of it zero) adds to a zero image,
    caught at its output while the tower runs its own forward (``interpolate_pos_encoding=True`` when the tower
    takes the flag: a tower that passes it itself, or never, does as its code says)."""
    import inspect

    h, w = size or native
    caught = []
    hook = holder.register_forward_hook(lambda m, a, out: caught.append(out[0] if isinstance(out, tuple) else out))
    flag = "interpolate_pos_encoding" in inspect.signature(type(tower).forward).parameters
    try:
        tower(pixel_values=torch.zeros(1, 3, h, w), **({"interpolate_pos_encoding": True} if flag else {}))
    except Exception:  # a layer after the embeddings may refuse the toy image (X-CLIP's frames)
        if not caught:
            raise
    finally:
        hook.remove()
    return caught[0][0].detach().numpy()


def _keep_small(file, limit=32768):
    """The saved weights without the tensors over ``limit`` bytes (projector and head convolutions of the tiny
    model; none is a position table), so that the folders stay small; every name is kept in the others."""
    from safetensors import safe_open

    with safe_open(file, "pt") as f:
        kept = {k: f.get_tensor(k) for k in f.keys() if f.get_slice(k).get_shape() and
                np.prod(f.get_slice(k).get_shape()) * 4 <= limit or "position" in k}  # fmt: skip
        meta = f.metadata()
    save_file({k: v.contiguous() for k, v in kept.items()}, file, metadata=meta)


def towers(root, names=()):
    """The tiny models of :data:`TOWERS` (``names``: only those, merged into the goldens already written)."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "inventory"))
    inv = json.load(open(os.path.join(root, "..", "..", "posenc_cli", "models", "data",
                                      "transformers_inventory.json")))["model_types"]
    golden = {"torch_version": np.array(torch.__version__), "transformers_version": np.array(tf.__version__)}
    file = os.path.join(root, "vision", "tower_goldens.npz")
    if names:
        with np.load(file) as z:
            golden.update({k: z[k] for k in z.files if k.split("|")[0] not in names and "|" in k})
    for name, over in TOWERS.items():
        if names and name not in names:
            continue
        try:
            tower(root, inv, golden, name, over)
        except Exception as exc:  # said, and left out of the goldens
            print(name, "FAILED", type(exc).__name__, str(exc)[:200])
    np.savez_compressed(file, **golden)
    print(len(golden), "arrays")


def tower(root, inv, golden, name, over):
    import copy
    import importlib

    from make_inventory import CONFIG_MAPPING, model_class

    if True:
        mt = "llava" if name == "llava_siglip" else name
        entry = inv[mt]["vision_table"][0]
        cfg = tf.AutoConfig.for_model(mt)
        over = dict(over)
        if "model_type" in over:  # another tower than the wrapper's default: its own config class
            sub_cfg = tf.AutoConfig.for_model(over.pop("model_type"))
            setattr(cfg, entry["component"], sub_cfg)
        cfg = _shrunk(cfg, entry["component"], over)
        pkg = CONFIG_MAPPING[mt].__module__.rsplit(".", 1)[0]
        module = importlib.import_module(pkg + ".modeling_" + pkg.rsplit(".", 1)[1])
        torch.manual_seed(3)
        model = model_class(cfg, module)(copy.deepcopy(cfg)).eval()
        names = [n for n, _ in model.named_parameters()]
        tensor = entry["tensor"]
        if name == "llava_siglip":
            tensor = entry["tensor"][: -len(entry["tower_tensor"])] + "embeddings.position_embedding.weight"
        holder_path = entry["holder"].split(" ")[0]
        if name == "llava_siglip":
            holder_path = tensor.rsplit(".", 2)[0]
        assert tensor in names, (name, tensor, names[:20])
        holder = model.get_submodule(holder_path)
        with torch.no_grad():
            for n, p in holder.named_parameters():
                p.zero_()
            table = model.get_parameter(tensor)
            table.normal_(std=0.5)
        out = os.path.join(root, "models", f"vision_{name}")
        model.save_pretrained(out)
        for extra in ("generation_config.json",):
            if os.path.exists(os.path.join(out, extra)):
                os.remove(os.path.join(out, extra))
        _keep_small(os.path.join(out, "model.safetensors"))
        sub = cfg if entry["component"] == "model" else cfg
        for part in [] if entry["component"] == "model" else entry["component"].split("."):
            sub = getattr(sub, part)
        side = sub.image_size[0] if isinstance(sub.image_size, (list, tuple)) else sub.image_size
        native = (side, side)
        with torch.no_grad():
            for size in TOWER_SIZES:
                try:
                    rows = _holder_rows(holder, size, native, model.get_submodule(entry["tower"].split(" ")[0]))
                except Exception as exc:  # a tower that never resizes its table stops at another size
                    print(name, size, "raised", type(exc).__name__, str(exc)[:80])
                    continue
                if name == "tipsv2_vision_model":  # the register tokens, inserted after cls with no position
                    rows = np.concatenate([rows[:1], rows[1 + sub.num_register_tokens:]])
                key = f"{name}|hf|{'native' if size is None else f'{size[0]}x{size[1]}'}"
                golden[key] = rows.astype(np.float32)
        print(name, tensor, sorted(k.split("|")[2] for k in golden if k.startswith(name + "|")))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--towers"]:
        towers(sys.argv[2], sys.argv[3:])
    else:
        main(sys.argv[1])
