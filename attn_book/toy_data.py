"""The toy data of the book's chapters, generated deterministically from a seed.

Every figure of the book is reproducible from these (Lee, ML 2021 "Self-attention", 序列与模型 and
Sequence Labeling):

* :func:`embedding_corpus` — templated sentences about animals, vehicles and foods, the small corpus
  on which :mod:`attn_ref.embedding` learns word vectors;
* :func:`tagging_corpus` — a tiny grammar whose sentences ("I saw a saw") use the same word form as a
  verb and as a noun, with part-of-speech tags;
* :func:`first_token_batch` — the long-range toy task: sequences whose label is their first token,
  to be read at the last position;
* :func:`previous_token_batch` — the "previous token" task, where order matters;
* :func:`synthetic_waveform` — one second of 16 kHz audio (framed by :mod:`attn_ref.speech`);
* :func:`toy_molecule` — a graph as node vectors plus an adjacency matrix;
* :func:`toy_decoder_step`, :func:`greedy_decode` — a hand-written Seq2Seq decoder that reads its own
  last token at every step and stops when it writes ``<eos>`` (no training: two score tables).

The maths that turns these into vectors (framing, adjacency matrices) is in :mod:`attn_ref`.
"""

from __future__ import annotations

import numpy as np

from attn_ref.graph import adjacency_from_edges

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


# ---------------------------------------------------------------------------------------------
# Long-range and order tasks
# ---------------------------------------------------------------------------------------------

def first_token_batch(rng: np.random.Generator, batch_size: int, n: int = 40, vocab: int = 8,
                      cues: int | None = None):
    """A batch of the long-range toy task: label = the first token, read at the last position.

    Returns (tokens (batch_size, n) int64 in [0, vocab), labels (batch_size,) = tokens[:, 0]).
    A model reads the label at the last position, n - 1 positions away from where it is.
    cues: None, every token is drawn from the whole vocabulary; an integer k, the first token is one
    of k cue words 0 .. k-1 (e.g. ``yes``, ``no``), drawn first, and the other n - 1 are filler words
    k .. vocab-1, so only the first word tells the label (chance is 1/k).
    """
    if n < 1 or vocab < 2:
        raise ValueError(f"n, vocab: expected n >= 1 and vocab >= 2, got n={n}, vocab={vocab}")
    if cues is None:
        tokens = rng.integers(0, vocab, size=(batch_size, n), dtype=np.int64)  # (B, n)
        return tokens, tokens[:, 0].copy()
    if not 2 <= cues < vocab:
        raise ValueError(f"cues: expected 2 <= cues < vocab={vocab}, got {cues}")
    labels = rng.integers(0, cues, size=batch_size, dtype=np.int64)  # (B,)
    tokens = rng.integers(cues, vocab, size=(batch_size, n), dtype=np.int64)  # (B, n) fillers
    tokens[:, 0] = labels
    return tokens, labels


def previous_token_batch(batch: int, n: int, vocab: int, generator):
    """Random tokens (batch, n) and targets (batch, n): target[:, i] = tokens[:, i-1]; target[:, 0] = -100 (ignored).

    torch tensors, drawn with the ``torch.Generator`` ``generator``.
    """
    import torch

    tokens = torch.randint(0, vocab, (batch, n), generator=generator)  # (B, n)
    target = torch.full_like(tokens, -100)
    target[:, 1:] = tokens[:, :-1]  # (B, n - 1)
    return tokens, target


# ---------------------------------------------------------------------------------------------
# Audio and graphs
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


# ---------------------------------------------------------------------------------------------
# Seq2Seq: a decoder that reads its own last output
# ---------------------------------------------------------------------------------------------

DECODER_VOCAB = ["<bos>", "<eos>", "the", "animal", "vehicle", "food", "runs", "is", "late", "very", "hot"]
_DECODER_TRANSITIONS = {  # (token written last, next token): score
    ("<bos>", "the"): 2, ("the", "animal"): 1, ("the", "vehicle"): 1, ("the", "food"): 1,
    ("animal", "runs"): 2, ("vehicle", "is"): 2, ("food", "is"): 2, ("is", "late"): 1,
    ("is", "very"): 1, ("very", "hot"): 2, ("runs", "<eos>"): 2, ("late", "<eos>"): 2,
    ("hot", "<eos>"): 2,
}
_DECODER_TOPIC_BIAS = {"animal": ["animal"], "vehicle": ["vehicle", "late"], "food": ["food", "very"]}


def toy_decoder_tables() -> tuple[np.ndarray, np.ndarray]:
    """The toy decoder's two score tables over :data:`DECODER_VOCAB`, written by hand, not trained:
    ``after`` (|vocab|, |vocab|), ``after[y, z]`` the score of writing ``z`` right after ``y``, and
    ``bonus`` (3, |vocab|), ``bonus[g, z]`` what the input's topic ``g`` (the groups of
    :data:`EMBEDDING_GROUPS`, in order) adds to ``z``."""
    index = {t: i for i, t in enumerate(DECODER_VOCAB)}
    after = np.zeros((len(DECODER_VOCAB), len(DECODER_VOCAB)))
    for (prev, nxt), score in _DECODER_TRANSITIONS.items():
        after[index[prev], index[nxt]] = score
    bonus = np.zeros((len(EMBEDDING_GROUPS), len(DECODER_VOCAB)))
    for g, topic in enumerate(EMBEDDING_GROUPS):
        bonus[g, [index[t] for t in _DECODER_TOPIC_BIAS[topic]]] = 1
    return after, bonus


def toy_decoder_step(prev: str, topic: str) -> np.ndarray:
    """Scores over :data:`DECODER_VOCAB` for the next token, from the token written last (``prev``)
    and the input's topic: ``after[prev] + bonus[topic]`` (:func:`toy_decoder_tables`)."""
    after, bonus = toy_decoder_tables()
    return after[DECODER_VOCAB.index(prev)] + bonus[list(EMBEDDING_GROUPS).index(topic)]


def greedy_decode(topic: str, prefix=(), max_steps: int = 20) -> list[tuple[str, str]]:
    """Greedy decoding with :func:`toy_decoder_step`: from ``<bos>`` (then the forced tokens of
    ``prefix``, as if the decoder had written them), each step reads the token written last and
    writes the highest-scoring one, until it writes ``<eos>``.  Returns the steps as
    (token read, token written) pairs, ``prefix`` included; the output is the written tokens
    before ``<eos>``.  Raises RuntimeError if ``<eos>`` does not come within ``max_steps``."""
    steps, prev = [], "<bos>"
    for forced in prefix:
        steps.append((prev, forced))
        prev = forced
    while len(steps) < max_steps:
        token = DECODER_VOCAB[int(np.argmax(toy_decoder_step(prev, topic)))]
        steps.append((prev, token))
        if token == "<eos>":
            return steps
        prev = token
    raise RuntimeError(f"no <eos> within {max_steps} steps: {steps}")
