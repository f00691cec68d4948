"""attn_ref.speech: framing vs a hand loop, the count formula and torch's unfold; spectra of the toy audio."""

import numpy as np
import pytest

from attn_book.toy_data import synthetic_waveform
from attn_ref.speech import frame_signal, frame_spectra, n_frames


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
    x = synthetic_waveform(1.0, 16000, seed=0)  # attn_book's toy audio
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
