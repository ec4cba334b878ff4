"""The timing helpers of tools/bench/torch_capture.py (which the census shares), run with a
stand-in for torch.cuda's events: the columns of a table take turns batch by batch, so that
a drift over the run weighs on each alike; and jax_loop.py's rewrite of jacobi.mlir. Needs
neither a GPU, PyTorch nor JAX."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "bench"))

import jax_loop  # noqa: E402
import torch_capture  # noqa: E402


class _Clock:
    """A GPU whose every call takes `cost[name]` microseconds, times `slow` (the drift)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slow = 1.0
        self.log: list[str] = []

    def event(self, enable_timing: bool = False) -> Any:
        clock = self

        class Event:
            t = 0.0

            def record(self) -> None:
                self.t = clock.now

            def synchronize(self) -> None:
                pass

            def elapsed_time(self, end: Any) -> float:
                return (end.t - self.t) / 1000.0  # milliseconds, as torch's

        return Event()


def _torch(clock: _Clock) -> Any:
    return SimpleNamespace(cuda=SimpleNamespace(Event=clock.event, synchronize=lambda: None))


def test_the_columns_take_turns_and_share_the_drift() -> None:
    clock = _Clock()

    def step(name: str, cost: float) -> Any:
        def run(i: int) -> None:
            clock.log.append(name)
            clock.now += cost * clock.slow
            clock.slow *= 1.001  # the GPU slows down over the run

        return run

    t = torch_capture.medians_us({"a": step("a", 10.0), "b": step("b", 10.0)}, 100, _torch(clock))
    timed = clock.log[40:]  # after each step's 20 warm-up calls
    assert timed[:20] == ["a"] * 10 + ["b"] * 10, "one batch of each, then the next round"
    assert len(timed) == 200
    # equal work, equal columns: the drift falls on both (timed one after the other,
    # b would come out about 10% slower than a)
    assert abs(t["a"] - t["b"]) / t["a"] < 0.02, t
    one = torch_capture.median_us(step("c", 5.0), 30, _torch(clock))
    assert one > 5.0, "one step: the median of its batches, drift included"


def test_jax_loop_makes_jacobis_tol_a_constant_and_the_program_lowers() -> None:
    out = jax_loop.jacobi_with_constant_tol(jax_loop.JACOBI.read_text(), 1e-4)
    assert "{crec.name = \"tol\"}" not in out
    assert out.count("%tol = arith.constant 1.000000000e-04 : f32") == 1
    with pytest.raises(ValueError, match="last argument"):
        jax_loop.jacobi_with_constant_tol(out, 1e-4)  # no argument 'tol' left to rewrite
    import crec

    try:
        program = crec.lower_string(out)
    except (crec.LibraryNotFoundError, crec.UnsupportedError) as e:
        pytest.skip(f"no MLIR front end here: {e}")
    assert [a.name for a in program.arguments] == ["b", "x", "sweeps", "residual"]
    assert not program.bound_scalars, "an XLA custom call binds buffers alone"


def test_the_decode_benchmark_says_what_it_needs(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """tools/bench/decode.py imports without PyTorch, and without it (or a device) exits 2 saying why."""
    import decode

    assert set(decode.CONFIGS) == {"small", "large"}
    monkeypatch.setattr(sys, "argv", ["decode.py", "--config", "small", "--batch", "1"])
    try:
        import torch

        if torch.cuda.is_available():
            pytest.skip("a device is here: the benchmark would run")
    except ImportError:
        pass
    assert decode.main() == 2
    assert "decode.py: " in capsys.readouterr().err
