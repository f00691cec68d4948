"""Figures of chapter "Self-attention vs RNN": the computation graph of a recurrent network, a
self-attention layer or stacked (dilated) convolutions, with a shortest path from the first input to the
last output (:func:`attn_ref.recurrent.dependency_graph`, :func:`attn_ref.recurrent.shortest_path`).
"""

from __future__ import annotations

from attn_ref.recurrent import dependency_graph, shortest_path

KIND_TITLES = {"recurrent": "RNN", "attention": "self-attention", "conv": "convolution",
               "dilated_conv": "dilated convolution"}
PANELS = ("recurrent", "attention", "conv", "dilated_conv")


def draw_dependency_graph(ax, kind, n, kappa):
    """The computation graph of `kind` for n positions (convolutions with kernel size kappa), a
    shortest a^1 -> b^n in red."""
    nodes, edges = dependency_graph(kind, n, kappa)
    top = max(layer for layer, _ in nodes)
    path = shortest_path(edges, (0, 0), (top, n - 1))
    on_path = set(zip(path[:-1], path[1:], strict=True))
    for start, end in edges:
        red = (start, end) in on_path
        arrow = dict(arrowstyle="-|>", color="C3" if red else "0.75",
                     lw=2 if red else 0.6, shrinkA=5, shrinkB=5)
        ax.annotate("", xy=(end[1], end[0]), xytext=(start[1], start[0]),
                    zorder=2 if red else 1, arrowprops=arrow)
    ax.scatter([t for _, t in nodes], [layer for layer, _ in nodes], s=60,
               color="white", edgecolor="0.3", zorder=3)
    upper = (["states $h$"] if kind == "recurrent"
             else [f"layer {layer}" for layer in range(1, top + 1)])
    ax.set_yticks(range(top + 1), ["inputs $a$"] + upper)
    ax.set_xticks(range(n), [str(t + 1) for t in range(n)])
    length = len(path) - 1
    title = (f"{KIND_TITLES[kind]}, $\\kappa = {kappa}$: path length {length}" if "conv" in kind
             else f"{KIND_TITLES[kind]}: path length {length}")
    ax.set(xlabel="position", xlim=(-0.6, n - 0.4), ylim=(-0.4, top + 0.4), title=title)


def draw_path_lengths(axes, n, kappa):
    """The four computation graphs of :data:`PANELS` on ``axes``, both convolutions with the same
    kernel size ``kappa`` (the one the chapter's table of path lengths uses)."""
    for ax, kind in zip(axes, PANELS, strict=True):
        draw_dependency_graph(ax, kind, n, kappa)
