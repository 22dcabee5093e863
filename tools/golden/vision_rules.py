"""Vision tables whose layout or resize code is their own, and the rows each model's own code adds (run once).

    PYTHONPATH=/work/side/tvstub /work/side/venv/bin/python tools/golden/vision_rules.py tests/data

Writes tests/data/models/vision_<type>/ (config.json + model.safetensors of a tiny random model of transformers
5.24) for SAM's vision encoder (and the SamModel wrapper), DPT, Depth Anything (a DINOv2 backbone), YOLOS,
ViTDet, ViTPose (its backbone), ViViT, TimeSformer and the Audio Spectrogram Transformer, and
tests/data/vision/rules_goldens.npz: for each model and image size, the position rows the model's own code adds
to its tokens, caught where its code adds them (the patch projection and the class/detection tokens zeroed, so
that the embeddings' output is the positions alone; ViTDet's and SAM's 1 x H x W x C output flattened row-major),
or, where the model's code refuses the size, the error it raised (key ``...|refused``). YOLOS also gives the
per-layer ``mid_position_embeddings`` its encoder adds (``InterpolateMidPositionEmbeddings``), key ``...|mid``.
A model whose saved weights pass 100 kB (the SAM-style OCR encoders' fixed-width necks) keeps only its position
tensors (names with ``pos``): posenc reads nothing else.
"""

import os
import sys

import numpy as np
import torch
import transformers as tf

SIZES = [None, (24, 24), (12, 12), (24, 12), (30, 18), (8, 20), (32, 8), (8, 4)]
SMALL = dict(hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16)


def _zero(*params):
    with torch.no_grad():
        for p in params:
            p.zero_()


def _randomise(*params):
    with torch.no_grad():  # larger values than the init's 0.02, so that differences show in float32
        for p in params:
            p.normal_(std=0.5)


def sam_vision():
    m = tf.SamVisionModel(tf.SamVisionConfig(image_size=16, patch_size=4, hidden_size=8, num_hidden_layers=1,
                                             num_attention_heads=2, mlp_dim=16, output_channels=8,
                                             global_attn_indexes=[0], window_size=2, num_pos_feats=4))
    enc = m.vision_encoder
    _randomise(enc.pos_embed)

    def rows(size):
        h, w = size or (16, 16)
        seen = {}
        hook = enc.layers[0].register_forward_pre_hook(lambda mod, args: seen.setdefault("x", args[0]))
        _zero(enc.patch_embed.projection.weight, enc.patch_embed.projection.bias)
        try:
            enc(torch.zeros(1, 3, h, w))
        finally:
            hook.remove()
        return seen["x"][0].reshape(-1, 8)

    return m, rows


def sam_model():
    m = tf.SamModel(tf.SamConfig(
        vision_config=dict(image_size=16, patch_size=4, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                           mlp_dim=16, output_channels=8, global_attn_indexes=[0], window_size=2, num_pos_feats=4),
        prompt_encoder_config=dict(hidden_size=8, image_size=16, image_embedding_size=4, mask_input_channels=4),
        mask_decoder_config=dict(hidden_size=8, mlp_dim=16, num_hidden_layers=1, num_attention_heads=2,
                                 iou_head_hidden_dim=8)))
    enc = m.vision_encoder
    _randomise(enc.pos_embed)

    def rows(size):
        h, w = size or (16, 16)
        seen = {}
        hook = enc.layers[0].register_forward_pre_hook(lambda mod, args: seen.setdefault("x", args[0]))
        _zero(enc.patch_embed.projection.weight, enc.patch_embed.projection.bias)
        try:
            enc(torch.zeros(1, 3, h, w))
        finally:
            hook.remove()
        return seen["x"][0].reshape(-1, 8)

    return m, rows


