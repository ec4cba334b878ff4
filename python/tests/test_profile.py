"""crec.profile (crec/profile.h): a profile of examples/jacobi.mlir built from spans
shaped like its replays: the loop's iterations, the critical path, the dumps, and
errors that name the span."""

from __future__ import annotations

import json

import pytest

import crec
from conftest import REPO

JACOBI = REPO / "examples" / "jacobi.mlir"


def jacobi_spans(replays: int = 3, sweeps=(14, 14, 20)) -> list[crec.Span]:
    """memsets #0 and #1, then the while #2: its set kernel, cond #3 once per
    iteration and once more, body #4 and #5 per iteration (times in ns)."""
    spans = []
    for r in range(replays):
        t = 1_000_000 * (r + 1)
        spans += [crec.Span(0, r, t, t + 800), crec.Span(1, r, t, t + 700)]
        t += 800
        spans.append(crec.Span(2, r, t, t + 100))
        t += 100
        for i in range(sweeps[r] + 1):
            spans.append(crec.Span(3, r, t, t + 2100, iteration=i))
            t += 2100
            if i == sweeps[r]:
                break
            spans.append(crec.Span(4, r, t, t + 1200, iteration=i))
            t += 1200
            spans.append(crec.Span(5, r, t, t + 600, iteration=i))
            t += 600
    return spans


def test_a_profile_of_jacobi_counts_its_sweeps_and_finds_its_critical_path() -> None:
    with crec.lower_file(JACOBI) as program:
        with crec.profile(program, jacobi_spans(), 3, name="jacobi", device="NVIDIA H200",
                          replay_us=[70.0, 72.0, 90.0], profiled_us=[74.0, 76.0, 95.0],
                          host_us={"binding_checks": 0.3, "launch": 2.4}) as prof:
            loop = prof.command(2)
            assert loop.is_loop and loop.ran and loop.critical
            assert loop.iterations == crec.Spread(14, 14, 20)
            # 0.1 (set) + 15 x 2.1 (cond) + 14 x 1.8 (body) us in the median replay
            assert loop.device_us.p50 == pytest.approx(0.1 + 15 * 2.1 + 14 * 1.8)
            assert loop.per_iteration_us == pytest.approx(loop.device_us.p50 / 14)
            sweep = prof.command(4)
            assert not sweep.is_loop and sweep.iterations is None and sweep.nodes == 14
            assert prof.command(1).concurrent == 1 and not prof.command(1).critical
            s = prof.summary
            assert s.replays == 3 and s.critical_path == [0, 2] and s.timeline_spans == 2 + 1 + 15 + 28
            data = prof.dump_json()
            assert data["format"] == "crec-profile" and data["iters"] == 3
            assert data["replay_us"]["plain"] == {"min": 70.0, "p50": 72.0, "max": 90.0}
            assert data["host_us"] == {"binding_checks": 0.3, "launch": 2.4}
            assert [c["id"] for c in data["commands"]] == [0, 1, 2, 3, 4, 5]
            text = prof.dump("text")
            assert "critical path: " in text and "#2 'while more'" in text
            assert text.index("* #2 while 'while more'") < text.index("#3 launch 'residual, more'")


def test_the_json_follows_the_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema", reason="python3-jsonschema is not installed (tools/setup.sh)")
    schema = json.loads((REPO / "docs" / "profile.schema.json").read_text())
    with crec.lower_file(JACOBI) as program, crec.profile(program, jacobi_spans(), 3) as prof:
        jsonschema.validate(prof.dump_json(), schema)


def test_closing_the_program_closes_its_profiles() -> None:
    program = crec.lower_file(JACOBI)
    prof = crec.profile(program, jacobi_spans(1, (3,)), 1)
    program.close()
    assert prof.closed
    with pytest.raises(ValueError, match="the crec profile is closed"):
        prof.summary


def test_bad_spans_raise_naming_the_span() -> None:
    with crec.lower_file(JACOBI) as program:
        spans = jacobi_spans(1, (2,))
        bad = list(spans)
        bad[3] = crec.Span(3, 0, 500, 100, iteration=0)
        with pytest.raises(crec.InvalidArgumentError, match=r"spans\[3\]': it ends before it starts"):
            crec.profile(program, bad, 1)
        bad = list(spans)
        bad[0] = crec.Span(0, 0, 0, 10, iteration=1)
        with pytest.raises(crec.InvalidArgumentError, match=r"spans\[0\]': iteration 1 of command #0, which no while"):
            crec.profile(program, bad, 1)
        with pytest.raises(crec.OutOfRangeError, match=r"replay 1 of 1 replays"):
            crec.profile(program, [crec.Span(0, 1, 0, 10)], 1)
        with pytest.raises(ValueError, match="unknown phases"):
            crec.profile(program, spans, 1, host_us={"binding": 1.0})
        with pytest.raises(crec.InvalidArgumentError, match="no spans to profile"):
            crec.profile(program, [], 1)
