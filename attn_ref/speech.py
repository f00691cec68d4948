"""Speech as a vector set: a waveform cut into frames (chapter "Vector sets as input").

Lee, ML 2021 "Self-attention", 序列与模型: audio at 16 kHz is cut into windows of 25 ms every
10 ms (400 samples, hop 160: 100 frames per second); each frame becomes one vector.

* :func:`n_frames` — how many complete frames a signal holds;
* :func:`frame_signal` — the frames themselves, (n_frames, frame_len);
* :func:`frame_spectra` — |FFT| of each Hann-windowed frame.
"""

from __future__ import annotations

import numpy as np

from ._checks import as_array, check_ndim


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
