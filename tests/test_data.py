"""attn_ref.data: deterministic corpora, framing (vs a hand loop and the count formula), graphs."""

import numpy as np
import pytest

from attn_ref.data import (
    TAGS,
    adjacency_from_edges,
    embedding_corpus,
    encode,
    frame_signal,
    frame_spectra,
    long_range_corpus,
    n_frames,
    synthetic_waveform,
    tagging_corpus,
    tagging_vocab,
    toy_molecule,
)


def test_corpora_are_deterministic_and_seed_dependent():
    assert embedding_corpus(50, seed=3) == embedding_corpus(50, seed=3)
    assert embedding_corpus(50, seed=3) != embedding_corpus(50, seed=4)
    assert tagging_corpus(50, seed=1) == tagging_corpus(50, seed=1)
    a, la = long_range_corpus(20, seed=5)
    b, lb = long_range_corpus(20, seed=5)
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
    tokens, labels = long_range_corpus(100, length=6, n_fillers=4, seed=0)
    assert tokens.shape == (100, 6)
    np.testing.assert_array_equal(tokens[:, 0], labels)
    assert tokens[:, 1:].min() >= 2 and tokens[:, 1:].max() <= 5
    assert 20 < labels.sum() < 80


@pytest.mark.parametrize("n,frame_len,hop", [(16000, 400, 160), (1000, 400, 160), (400, 400, 160),
                                             (559, 400, 160), (560, 400, 160), (37, 5, 3), (10, 4, 4)])
def test_frame_signal_equals_a_hand_loop(n, frame_len, hop):
    x = np.random.default_rng(n).standard_normal(n)
    frames = frame_signal(x, frame_len, hop)
    expected = []
    start = 0
    while start + frame_len <= n:
        expected.append(x[start:start + frame_len])
        start += hop
    np.testing.assert_array_equal(frames, np.array(expected))
    assert frames.shape[0] == 1 + (n - frame_len) // hop == n_frames(n, frame_len, hop)


def test_frame_signal_matches_torch_unfold():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal(3210)
    np.testing.assert_array_equal(frame_signal(x), torch.from_numpy(x).unfold(0, 400, 160).numpy())


def test_one_second_at_16k_gives_98_frames_of_25ms():
    x = synthetic_waveform(1.0, 16000, seed=0)
    assert x.shape == (16000,)
    frames = frame_signal(x)
    assert frames.shape == (98, 400)  # 1 + (16000 - 400) // 160
    spectra = frame_spectra(frames)
    assert spectra.shape == (98, 201)
    # the chirp rises: the peak frequency of an early frame is below that of a later chirp frame
    assert spectra[5].argmax() < spectra[40].argmax()


def test_frame_signal_rejects_bad_input():
    with pytest.raises(ValueError, match=r"\(n_samples,\)"):
        frame_signal(np.zeros((2, 500)))
    with pytest.raises(ValueError, match="at least frame_len"):
        frame_signal(np.zeros(100))
    assert n_frames(100) == 0


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
