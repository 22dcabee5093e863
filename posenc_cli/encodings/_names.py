"""Names that shell completion offers, generated from the registries by `python -m posenc_cli.cli._complete`
(do not edit; tests/test_completions.py fails when this is stale)."""

PARAMS = {
    'sinusoidal': ('length', 'dim', 'dtype', 'base', 'offset', 'layout', 'freq', 'min_timescale', 'max_timescale', 'padding_idx', 'odd_dim', 'angle_dtype', 'scale'),
    'sinusoidal-2d': ('length', 'dim', 'dtype', 'grid', 'cls_token', 'base', 'axis_order', 'layout', 'channels'),
    'sinusoidal-3d': ('length', 'dim', 'dtype', 'grid', 'cls_token', 'base', 'axis_order', 'layout', 'channels'),
    'rope': ('length', 'dim', 'dtype', 'base', 'layout', 'rotary_dim', 'partial_rotary_factor', 'offset', 'scaling', 'factor', 'original_max_position_embeddings', 'seq_len', 'attention_factor', 'beta_fast', 'beta_slow', 'mscale', 'mscale_all_dim', 'truncate', 'low_freq_factor', 'high_freq_factor', 'short_factor', 'long_factor', 'cache', 'inv_freq_dtype', 'sin_sign', 'position_dtype'),
    'xpos': ('length', 'dim', 'dtype', 'scale_base', 'layout', 'offset', 'center', 'interpolate_factor'),
    'mrope': ('length', 'dim', 'dtype', 'base', 'mrope_section', 'grid', 'text_offset', 'time_interval', 'mrope_interleaved', 'inv_freq_dtype', 'offset'),
    'learned': ('length', 'dim', 'dtype', 'init', 'std', 'truncation', 'seed'),
    'index': ('length', 'dim', 'dtype', 'offset'),
    'normalized': ('length', 'dim', 'dtype', 'offset'),
    'binary': ('length', 'dim', 'dtype', 'offset'),
    'alibi': ('length', 'dim', 'dtype', 'causal', 'max_bias', 'form', 'divide_by', 'slopes'),
    't5': ('length', 'dim', 'dtype', 'num_buckets', 'max_distance', 'bidirectional'),
    'relative': ('length', 'dim', 'dtype', 'max_relative_position'),
    'deberta': ('length', 'dim', 'dtype', 'position_buckets', 'max_relative_positions'),
}
PRESETS = {
    'sinusoidal': ('paper', 'pytorch-tutorial', 'tf-tutorial', 'tensor2tensor', 'fairseq', 'marian', 'musicgen'),
    'sinusoidal-2d': ('mae', 'timm', 'positional-encodings'),
    'sinusoidal-3d': ('positional-encodings',),
    'rope': ('roformer', 'gpt-j', 'gpt-neox', 'llama', 'llama3.1'),
    'xpos': (),
    'mrope': (),
    'learned': ('bert', 'bert-tf', 'gpt2', 'vit'),
    'index': (),
    'normalized': (),
    'binary': (),
    'alibi': ('mlx',),
    't5': (),
    'relative': ('paper-base', 'paper-big', 'tensor2tensor'),
    'deberta': ('v3',),
}
CHECKS = ('finite', 'matches-spec', 'bounded', 'unique', 'constant-norm', 'equidistant', 'offset-invariant', 'shift-linear', 'symmetric', 'decay', 'precision', 'pythagorean', 'norm-preserving', 'relative', 'long-term-decay', 'toeplitz', 'monotone', 't5-saturation')