def sam_hq_vision():
    m = tf.SamHQVisionModel(tf.SamHQVisionConfig(image_size=16, patch_size=4, hidden_size=8, num_hidden_layers=1,
                                                 num_attention_heads=2, mlp_dim=16, output_channels=8,
                                                 global_attn_indexes=[0], window_size=2, num_pos_feats=4))
    enc = m.vision_encoder
    _randomise(enc.pos_embed)

    def rows(size):
        h, w = size or (16, 16)
        seen = {}
        hook = enc.layers[0].register_forward_pre_hook(lambda mod, args: seen.setdefault("x", args[0]))
        _zero(enc.patch_embed.projection.weight, enc.patch_embed.projection.bias)
        try:
            enc(torch.zeros(1, 3, h, w))
        finally:
            hook.remove()
        return seen["x"][0].reshape(-1, 8)

    return m, rows


def sam_hq_model():
    m = tf.SamHQModel(tf.SamHQConfig(
        vision_config=dict(image_size=16, patch_size=4, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                           mlp_dim=16, output_channels=8, global_attn_indexes=[0], window_size=2, num_pos_feats=4),
        prompt_encoder_config=dict(hidden_size=8, image_size=16, image_embedding_size=4, mask_input_channels=4),
        mask_decoder_config=dict(hidden_size=8, mlp_dim=16, num_hidden_layers=1, num_attention_heads=2,
                                 iou_head_hidden_dim=8, vit_dim=8)))
    enc = m.vision_encoder
    _randomise(enc.pos_embed)

    def rows(size):
        h, w = size or (16, 16)
        seen = {}
        hook = enc.layers[0].register_forward_pre_hook(lambda mod, args: seen.setdefault("x", args[0]))
        _zero(enc.patch_embed.projection.weight, enc.patch_embed.projection.bias)
        try:
            enc(torch.zeros(1, 3, h, w))
        finally:
            hook.remove()
        return seen["x"][0].reshape(-1, 8)

    return m, rows


def sam_style(module, cls, config_cls, **extra):
    """A SAM-style OCR vision encoder (GOT-OCR2, PP-FormulaNet, SLANeXt, DeepSeek-OCR2, Unlimited-OCR)."""
    import importlib

    mod = importlib.import_module(f"transformers.models.{module}")
    cfg = getattr(tf, config_cls)(image_size=16, patch_size=4, hidden_size=8, num_hidden_layers=1,
                                  num_attention_heads=2, mlp_dim=16, output_channels=8, global_attn_indexes=[0],
                                  window_size=2, **extra)
    m = getattr(mod, cls)(cfg)

    class Caught(Exception):  # stops the forward at the first layer's input (PP-FormulaNet's neck wants 256 wide)
        pass

    def catch(mod_, args):
        raise Caught(args[0])

    def rows(size):
        h, w = size or (16, 16)
        hook = m.layers[0].register_forward_pre_hook(catch)
        _zero(m.patch_embed.projection.weight, m.patch_embed.projection.bias)
        try:
            m(torch.zeros(1, 3, h, w))
        except Caught as caught:
            x = caught.args[0][0]
            return x.reshape(-1, x.shape[-1])
        finally:
            hook.remove()
        raise AssertionError("the first layer never ran")

    _randomise(m.pos_embed)
    return m, rows


def sam3_vit():
    cfg = tf.Sam3ViTConfig(image_size=24, pretrain_image_size=16, patch_size=4, hidden_size=8, num_hidden_layers=1,
                           num_attention_heads=2, intermediate_size=16, window_size=2, global_attn_indexes=[0])
    m = tf.Sam3ViTModel(cfg)
    e = m.embeddings
    _randomise(e.position_embeddings)

    def rows(size):
        h, w = size or (24, 24)  # the model runs at image_size; its table is pretrain_image_size's grid
        _zero(e.patch_embeddings.projection.weight)
        return e(torch.zeros(1, 3, h, w))[0]

    rows.sizes = [(16, 16)]  # the table's own grid: kept as it is
    return m, rows


