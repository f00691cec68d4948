"""Toy inputs of the chapters "Vector sets as input" and "Sequence labeling without attention".

Everything here is generated deterministically from a seed, so every figure of the
book is reproducible (Lee, ML 2021 "Self-attention", 序列与模型 and Sequence Labeling):

* :func:`embedding_corpus` — templated sentences about animals, vehicles and foods,
  the small corpus on which :mod:`attn_ref.embedding` learns word vectors;
* :func:`tagging_corpus` — a tiny grammar whose sentences ("I saw a saw") use the same
  word form as a verb and as a noun, with part-of-speech tags;
* :func:`long_range_corpus` — sequences whose last tag is decided by the first word;
* :func:`synthetic_waveform` and :func:`frame_signal` — 16 kHz audio cut into 25 ms
  frames every 10 ms (400 samples, hop 160: 100 frames per second);
* :func:`toy_molecule` and :func:`adjacency_from_edges` — a graph as node vectors
  plus an adjacency matrix.
"""

from __future__ import annotations

import numpy as np

from ._checks import as_array, check_ndim

# ---------------------------------------------------------------------------------------------
# Words
# ---------------------------------------------------------------------------------------------

EMBEDDING_GROUPS: dict[str, list[str]] = {
    "animal": ["cat", "dog", "horse", "cow", "bird"],
    "vehicle": ["car", "bus", "truck", "train", "bike"],
    "food": ["apple", "bread", "rice", "cheese", "soup"],
}

_EMBEDDING_TEMPLATES: dict[str, list[str]] = {
    "animal": ["the {} ran across the field", "the {} slept in the barn", "a hungry {} was fed",
               "the farmer fed the {}", "my {} is a friendly pet", "the {} drank water"],
    "vehicle": ["the {} drove on the road", "we parked the {} outside", "the {} needs fuel",
                "the driver stopped the {}", "a fast {} passed the station", "the {} carried passengers"],
    "food": ["we ate the {} for lunch", "the {} tastes sweet", "she cooked the {}",
             "a fresh {} was served", "the {} was on the plate", "they bought {} at the market"],
}


_OWN_TEMPLATES: dict[str, str] = {  # one context that only this word has
    "cat": "the {} purred", "dog": "the {} barked", "horse": "the {} galloped", "cow": "the {} gave milk",
    "bird": "the {} flew away", "car": "the {} honked", "bus": "the {} stopped for children",
    "truck": "the {} hauled cargo", "train": "the {} left the platform", "bike": "the {} has pedals",
    "apple": "the {} fell from the tree", "bread": "the {} was baked", "rice": "the {} was boiled",
    "cheese": "the {} was aged", "soup": "the {} was hot",
}
_SHARED_TEMPLATES = ["I like the {}", "look at that {}", "there is a {} here"]  # any group


def embedding_corpus(n_sentences: int = 600, seed: int = 0) -> list[list[str]]:
    """``n_sentences`` tokenised sentences: templates filled with a word of :data:`EMBEDDING_GROUPS`.

    Words of the same group share most of their contexts (``the cat slept`` / ``the dog slept``);
    each word also has a context of its own (``the dog barked``, 25 % of its sentences) and all
    words share a few neutral ones (``I like the ...``, 10 %).  That is all a distributional
    embedding needs to put related words close.
    """
    rng = np.random.default_rng(seed)
    groups = list(EMBEDDING_GROUPS)
    sentences = []
    for _ in range(n_sentences):
        g = groups[rng.integers(len(groups))]
        word = EMBEDDING_GROUPS[g][rng.integers(len(EMBEDDING_GROUPS[g]))]
        u = rng.random()
        if u < 0.25:
            template = _OWN_TEMPLATES[word]
        elif u < 0.35:
            template = _SHARED_TEMPLATES[rng.integers(len(_SHARED_TEMPLATES))]
        else:
            template = _EMBEDDING_TEMPLATES[g][rng.integers(len(_EMBEDDING_TEMPLATES[g]))]
        sentences.append(template.format(word).split())
    return sentences


def build_vocab(sentences, extra=()) -> dict[str, int]:
    """Word -> index, in order of first appearance (``extra`` words, e.g. ``"<pad>"``, first)."""
    vocab: dict[str, int] = {}
    for w in list(extra) + [w for s in sentences for w in s]:
        vocab.setdefault(w, len(vocab))
    return vocab


# ---------------------------------------------------------------------------------------------
# Part-of-speech tagging: the same word form is a verb or a noun depending on its context
# ---------------------------------------------------------------------------------------------

