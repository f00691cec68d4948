"""Shared fixtures. Tolerances of the project: 1e-5 for float32, 1e-10 for float64."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")  # tests draw figures without a screen; the book keeps inline

import numpy as np
import pytest

TOL = {np.float32: 1e-5, np.float64: 1e-10}


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def tol(dtype) -> float:
    return TOL[np.dtype(dtype).type]
