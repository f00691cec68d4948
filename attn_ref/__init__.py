"""attn_ref: the reference implementation behind "Self-Attention, Step by Step".

NumPy first, one module per idea; every function is checked in ``tests/`` against
PyTorch, PyTorch Geometric or the papers' formulas.  Row layout ``(..., n, d)``
(PyTorch's) unless a name says ``columns`` (the lecture's ``(d, n)``).
"""

from .attention import (
    StepByStep,
    apply_mask,
    attend_one,
    band_mask,
    causal_mask,
    scaled_dot_product_attention,
    self_attention,
    self_attention_columns,
)
from .conv import conv2d_same, conv_as_attention_params, relative_attention_conv
from .efficient import blocked_attention, online_softmax_trace
from .embedding import cosine_similarity_matrix, learn_embedding, one_hot
from .encoder import encoder_block, encoder_params_from_torch, feed_forward, init_encoder_params, layer_norm
from .examples import lecture_example
from .graph import adjacency_from_edges, adjacency_mask, gat_layer, gat_params_from_pyg, init_gat_params
from .images import image_to_vectors, patchify, unpatchify, vectors_to_image
from .io_model import (
    backward_recomputation,
    flash_attention_io,
    flash_backward_io,
    flash_block_sizes,
    standard_attention_io,
    standard_backward_io,
)
from .linear import (
    causal_linear_attention_rnn,
    elu_feature_map,
    linear_attention,
    linear_rnn_step,
    performer_attention,
    positive_random_features,
    random_features,
)
from .multihead import init_mha_params, merge_heads, mha_params_from_torch, multi_head_attention, split_heads
from .positional import shift_matrix, sinusoidal_positional_encoding
from .recurrent import path_length, path_length_table, rnn_forward
from .scores import additive_score, dot_product_score
from .seqlabel import fcn_tag_logits, window_features, windowed_logits
from .softmax import softmax
from .speech import frame_signal
from .truncated import band_to_dense, truncated_attention

__all__ = [
    "StepByStep",
    "additive_score",
    "adjacency_from_edges",
    "adjacency_mask",
    "apply_mask",
    "attend_one",
    "band_mask",
    "band_to_dense",
    "truncated_attention",
    "blocked_attention",
    "causal_mask",
    "conv2d_same",
    "conv_as_attention_params",
    "cosine_similarity_matrix",
    "dot_product_score",
    "encoder_block",
    "encoder_params_from_torch",
    "fcn_tag_logits",
    "feed_forward",
    "frame_signal",
    "gat_layer",
    "gat_params_from_pyg",
    "image_to_vectors",
    "init_encoder_params",
    "init_gat_params",
    "init_mha_params",
    "layer_norm",
    "learn_embedding",
    "lecture_example",
    "merge_heads",
    "mha_params_from_torch",
    "multi_head_attention",
    "one_hot",
    "online_softmax_trace",
    "patchify",
    "path_length",
    "path_length_table",
    "relative_attention_conv",
    "rnn_forward",
    "scaled_dot_product_attention",
    "self_attention",
    "self_attention_columns",
    "shift_matrix",
    "sinusoidal_positional_encoding",
    "softmax",
    "split_heads",
    "unpatchify",
    "vectors_to_image",
    "window_features",
    "windowed_logits",
    "backward_recomputation",
    "flash_attention_io",
    "flash_backward_io",
    "flash_block_sizes",
    "standard_attention_io",
    "standard_backward_io",
    "causal_linear_attention_rnn",
    "elu_feature_map",
    "linear_attention",
    "linear_rnn_step",
    "performer_attention",
    "positive_random_features",
    "random_features",
]