def sam3_vision():
    backbone = dict(model_type="sam3_vit_model", image_size=24, pretrain_image_size=16, patch_size=4, hidden_size=8,
                    num_hidden_layers=1, num_attention_heads=2, intermediate_size=16, window_size=2,
                    global_attn_indexes=[0])
    m = tf.Sam3VisionModel(tf.Sam3VisionConfig(backbone_config=backbone, fpn_hidden_size=8))
    e = m.backbone.embeddings
    _randomise(e.position_embeddings)

    def rows(size):
        h, w = size or (24, 24)
        _zero(e.patch_embeddings.projection.weight)
        return e(torch.zeros(1, 3, h, w))[0]

    return m, rows


def seggpt():
    m = tf.SegGptModel(tf.SegGptConfig(image_size=[24, 16], pretrain_image_size=16, patch_size=4, hidden_size=8,
                                       num_hidden_layers=2, num_attention_heads=2, mlp_dim=16, merge_index=0,
                                       intermediate_hidden_state_indices=[1]))
    e = m.embeddings
    _randomise(e.position_embeddings)

    def rows(size):
        h, w = size or (24, 16)  # the model runs at image_size; its table is pretrain_image_size's grid
        px = torch.zeros(1, 3, h, w)
        e.patch_embeddings(px)  # the model's own size check (accepts image_size only)
        return e.interpolate_pos_encoding(h // 4, w // 4)[0].reshape(-1, 8)  # as forward calls it (l.180)

    rows.sizes = [(16, 16)]
    return m, rows


def mgp_str():
    m = tf.MgpstrModel(tf.MgpstrConfig(image_size=[16, 24], patch_size=4, hidden_size=8, num_hidden_layers=1,
                                       num_attention_heads=2, mlp_ratio=2.0))
    e = m.embeddings
    _randomise(e.pos_embed)

    def rows(size):
        h, w = size or (16, 24)
        _zero(e.cls_token, e.proj.weight, e.proj.bias)
        return e(torch.zeros(1, 3, h, w))[0]

    return m, rows


def pixio():
    m = tf.PixioModel(tf.PixioConfig(image_size=16, patch_size=4, n_cls_tokens=3, hidden_size=8, num_hidden_layers=1,
                                     num_attention_heads=2, mlp_ratio=2))
    e = m.embeddings
    _randomise(e.position_embeddings)

    def rows(size):
        h, w = size or (16, 16)
        _zero(e.cls_token, e.patch_embeddings.projection.weight, e.patch_embeddings.projection.bias)
        return e(torch.zeros(1, 3, h, w))[0]

    return m, rows


SAM2_BACKBONE = dict(hidden_size=8, num_attention_heads=1, image_size=[16, 16],
                     window_positional_embedding_background_size=[3, 5], blocks_per_stage=[1, 1, 1, 1],
                     embed_dim_per_stage=[8, 16, 32, 64], num_attention_heads_per_stage=[1, 1, 1, 1],
                     window_size_per_stage=[2, 2, 2, 2], global_attention_blocks=[1], mlp_ratio=2.0)


def _sam2_rows(hiera):
    """The rows Sam2HieraDetModel.forward adds (l.655-656): _get_pos_embed of the patch convolution's grid."""
    _randomise(hiera.pos_embed, hiera.pos_embed_window)

    def rows(size):
        h, w = size or (16, 16)
        grid = hiera.patch_embed(torch.zeros(1, 3, h, w)).shape[1:3]
        out = hiera._get_pos_embed(grid)[0]
        return out.reshape(-1, out.shape[-1])

    rows.sizes = [(32, 16), (24, 8), (16, 40), (8, 8)]  # grids the 2x2 window tiles
    return rows


def sam2_hiera():
    m = tf.Sam2HieraDetModel(tf.Sam2HieraDetConfig(**SAM2_BACKBONE))
    return m, _sam2_rows(m)


def sam2_vision():
    m = tf.Sam2VisionModel(tf.Sam2VisionConfig(backbone_config=dict(model_type="sam2_hiera_det_model",
                                                                     **SAM2_BACKBONE),
                                               backbone_channel_list=[64, 32, 16, 8], fpn_hidden_size=8))
    return m, _sam2_rows(m.backbone)


def hiera():
    m = tf.HieraModel(tf.HieraConfig(image_size=[16, 16], patch_size=[3, 3], patch_stride=[2, 2], patch_padding=[1, 1],
                                     embed_dim=8, depths=[1, 1], num_heads=[1, 1], masked_unit_size=[2, 2],
                                     query_stride=[2, 2], num_query_pool=1, mlp_ratio=2.0), add_pooling_layer=False)
    e = m.embeddings
    _randomise(e.position_embeddings)

    def rows(size):
        h, w = size or (16, 16)
        _zero(e.patch_embeddings.projection.weight, e.patch_embeddings.projection.bias)
        # as HieraModel.forward calls it: interpolate_pos_encoding when asked (the model's flag; here at a size)
        return e(torch.zeros(1, 3, h, w), interpolate_pos_encoding=size is not None)[0][0]

    rows.sizes = [(12, 20), (15, 16)]  # 15: the convolution makes 8 rows, the resize 7
    return m, rows


def dpt():
    m = tf.DPTModel(tf.DPTConfig(image_size=16, patch_size=4, is_hybrid=False, **SMALL), add_pooling_layer=False)
    e = m.embeddings
    _randomise(e.position_embeddings)

    def rows(size):
        h, w = size or (16, 16)
        _zero(e.cls_token, e.patch_embeddings.projection.weight, e.patch_embeddings.projection.bias)
        return e(torch.zeros(1, 3, h, w)).last_hidden_states[0]

    return m, rows


def depth_anything():
    backbone = tf.Dinov2Config(image_size=16, patch_size=4, hidden_size=8, num_hidden_layers=4,
                               num_attention_heads=2, mlp_ratio=2, out_indices=[1, 2, 3, 4])
    m = tf.DepthAnythingForDepthEstimation(tf.DepthAnythingConfig(
        backbone_config=backbone, patch_size=4, reassemble_hidden_size=8, neck_hidden_sizes=[4, 4, 4, 4],
        fusion_hidden_size=4, head_hidden_size=4))
    e = m.backbone.embeddings
    _randomise(e.position_embeddings)

    def rows(size):
        h, w = size or (16, 16)
        _zero(e.cls_token, e.patch_embeddings.projection.weight, e.patch_embeddings.projection.bias)
        return e(torch.zeros(1, 3, h, w))[0]

    return m, rows


def prompt_depth_anything():
    backbone = tf.Dinov2Config(image_size=16, patch_size=4, hidden_size=8, num_hidden_layers=4,
                               num_attention_heads=2, mlp_ratio=2, out_indices=[1, 2, 3, 4])
    m = tf.PromptDepthAnythingForDepthEstimation(tf.PromptDepthAnythingConfig(
        backbone_config=backbone, patch_size=4, reassemble_hidden_size=8, neck_hidden_sizes=[4, 4, 4, 4],
        fusion_hidden_size=4, head_hidden_size=4))
    e = m.backbone.embeddings
    _randomise(e.position_embeddings)

    def rows(size):
        h, w = size or (16, 16)
        _zero(e.cls_token, e.patch_embeddings.projection.weight, e.patch_embeddings.projection.bias)
        return e(torch.zeros(1, 3, h, w))[0]

    return m, rows


def yolos():
    m = tf.YolosModel(tf.YolosConfig(image_size=[16, 20], patch_size=4, num_detection_tokens=3,
                                     use_mid_position_embeddings=True, hidden_size=8, num_hidden_layers=3,
                                     num_attention_heads=2, intermediate_size=16), add_pooling_layer=False)
    e = m.embeddings
    _randomise(e.position_embeddings, m.encoder.interpolation.mid_position_embeddings)

    def rows(size):
        h, w = size or (16, 20)
        _zero(e.cls_token, e.detection_tokens, e.patch_embeddings.projection.weight,
              e.patch_embeddings.projection.bias)
        return e(torch.zeros(1, 3, h, w))[0]

    def mid(size):
        h, w = size or (16, 20)
        return m.encoder.interpolation((h, w))[:, 0]  # (layers - 1, rows, dim): added after layer i

    rows.mid = mid
    rows.native = (16, 20)
    return m, rows


def vitdet():
    m = tf.VitDetModel(tf.VitDetConfig(pretrain_image_size=16, image_size=16, patch_size=4, hidden_size=8,
                                       num_hidden_layers=1, num_attention_heads=2, mlp_ratio=2))
    e = m.embeddings
    _randomise(e.position_embeddings)

    def rows(size):
        h, w = size or (16, 16)
        _zero(e.projection.weight, e.projection.bias)
        out = e(torch.zeros(1, 3, h, w))  # (1, C, h, w)
        return out[0].permute(1, 2, 0).reshape(-1, 8)

    return m, rows


def vitpose():
    backbone = tf.VitPoseBackboneConfig(image_size=[32, 24], patch_size=[8, 8], hidden_size=8, num_hidden_layers=1,
                                        num_attention_heads=2, mlp_ratio=2, out_indices=[1])
    m = tf.VitPoseForPoseEstimation(tf.VitPoseConfig(backbone_config=backbone))
    e = m.backbone.embeddings
    _randomise(e.position_embeddings)

    def rows(size):
        h, w = size or (32, 24)
        _zero(e.patch_embeddings.projection.weight, e.patch_embeddings.projection.bias)
        return e(torch.zeros(1, 3, h, w))[0]

    rows.native = (32, 24)
    return m, rows


def vitpose_backbone():
    m = tf.VitPoseBackbone(tf.VitPoseBackboneConfig(image_size=[32, 24], patch_size=[8, 8], hidden_size=8,
                                                    num_hidden_layers=1, num_attention_heads=2, mlp_ratio=2,
                                                    out_indices=[1]))
    e = m.embeddings
    _randomise(e.position_embeddings)

    def rows(size):
        h, w = size or (32, 24)
        _zero(e.patch_embeddings.projection.weight, e.patch_embeddings.projection.bias)
        return e(torch.zeros(1, 3, h, w))[0]

    return m, rows


def vivit():
    m = tf.VivitModel(tf.VivitConfig(image_size=16, num_frames=4, tubelet_size=[2, 4, 4], **SMALL),
                      add_pooling_layer=False)
    e = m.embeddings
    _randomise(e.position_embeddings)

    def rows(size):
        h, w = size or (16, 16)
        _zero(e.cls_token, e.patch_embeddings.projection.weight, e.patch_embeddings.projection.bias)
        # the model's forward passes interpolate_pos_encoding (default False); with it, ViViT's own resize
        return e(torch.zeros(1, 4, 3, h, w), interpolate_pos_encoding=size is not None)[0]

    return m, rows


def timesformer():
    m = tf.TimesformerModel(tf.TimesformerConfig(image_size=16, patch_size=4, num_frames=3, **SMALL))
    e = m.embeddings
    _randomise(e.position_embeddings, e.time_embeddings)

    def rows(size):
        h, w = size or (16, 16)
        _zero(e.cls_token, e.patch_embeddings.projection.weight, e.patch_embeddings.projection.bias)
        return e(torch.zeros(1, 3, 3, h, w))[0]

    return m, rows


def ast():
    m = tf.ASTModel(tf.ASTConfig(patch_size=4, frequency_stride=3, time_stride=2, num_mel_bins=13, max_length=13,
                                 **SMALL))
    e = m.embeddings
    _randomise(e.position_embeddings)

    def rows(size):
        if size is not None:  # the input is (time frames, mel bins): another length or bin count
            t, f = size
        else:
            t, f = 13, 13
        _zero(e.cls_token, e.distillation_token, e.patch_embeddings.projection.weight,
              e.patch_embeddings.projection.bias)
        return e(torch.zeros(1, t, f))[0]

    return m, rows


MODELS = {"sam_vision_model": sam_vision, "sam": sam_model, "sam_hq_vision_model": sam_hq_vision, "sam_hq": sam_hq_model,
          "dpt": dpt,
          "depth_anything": depth_anything, "prompt_depth_anything": prompt_depth_anything,
          "yolos": yolos, "vitdet": vitdet, "vitpose": vitpose, "vitpose_backbone": vitpose_backbone,
          "vivit": vivit, "timesformer": timesformer,
          "audio-spectrogram-transformer": ast, "sam3_vit_model": sam3_vit, "sam3_vision_model": sam3_vision,
          "sam2_hiera_det_model": sam2_hiera, "sam2_vision_model": sam2_vision, "seggpt": seggpt, "hiera": hiera, "mgp-str": mgp_str, "pixio": pixio,
          "got_ocr2_vision": lambda: sam_style("got_ocr2.modeling_got_ocr2", "GotOcr2VisionEncoder",
                                               "GotOcr2VisionConfig"),
          "pp_formulanet_vision": lambda: sam_style("pp_formulanet.modeling_pp_formulanet", "PPFormulaNetVisionModel",
                                                    "PPFormulaNetVisionConfig"),
          "slanext_vision": lambda: sam_style("slanext.modeling_slanext", "SLANeXtVisionEncoder",
                                              "SLANeXtVisionConfig"),
          "deepseek_ocr2_sam_vision_model": lambda: sam_style("deepseek_ocr2.modeling_deepseek_ocr2",
                                                              "DeepseekOcr2SamVisionEncoder",
                                                              "DeepseekOcr2SamVisionConfig"),
          "unlimited_ocr_sam_vision_model": lambda: sam_style("unlimited_ocr.modeling_unlimited_ocr",
                                                              "UnlimitedOcrSamVisionEncoder",
                                                              "UnlimitedOcrSamVisionConfig")}


def main(root):
    torch.manual_seed(0)
    golden = {"torch_version": np.array(torch.__version__), "transformers_version": np.array(tf.__version__)}
    for mt, make in MODELS.items():
        model, rows = make()
        model.eval()
        out = os.path.join(root, "models", f"vision_{mt}")
        with torch.no_grad():
            saved = {n: p.detach().clone() for n, p in model.state_dict().items()}
            for size in SIZES + getattr(rows, "sizes", []):
                key = f"{mt}|{'native' if size is None else f'{size[0]}x{size[1]}'}"
                try:
                    made = rows(size).detach().numpy().astype(np.float32)
                    if made.shape[0] == 0:  # SAM 2 at a grid one window does not tile: broadcast to nothing
                        raise ValueError("the model's positions are empty (its window tiles 0 times)")
                    golden[key] = made
                except Exception as exc:  # the model's own code refuses this size
                    golden[key + "|refused"] = np.array(f"{type(exc).__name__}: {exc}"[:300])
                if hasattr(rows, "mid"):
                    golden[key + "|mid"] = rows.mid(size).detach().numpy().astype(np.float32)
            model.load_state_dict(saved)  # the zeroed projections restored before saving
        model.save_pretrained(out)
        weights = os.path.join(out, "model.safetensors")
        if os.path.getsize(weights) > 100_000:  # fixed-width necks (DeepSeek-OCR2, PP-FormulaNet): positions only
            from safetensors.torch import load_file, save_file

            kept = {k: v for k, v in load_file(weights).items() if "pos" in k}
            save_file(kept, weights, metadata={"format": "pt"})
        for extra in ("generation_config.json",):
            if os.path.exists(os.path.join(out, extra)):
                os.remove(os.path.join(out, extra))
    np.savez_compressed(os.path.join(root, "vision", "rules_goldens.npz"), **golden)
    for k, v in golden.items():
        print(k, v.shape if v.ndim else str(v)[:100])


if __name__ == "__main__":
    main(sys.argv[1])
