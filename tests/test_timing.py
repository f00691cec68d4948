"""attn_book.timing: the one family of timing and memory helpers."""

import time

import numpy as np

from attn_book.timing import (
    MATRIX_FORM_STAGES,
    best_time,
    compare_times,
    matrix_form_stages,
    measure,
    median_time,
    peak_bytes,
    run_times,
)


def test_run_times_warms_up_then_times_each_call():
    calls = []
    times = run_times(lambda x: calls.append(x), 7, repeat=3, warmup=2)
    assert calls == [7] * 5 and len(times) == 3 and all(t >= 0 for t in times)


def test_median_and_best_of_a_sleep():
    assert median_time(time.sleep, 0.002, repeat=3) >= 0.002
    assert 0.002 <= best_time(time.sleep, 0.002) < 0.5


def test_compare_times_runs_every_function_in_every_round():
    order = []
    result = compare_times({"a": lambda: order.append("a"), "b": lambda: order.append("b")}, repeat=2, warmup=1)
    assert order == ["a", "b"] * 3 and set(result) == {"a", "b"}


def test_peak_bytes_and_measure_see_a_known_allocation():
    assert 8_000_000 <= peak_bytes(np.ones, 1_000_000) < 9_000_000
    seconds, peak = measure(lambda n: np.ones(n), 1_000_000, repeat=2)
    assert 8_000_000 <= peak < 9_000_000 and seconds >= 0


def test_matrix_form_stages_times_every_stage():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((64, 8)).astype(np.float32) for _ in range(3))
    stages = matrix_form_stages(q, k, v, repeat=1)
    assert tuple(stages) == MATRIX_FORM_STAGES and all(t >= 0 for t in stages.values())
