"""attn_book.toy_data: deterministic corpora and toy tasks, the molecule; attn_ref.graph.adjacency_from_edges."""

import numpy as np
import pytest

from attn_book.toy_data import (
    TAGS,
    embedding_corpus,
    encode,
    first_token_batch,
    previous_token_batch,
    tagging_corpus,
    tagging_vocab,
    toy_molecule,
)
from attn_ref.graph import adjacency_from_edges


def test_corpora_are_deterministic_and_seed_dependent():
    assert embedding_corpus(50, seed=3) == embedding_corpus(50, seed=3)
    assert embedding_corpus(50, seed=3) != embedding_corpus(50, seed=4)
    assert tagging_corpus(50, seed=1) == tagging_corpus(50, seed=1)
    a, la = first_token_batch(np.random.default_rng(5), 20, 8, vocab=12, cues=2)
    b, lb = first_token_batch(np.random.default_rng(5), 20, 8, vocab=12, cues=2)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(la, lb)


def test_tagging_corpus_has_ambiguous_forms_in_both_roles():
    corpus = tagging_corpus(300, seed=0)
    assert corpus[0] == (["I", "saw", "a", "saw"], ["PRON", "VERB", "DET", "NOUN"])
    roles = {}
    for words, tags in corpus:
        assert len(words) == len(tags)
        assert set(tags) <= set(TAGS)
        for w, t in zip(words, tags, strict=True):
            roles.setdefault(w, set()).add(t)
    assert roles["saw"] == {"VERB", "NOUN"}
    assert roles["watch"] == {"VERB", "NOUN"}
    vocab = tagging_vocab()
    assert len(set(vocab.values())) == len(vocab) and vocab["<pad>"] == 0
    ids = encode([w for w, _ in corpus], vocab)
    assert all(i.min() >= 1 for i in ids)  # <pad> never occurs inside a sentence


def test_long_range_label_is_the_first_word():
    tokens, labels = first_token_batch(np.random.default_rng(0), 100, 6, vocab=6, cues=2)
    assert tokens.shape == (100, 6) and tokens.dtype == labels.dtype == np.int64
    np.testing.assert_array_equal(tokens[:, 0], labels)
    assert tokens[:, 1:].min() >= 2 and tokens[:, 1:].max() <= 5  # fillers never repeat a cue
    assert 20 < labels.sum() < 80
    tokens, labels = first_token_batch(np.random.default_rng(0), 50, 10, vocab=8)
    np.testing.assert_array_equal(tokens[:, 0], labels)
    assert tokens.min() >= 0 and tokens.max() <= 7 and (tokens[:, 1:] < 2).any()  # cues anywhere
    for bad in ({"n": 0}, {"vocab": 1}, {"cues": 1}, {"cues": 8}):
        with pytest.raises(ValueError):
            first_token_batch(np.random.default_rng(0), 4, **{"n": 5, "vocab": 8, **bad})


def test_cue_words_draw_the_labels_first_then_the_fillers():
    """The draws the chapter "Sequence labeling" relies on: labels, then fillers, from one generator."""
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, size=30)
    fillers = rng.integers(2, 12, size=(30, 8))
    tokens, got = first_token_batch(np.random.default_rng(3), 30, 8, vocab=12, cues=2)
    np.testing.assert_array_equal(got, labels)
    np.testing.assert_array_equal(tokens[:, 1:], fillers[:, 1:])


def test_previous_token_targets():
    torch = pytest.importorskip("torch")
    tokens, target = previous_token_batch(4, 6, 5, torch.Generator().manual_seed(0))
    assert tokens.shape == target.shape == (4, 6)
    assert (target[:, 0] == -100).all()
    assert torch.equal(target[:, 1:], tokens[:, :-1])


def test_adjacency_from_edges():
    A = adjacency_from_edges([[0, 1], [1, 2], [1, 2]], 4)
    expected = np.zeros((4, 4))
    expected[0, 1] = expected[1, 0] = expected[1, 2] = expected[2, 1] = 1
    np.testing.assert_array_equal(A, expected)
    D = adjacency_from_edges([[0, 1], [1, 2]], 3, undirected=False)
    assert D[0, 1] == 1 and D[1, 0] == 0
    assert adjacency_from_edges(np.zeros((0, 2), dtype=int), 2).sum() == 0
    with pytest.raises(ValueError, match=r"\(m, 2\)"):
        adjacency_from_edges([0, 1, 2], 3)
    with pytest.raises(ValueError, match="node indices"):
        adjacency_from_edges([[0, 3]], 3)


def test_adjacency_matches_torch_geometric():
    pyg_utils = pytest.importorskip("torch_geometric.utils")
    torch = pytest.importorskip("torch")
    edges = np.array([[0, 1], [1, 2], [3, 0], [2, 2]])
    ei = pyg_utils.to_undirected(torch.as_tensor(edges.T))
    dense = pyg_utils.to_dense_adj(ei, max_num_nodes=5)[0].numpy()
    np.testing.assert_array_equal(adjacency_from_edges(edges, 5), dense)


def test_toy_molecule_is_ethanol():
    m = toy_molecule()
    A = m["adjacency"]
    assert A.shape == (9, 9) and (A == A.T).all() and np.trace(A) == 0
    degrees = A.sum(axis=1)
    valence = {"C": 4, "O": 2, "H": 1}
    np.testing.assert_array_equal(degrees, [valence[a] for a in m["atoms"]])
    np.testing.assert_array_equal(m["features"].sum(axis=1), np.ones(9))


def test_toy_decoder_reads_its_own_last_token_and_stops_on_eos():
    from attn_book.toy_data import EMBEDDING_GROUPS, greedy_decode

    lengths = {}
    for topic in EMBEDDING_GROUPS:
        steps = greedy_decode(topic)
        assert steps[0][0] == "<bos>" and steps[-1][1] == "<eos>"
        assert all(read == steps[t - 1][1] for t, (read, _) in enumerate(steps) if t)  # fed back
        assert "<eos>" not in [w for _, w in steps[:-1]]
        lengths[topic] = len(steps) - 1
    assert len(set(lengths.values())) == 3, lengths  # n' differs from topic to topic
    # the same input, another token written at step 2: another continuation, another n'
    forced = greedy_decode("vehicle", prefix=["the", "animal"])
    assert [w for _, w in forced[2:]] == ["runs", "<eos>"]
    assert len(forced) - 1 != lengths["vehicle"]


def test_toy_decoder_scores_depend_on_the_token_read(monkeypatch):
    import attn_book.toy_data as toy
    from attn_book.toy_data import DECODER_VOCAB, toy_decoder_step

    assert not np.array_equal(toy_decoder_step("vehicle", "food"), toy_decoder_step("is", "food"))
    assert DECODER_VOCAB[int(np.argmax(toy_decoder_step("is", "food")))] == "very"
    assert DECODER_VOCAB[int(np.argmax(toy_decoder_step("is", "vehicle")))] == "late"
    monkeypatch.setattr(toy, "toy_decoder_step", lambda prev, topic: np.eye(len(DECODER_VOCAB))[2])
    with pytest.raises(RuntimeError, match="no <eos> within 5 steps"):
        toy.greedy_decode("food", max_steps=5)