TAGS = ["PRON", "DET", "ADJ", "NOUN", "VERB"]
AMBIGUOUS = ["saw", "watch", "duck", "fly", "ring", "can"]  # each is a verb AND a noun
_PRONOUNS = ["I", "you", "we", "they"]
_DETS = ["a", "the"]
_ADJS = ["big", "old", "red"]
_NOUNS = ["dog", "cat", "tree", "box"] + AMBIGUOUS
_VERBS = ["see", "like", "found"] + AMBIGUOUS


def _noun_phrase(rng) -> list[tuple[str, str]]:
    """PRON | DET (ADJ) NOUN."""
    if rng.random() < 0.3:
        return [(_PRONOUNS[rng.integers(len(_PRONOUNS))], "PRON")]
    phrase = [(_DETS[rng.integers(len(_DETS))], "DET")]
    if rng.random() < 0.3:
        phrase.append((_ADJS[rng.integers(len(_ADJS))], "ADJ"))
    phrase.append((_NOUNS[rng.integers(len(_NOUNS))], "NOUN"))
    return phrase


def tagging_corpus(n_sentences: int = 400, seed: int = 0) -> list[tuple[list[str], list[str]]]:
    """``n_sentences`` pairs (words, tags) from the grammar S -> NP VERB NP, NP -> PRON | DET (ADJ) NOUN.

    Ambiguous forms (``saw``, ``watch``, ...) appear as VERB after a noun phrase and as NOUN after a
    determiner or an adjective, so ``I saw a saw`` is a sentence of this language.  The first
    sentence is always ``I saw a saw``.
    """
    rng = np.random.default_rng(seed)
    out = [(["I", "saw", "a", "saw"], ["PRON", "VERB", "DET", "NOUN"])]
    while len(out) < n_sentences:
        pairs = _noun_phrase(rng) + [(_VERBS[rng.integers(len(_VERBS))], "VERB")] + _noun_phrase(rng)
        out.append(([w for w, _ in pairs], [t for _, t in pairs]))
    return out[:n_sentences]


def tagging_vocab() -> dict[str, int]:
    """The fixed vocabulary of :func:`tagging_corpus` (index 0 is ``"<pad>"``)."""
    words = ["<pad>"] + _PRONOUNS + _DETS + _ADJS + _NOUNS + [v for v in _VERBS if v not in _NOUNS]
    return {w: i for i, w in enumerate(words)}


def encode(sentences, vocab: dict[str, int]) -> list[np.ndarray]:
    """Each sentence (list of strings) as an int array of indices."""
    return [np.array([vocab[w] for w in s], dtype=np.int64) for s in sentences]


