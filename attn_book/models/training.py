"""The one training loop and the one accuracy of the book's small PyTorch models.

:func:`train` is Adam on a cross-entropy, one batch per step, with an optional gradient clip and
an optional evaluation every few steps; the chapters' experiments differ only in where their
batches come from (:func:`random_batches` of a fixed data set, fresh batches of a toy task, or the
whole training set at every step) and in what they evaluate.  Everything is seeded and runs on the
CPU in seconds.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


def n_parameters(model: nn.Module) -> int:
    """The number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def logits_of(output) -> torch.Tensor:
    """The logits of a model's output: the output itself, or its first element for models that
    also return their attention weights (``(logits, weights)``)."""
    return output[0] if isinstance(output, tuple) else output


def cross_entropy(output, target) -> torch.Tensor:
    """Mean cross-entropy of logits (..., n_classes) against integer targets (...); targets equal to
    -100 are ignored (positions without a label)."""
    logits = logits_of(output)
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))


def accuracy(model: nn.Module, X, y, ignore_index: int = -100) -> float:
    """Fraction of the labelled positions of ``X`` where the model's argmax equals ``y``.

    Evaluation mode, no gradients; positions whose target is ``ignore_index`` do not count.
    """
    model.eval()
    with torch.no_grad():
        pred = logits_of(model(X)).argmax(dim=-1)
    keep = y != ignore_index
    return float((pred[keep] == y[keep]).float().mean())


def train(model: nn.Module, next_batch, *, steps: int, lr: float, weight_decay: float = 0.0,
          clip: float | None = None, evaluate=None, every: int = 1):
    """Adam on :func:`cross_entropy` for ``steps`` steps; ``next_batch() -> (inputs, targets)`` gives each batch.

    Each step: training mode, the next batch, the loss, zeroed gradients, backward, the gradient norm
    clipped to ``clip`` (if given), an optimizer step.  ``evaluate(model)`` (if given) is recorded
    before the first step, after every ``every`` steps and after the last one.
    Returns (the steps evaluated, the values ``evaluate`` returned there); ``([], [])`` without it.
    """
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    at, values = [], []
    if evaluate is not None:
        at.append(0)
        values.append(evaluate(model))
    for step in range(1, steps + 1):
        model.train()
        inputs, targets = next_batch()
        loss = cross_entropy(model(inputs), targets)
        opt.zero_grad()
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if evaluate is not None and (step % every == 0 or step == steps):
            at.append(step)
            values.append(evaluate(model))
    return at, values


def random_batches(X, y, batch_size: int, seed: int):
    """``next_batch`` for :func:`train`: ``batch_size`` rows of (X, y) drawn with replacement (seeded)."""
    g = torch.Generator().manual_seed(seed)

    def next_batch():
        idx = torch.randint(len(X), (min(batch_size, len(X)),), generator=g)
        return X[idx], y[idx]

    return next_batch


def train_classifier(model: nn.Module, X, y, *, steps: int = 300, batch_size: int = 64, lr: float = 1e-2,
                     seed: int = 0, weight_decay: float = 0.0) -> nn.Module:
    """Adam on cross-entropy for ``steps`` mini-batches drawn (seeded) from (X, y); returns the model."""
    train(model, random_batches(X, y, batch_size, seed), steps=steps, lr=lr, weight_decay=weight_decay)
    return model


def train_with_early_stopping(make_model, X, y, X_val, y_val, *, seed: int, patience: int = 4,
                              max_rounds: int = 30, steps_per_round: int = 50) -> nn.Module:
    """``make_model()`` trained with :func:`train_classifier` in rounds of ``steps_per_round`` steps until
    the accuracy on (X_val, y_val) has not improved for ``patience`` rounds (at most ``max_rounds``);
    returns the model as it was after its best round."""
    import copy

    torch.manual_seed(seed)
    model, best_acc, best_state, since = make_model(), -1.0, None, 0
    for round_ in range(max_rounds):
        train_classifier(model, X, y, steps=steps_per_round, seed=1000 * seed + round_)
        acc = accuracy(model, X_val, y_val)
        if acc > best_acc:
            best_acc, best_state, since = acc, copy.deepcopy(model.state_dict()), 0
        else:
            since += 1
            if since == patience:
                break
    model.load_state_dict(best_state)
    return model


def train_sequence_model(model: nn.Module, make_batch, *, steps: int = 300, batch_size: int = 64,
                         lr: float = 3e-3, eval_every: int = 20, seed: int = 0, clip: float = 1.0):
    """Train on fresh batches ``make_batch(rng, batch_size) -> (tokens, target)``; return the learning curve.

    Returns (steps_evaluated, accuracies) on one fixed held-out batch of 512 sequences.
    Gradients are clipped to norm ``clip`` (standard for RNNs, given to both models).
    """
    rng = np.random.default_rng(seed)
    X_val, y_val = (torch.as_tensor(a) for a in make_batch(np.random.default_rng(10_000 + seed), 512))

    def next_batch():
        return tuple(torch.as_tensor(a) for a in make_batch(rng, batch_size))

    at, acc = train(model, next_batch, steps=steps, lr=lr, clip=clip, every=eval_every,
                    evaluate=lambda m: accuracy(m, X_val, y_val))
    return np.array(at), np.array(acc)
