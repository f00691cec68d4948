"""Self-attention vs CNN on images (chapter "Self-attention and CNNs"), small enough for two CPU cores.

* Self-attention vs CNN on little data (Dosovitskiy et al. 2021, "An Image is Worth 16x16 Words",
  fig. 3-4: ViT beats CNNs only with much data): :class:`TinyCNN` and :class:`TinyViT` (patches +
  positional embedding + one self-attention layer + classifier) trained on subsets of scikit-learn's
  8x8 digits (the cnn chapter's data-size experiment trains them with early stopping).
* Self-attention as a CNN with a learned receptive field (Cordonnier et al. 2020):
  :class:`GaussianAttentionClassifier`, whose heads learn where to look and how wide, and
  :func:`attention_spread`, which measures how wide they look.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .layers import SelfAttention


class TinyCNN(nn.Module):
    """Conv 3x3 (1 -> ``channels``) -> ReLU -> 2x2 max-pool -> linear classifier.  Input (B, 1, 8, 8)."""

    def __init__(self, channels: int = 8, n_classes: int = 10, side: int = 8):
        super().__init__()
        self.conv = nn.Conv2d(1, channels, 3, padding=1)
        self.head = nn.Linear(channels * (side // 2) ** 2, n_classes)

    def forward(self, x):
        h = torch.relu(self.conv(x))  # (B, C, 8, 8)
        h = nn.functional.max_pool2d(h, 2)  # (B, C, 4, 4)
        return self.head(h.flatten(1))  # (B, n_classes)


class TinyViT(nn.Module):
    """Patches + learned positional embedding + one self-attention layer + mean pool + classifier.

    Input (B, 1, side, side) cut into (side/patch)^2 patches of patch*patch pixels; each patch
    is a token (Dosovitskiy et al. 2021, eq. 1-4, with a single layer and no MLP block).
    """

    def __init__(self, patch: int = 2, d_model: int = 16, n_heads: int = 2, n_classes: int = 10, side: int = 8):
        super().__init__()
        self.patch = patch
        n_tokens = (side // patch) ** 2
        self.embed = nn.Linear(patch * patch, d_model)
        self.pos = nn.Parameter(torch.randn(n_tokens, d_model) * 0.1)
        self.attn = SelfAttention(d_model, n_heads)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, n_classes)

    def patches(self, x):
        """(B, 1, S, S) -> (B, n_tokens, patch*patch), patches in row-major order."""
        p = self.patch
        B, _, S, _ = x.shape
        x = x.reshape(B, S // p, p, S // p, p).permute(0, 1, 3, 2, 4)  # (B, S/p, S/p, p, p)
        return x.reshape(B, (S // p) ** 2, p * p)  # (B, n_tokens, p*p)

    def forward(self, x):
        t = self.embed(self.patches(x)) + self.pos  # (B, n_tokens, d)
        a = self.attn(t)  # (B, n_tokens, d)
        h = self.norm(t + a)  # residual
        return self.head(h.mean(dim=1))  # (B, n_classes)


class GaussianAttentionClassifier(nn.Module):
    """:class:`TinyCNN` with its 3x3 convolution replaced by positional self-attention heads.

    Head l attends from each pixel i to every pixel j with the quadratic encoding of
    Cordonnier et al. (2020, sec. 3): alpha'_{i,j} = softmax_j(-gamma_l ||delta - Delta_l||^2),
    delta = position(j) - position(i).  The centre Delta_l (2,) and the sharpness gamma_l > 0
    are learned, so each head learns where it looks and how wide (its receptive field).
    Each head's values are a learned linear map of the pixel (1 -> ``d_v``); the heads'
    outputs are concatenated, then ReLU -> 2x2 max-pool -> linear classifier as in TinyCNN.
    Input (B, 1, side, side).
    """

    def __init__(self, n_heads: int = 8, d_v: int = 4, side: int = 8, n_classes: int = 10,
                 gamma0: float = 0.1):
        super().__init__()
        grid = torch.stack(torch.meshgrid(torch.arange(side), torch.arange(side), indexing="ij"), -1)
        grid = grid.reshape(side * side, 2).float()  # (n, 2): (row, column) of pixel i
        self.register_buffer("offsets", grid[None, :, :] - grid[:, None, :])  # (n, n, 2): j - i
        self.centre = nn.Parameter(torch.randn(n_heads, 2))  # Delta_l, in pixels
        self.log_gamma = nn.Parameter(torch.full((n_heads,), float(np.log(gamma0))))
        self.value = nn.Linear(1, n_heads * d_v)
        self.n_heads, self.d_v, self.side = n_heads, d_v, side
        self.head = nn.Linear(n_heads * d_v * (side // 2) ** 2, n_classes)

    @property
    def gamma(self) -> torch.Tensor:
        """The sharpness gamma_l of each head, (n_heads,)."""
        return self.log_gamma.exp()

    def weights(self) -> torch.Tensor:
        """alpha'_{i,j} of every head, (n_heads, n, n): rows are query pixels, columns keys."""
        dist2 = ((self.offsets[None] - self.centre[:, None, None]) ** 2).sum(-1)  # (H, n, n)
        return torch.softmax(-self.gamma[:, None, None] * dist2, dim=-1)

    def forward(self, x):
        B, S = x.shape[0], self.side
        v = self.value(x.reshape(B, S * S, 1))  # (B, n, H * d_v)
        v = v.reshape(B, S * S, self.n_heads, self.d_v).transpose(1, 2)  # (B, H, n, d_v)
        b = self.weights() @ v  # (B, H, n, d_v): head l's output at every pixel
        b = b.transpose(1, 2).reshape(B, S, S, self.n_heads * self.d_v).permute(0, 3, 1, 2)
        b = nn.functional.max_pool2d(torch.relu(b), 2)  # (B, H * d_v, S/2, S/2)
        return self.head(b.flatten(1))  # (B, n_classes)


def attention_spread(weights, side: int):
    """Per head: mean distance (in pixels) from the query to the keys, weighted by attention,
    and the fraction of the weight inside the query's 3x3 neighbourhood; both averaged over
    the query pixels.  weights: (n_heads, n, n) with n = side * side.  Returns two (n_heads,)
    arrays."""
    weights = torch.as_tensor(weights)
    grid = torch.stack(torch.meshgrid(torch.arange(side), torch.arange(side), indexing="ij"), -1)
    grid = grid.reshape(side * side, 2).float()
    offset = grid[None, :, :] - grid[:, None, :]  # (n, n, 2)
    dist = offset.norm(dim=-1)  # (n, n)
    near = (offset.abs().amax(dim=-1) <= 1).float()  # (n, n): the 3x3 neighbourhood
    mean_dist = (weights * dist).sum(-1).mean(-1)  # (n_heads,)
    in_3x3 = (weights * near).sum(-1).mean(-1)  # (n_heads,)
    return mean_dist.detach().numpy(), in_3x3.detach().numpy()


def digits_split(test_size: int = 597):
    """sklearn's 1797 digits as (X_pool, y_pool, X_test, y_test), X (N, 1, 8, 8) in [0, 1].

    One seeded split: ``test_size`` test images, the rest the pool training sets come from.
    """
    from sklearn.datasets import load_digits

    digits = load_digits()
    X = torch.tensor(digits.images / 16.0, dtype=torch.float32).unsqueeze(1)  # (1797, 1, 8, 8)
    y = torch.tensor(digits.target)
    order = torch.from_numpy(np.random.default_rng(0).permutation(len(X)))
    test, pool = order[:test_size], order[test_size:]
    return X[pool], y[pool], X[test], y[test]