def long_range_corpus(n_sentences: int, length: int = 8, n_fillers: int = 10,
                      seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Sequences whose last tag is decided by the first word, ``length - 1`` positions earlier.

    Vocabulary: 0 = ``yes``, 1 = ``no``, 2 .. 2 + n_fillers - 1 = filler words.  Each sequence is
    one of the two cue words followed by ``length - 1`` random fillers.  Returns
    ``tokens (n_sentences, length)`` and ``labels (n_sentences,)``: the label of the last
    word is 0 after ``yes`` and 1 after ``no`` — chance is 50 %.
    """
    if length < 2:
        raise ValueError(f"length: expected at least 2, got {length}")
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, size=n_sentences)
    tokens = rng.integers(2, 2 + n_fillers, size=(n_sentences, length))
    tokens[:, 0] = labels
    return tokens, labels


# ---------------------------------------------------------------------------------------------
# Audio: a waveform cut into frames
# ---------------------------------------------------------------------------------------------

def synthetic_waveform(duration: float = 1.0, sr: int = 16000, seed: int = 0) -> np.ndarray:
    """A (duration * sr,) float64 waveform: a rising chirp (first half), then a vowel-like sound.

    The chirp sweeps 300 Hz -> 3 kHz; the "vowel" is a 120 Hz pitch with harmonics shaped by two
    formant bumps (around 700 Hz and 1200 Hz, like an /a/); a little seeded noise is added.
    """
    rng = np.random.default_rng(seed)
    n = int(round(duration * sr))
    t = np.arange(n) / sr
    half = duration / 2
    f0, f1 = 300.0, 3000.0
    chirp = np.sin(2 * np.pi * (f0 * t + (f1 - f0) / (2 * half) * t**2))  # instantaneous f = f0 + (f1-f0) t/half
    vowel = np.zeros(n)
    for h in range(1, 30):
        f = 120.0 * h
        gain = np.exp(-((f - 700) / 150) ** 2) + 0.6 * np.exp(-((f - 1200) / 200) ** 2) + 0.05
        vowel += gain * np.sin(2 * np.pi * f * t)
    vowel /= np.abs(vowel).max()
    x = np.where(t < half, 0.8 * chirp, 0.8 * vowel)
    return x + 0.02 * rng.standard_normal(n)


def n_frames(n_samples: int, frame_len: int = 400, hop: int = 160) -> int:
    """1 + (n_samples - frame_len) // hop: the number of complete frames (0 if the signal is too short)."""
    if n_samples < frame_len:
        return 0
    return 1 + (n_samples - frame_len) // hop


def frame_signal(x, frame_len: int = 400, hop: int = 160) -> np.ndarray:
    """Cut ``x`` (n_samples,) into overlapping frames: (n_frames, frame_len), frame i = x[i*hop : i*hop+frame_len].

    n_frames = 1 + (n_samples - frame_len) // hop; a last incomplete frame is dropped (no padding).
    At 16 kHz the defaults are the usual 25 ms windows every 10 ms: 100 frames per second.
    """
    x = as_array(x, "x")
    check_ndim(x, "x", 1, "(n_samples,)")
    if frame_len < 1 or hop < 1:
        raise ValueError(f"frame_len and hop: expected positive integers, got {frame_len} and {hop}")
    if x.shape[0] < frame_len:
        raise ValueError(f"x: expected at least frame_len={frame_len} samples, got shape {x.shape}")
    count = n_frames(x.shape[0], frame_len, hop)
    starts = hop * np.arange(count)  # (n_frames,)
    return x[starts[:, None] + np.arange(frame_len)[None, :]]  # (n_frames, frame_len)


def frame_spectra(frames) -> np.ndarray:
    """|FFT| of each Hann-windowed frame: (n_frames, frame_len) -> (n_frames, frame_len // 2 + 1)."""
    frames = as_array(frames, "frames")
    check_ndim(frames, "frames", 2, "(n_frames, frame_len)")
    return np.abs(np.fft.rfft(frames * np.hanning(frames.shape[1]), axis=1))


# ---------------------------------------------------------------------------------------------
# Graphs
# ---------------------------------------------------------------------------------------------

def adjacency_from_edges(edges, n_nodes: int, undirected: bool = True) -> np.ndarray:
    """Adjacency matrix (n_nodes, n_nodes) from ``edges`` (m, 2) of 0-based node indices.

    A[i, j] = 1 if there is an edge i -> j (and j -> i too when ``undirected``); repeated edges
    still give 1; no self loops are added (only those listed).
    """
    edges = np.asarray(edges)
    if edges.size == 0:
        edges = edges.reshape(0, 2)
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise ValueError(f"edges: expected shape (m, 2), got {edges.shape}")
    if edges.size and (edges.min() < 0 or edges.max() >= n_nodes):
        raise ValueError(f"edges: expected node indices in [0, {n_nodes}), got {edges.min()}..{edges.max()}")
    A = np.zeros((n_nodes, n_nodes))
    A[edges[:, 0], edges[:, 1]] = 1.0
    if undirected:
        A[edges[:, 1], edges[:, 0]] = 1.0
    return A


def toy_molecule() -> dict:
    """Ethanol, CH3-CH2-OH, as a graph: 9 atoms (nodes) and 8 bonds (edges).

    Returns a dict with ``atoms`` (9 element symbols), ``features`` (9, 3): one-hot of (C, O, H),
    ``edges`` (8, 2), ``positions`` (9, 2) for drawing, ``adjacency`` (9, 9).
    """
    atoms = ["C", "C", "O", "H", "H", "H", "H", "H", "H"]
    edges = np.array([[0, 1], [1, 2], [0, 3], [0, 4], [0, 5], [1, 6], [1, 7], [2, 8]])
    positions = np.array([[0, 0], [1.2, 0], [2.4, 0], [-0.9, 0.6], [-0.9, -0.6], [0, -1.0],
                          [1.2, 1.0], [1.2, -1.0], [3.2, 0.6]], dtype=float)
    elements = ["C", "O", "H"]
    features = np.eye(len(elements))[[elements.index(a) for a in atoms]]  # (9, 3)
    return {"atoms": atoms, "elements": elements, "features": features, "edges": edges,
            "positions": positions, "adjacency": adjacency_from_edges(edges, len(atoms))}
