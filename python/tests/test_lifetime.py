"""Who owns what: every C object is destroyed exactly once, by close(), a with block or
garbage collection, and nothing is left alive after a failure."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

import crec

SAXPY = Path(__file__).resolve().parents[2] / "tests" / "mlir" / "saxpy.mlir"


@pytest.fixture
def baseline() -> int:
    gc.collect()
    return crec.live_objects()


def test_close_destroys_once(baseline: int) -> None:
    p = crec.lower_file(SAXPY)
    assert crec.live_objects() > baseline
    p.close()
    assert crec.live_objects() == baseline and p.closed
    p.close()  # a second close does nothing
    assert crec.live_objects() == baseline
    del p
    gc.collect()
    assert crec.live_objects() == baseline


def test_with_block_and_garbage_collection(baseline: int) -> None:
    with crec.lower_file(SAXPY) as p:
        assert not p.closed
    assert p.closed and crec.live_objects() == baseline
    q = crec.lower_file(SAXPY)
    assert crec.live_objects() > baseline
    del q
    gc.collect()
    assert crec.live_objects() == baseline


def test_a_closed_program_is_not_read(baseline: int) -> None:
    p = crec.lower_file(SAXPY)
    p.close()
    for read in (lambda: p.buffers, lambda: p.dump(), p.plan, p.serialize):
        with pytest.raises(ValueError, match="closed"):
            read()
    assert repr(p) == "<crec.Program closed>"


def test_plans_close_before_their_program(baseline: int) -> None:
    p = crec.lower_file(SAXPY)
    with_program = crec.live_objects()
    plan = p.plan()
    kept = p.plan()
    assert crec.live_objects() == with_program + 2
    plan.close()
    assert crec.live_objects() == with_program + 1
    p.close()  # closes `kept` first: the C plan must not outlive its program
    assert kept._ptr is None and crec.live_objects() == baseline
    kept.close()
    plan.close()
    assert crec.live_objects() == baseline
    with pytest.raises(ValueError, match="closed"):
        kept.deps(0)


def test_failures_leave_nothing_alive(baseline: int, tmp_path: Path) -> None:
    for bad in (lambda: crec.lower_string("module {"), lambda: crec.lower_file(tmp_path / "missing.mlir")):
        with pytest.raises(crec.CrecError):
            bad()
    with pytest.raises(crec.CrecError):
        crec.Program.deserialize(b"not a program file")
    gc.collect()
    assert crec.live_objects() == baseline


def test_many_programs(baseline: int) -> None:
    programs = [crec.lower_file(SAXPY) for _ in range(20)]
    for i, p in enumerate(programs):
        if i % 2:
            p.close()
    del programs
    gc.collect()
    assert crec.live_objects() == baseline
