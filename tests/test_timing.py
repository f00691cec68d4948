"""attn_book.timing: the one family of timing and memory helpers."""

import os
import time

import numpy as np

from attn_book.timing import (
    MATRIX_FORM_STAGES,
    busy_processes,
    compare_times,
    fastest_times,
    matrix_form_stages,
    median_time,
    peak_bytes,
    run_times,
)


def test_run_times_warms_up_then_times_each_call():
    calls = []
    times = run_times(lambda x: calls.append(x), 7, repeat=3, warmup=2)
    assert calls == [7] * 5 and len(times) == 3 and all(t >= 0 for t in times)


def test_median_of_a_sleep():
    assert median_time(time.sleep, 0.002, repeat=3) >= 0.002


def test_run_times_reads_the_clock_it_is_given():
    ticks = iter(range(0, 100, 5))
    assert run_times(lambda: None, repeat=3, clock=lambda: next(ticks)) == [5, 5, 5]


def test_compare_times_runs_every_function_in_every_round():
    order = []
    result = compare_times({"a": lambda: order.append("a"), "b": lambda: order.append("b")}, repeat=2, warmup=1)
    assert order == ["a", "b"] * 3 and set(result) == {"a", "b"}


def test_fastest_times_interleaves_and_keeps_the_fastest_cpu_time():
    order = []

    def spin(name, seconds):
        def run():
            order.append(name)
            t0 = time.process_time()
            while time.process_time() - t0 < seconds:
                pass
        return run

    def nap():
        order.append("nap")
        time.sleep(0.05)  # wall time, no CPU time

    best = fastest_times({"spin": spin("spin", 0.02), "nap": nap}, repeat=3, warmup=1)
    assert order == ["spin", "nap"] * 4
    assert 0.02 <= best["spin"] < 0.04 and best["nap"] < 0.01, best  # the CPU clock ignores the sleep
    assert fastest_times({"nap": nap}, repeat=1, warmup=0, clock=time.perf_counter)["nap"] >= 0.05


def test_busy_processes_run_inside_the_block_and_are_gone_after_it():
    with busy_processes(2) as pids:
        assert len(pids) == 2
        for pid in pids:
            os.kill(pid, 0)  # running
            deadline = time.monotonic() + 10
            # its arguments appear once the kernel has finished loading python: on a busy machine, not at once
            while not (cmdline := open(f"/proc/{pid}/cmdline", "rb").read()) and time.monotonic() < deadline:
                time.sleep(0.01)
            assert b"while True: pass" in cmdline
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}"), pid  # killed and reaped


def test_busy_processes_are_killed_when_the_block_raises():
    try:
        with busy_processes(1) as pids:
            raise RuntimeError("a chapter failed")
    except RuntimeError:
        pass
    assert not os.path.exists(f"/proc/{pids[0]}")


def test_peak_bytes_sees_a_known_allocation():
    assert 8_000_000 <= peak_bytes(np.ones, 1_000_000) < 9_000_000


def test_matrix_form_stages_times_every_stage():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((64, 8)).astype(np.float32) for _ in range(3))
    stages = matrix_form_stages(q, k, v, repeat=1)
    assert tuple(stages) == MATRIX_FORM_STAGES and all(t >= 0 for t in stages.values())
