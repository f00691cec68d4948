"""The book's small PyTorch models, their one training loop (:func:`train`) and one :func:`accuracy`.

* :mod:`.training` — the loop, the accuracy, and the two ways the chapters feed it;
* :mod:`.vision` — TinyCNN / TinyViT on sklearn's digits, the Gaussian-attention classifier;
* :mod:`.sequence` — RNN vs self-attention on the long-range task, the positional-encoding model;
* :mod:`.tagger` — the fully connected taggers of sequence labeling.
"""

from .layers import SelfAttention
from .sequence import (
    ENCODINGS,
    AttentionClassifier,
    RNNClassifier,
    TinyAttentionModel,
    TrainResult,
    train_order_model,
)
from .tagger import make_tagger, predict_tags, tagger_weights, train_tagger
from .training import (
    accuracy,
    cross_entropy,
    logits_of,
    n_parameters,
    random_batches,
    train,
    train_classifier,
    train_sequence_model,
    train_with_early_stopping,
)
from .vision import (
    GaussianAttentionClassifier,
    TinyCNN,
    TinyViT,
    attention_spread,
    digits_split,
)

__all__ = [
    "ENCODINGS",
    "AttentionClassifier",
    "GaussianAttentionClassifier",
    "RNNClassifier",
    "SelfAttention",
    "TinyAttentionModel",
    "TinyCNN",
    "TinyViT",
    "TrainResult",
    "accuracy",
    "attention_spread",
    "cross_entropy",
    "digits_split",
    "logits_of",
    "make_tagger",
    "n_parameters",
    "predict_tags",
    "random_batches",
    "tagger_weights",
    "train",
    "train_classifier",
    "train_order_model",
    "train_sequence_model",
    "train_tagger",
    "train_with_early_stopping",
]
