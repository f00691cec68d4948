"""The PyTorch taggers of the chapter "Sequence labeling without attention".

The same two-layer fully connected network on every token (or on a window of tokens): trained
here, then read back into NumPy for :func:`attn_ref.seqlabel.fcn_tag_logits`.
"""

from __future__ import annotations

import numpy as np
import torch

from .training import accuracy, cross_entropy, train


def make_tagger(d_in: int, n_tags: int, hidden: int = 32, seed: int = 0):
    """Linear(d_in, hidden) -> ReLU -> Linear(hidden, n_tags), seeded initialisation."""
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(d_in, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, n_tags))


def tagger_weights(model) -> tuple[np.ndarray, ...]:
    """(W1, b1, W2, b2) of a :func:`make_tagger` model as float64 arrays (for ``fcn_tag_logits``)."""
    return tuple(p.detach().cpu().numpy().astype(np.float64) for p in model.parameters())


def train_tagger(X_train, y_train, X_val=None, y_val=None, *, n_tags: int, hidden: int = 32,
                 steps: int = 300, lr: float = 0.01, weight_decay: float = 0.0, seed: int = 0,
                 eval_every: int = 10):
    """Full-batch Adam on cross-entropy. Returns (model, curves).

    curves: dict of lists ``step``, ``train_loss``, ``train_acc``, ``val_loss``, ``val_acc``
    (the validation entries only when a validation set is given), measured every ``eval_every`` steps
    and after the last one.
    """
    sets = {"train": (torch.as_tensor(X_train, dtype=torch.float32), torch.as_tensor(y_train))}
    if X_val is not None:
        sets["val"] = (torch.as_tensor(X_val, dtype=torch.float32), torch.as_tensor(y_val))
    model = make_tagger(sets["train"][0].shape[1], n_tags, hidden, seed)

    def evaluate(m):
        values = {}
        for name, (X, y) in sets.items():
            with torch.no_grad():
                values[f"{name}_loss"] = float(cross_entropy(m(X), y))
            values[f"{name}_acc"] = accuracy(m, X, y)
        return values

    steps_at, values = train(model, lambda: sets["train"], steps=steps, lr=lr, weight_decay=weight_decay,
                             evaluate=evaluate, every=eval_every)
    curves: dict[str, list] = {"step": steps_at}
    for key in ("train_loss", "train_acc", "val_loss", "val_acc"):
        curves[key] = [v[key] for v in values if key in v]
    return model, curves


def predict_tags(model, features) -> np.ndarray:
    """Argmax tag index of every row of ``features`` (N, d_in) under a torch tagger."""
    with torch.no_grad():
        return model(torch.as_tensor(np.asarray(features), dtype=torch.float32)).argmax(1).numpy()
