"""The inspection API against the C library's own view (its JSON dump), and plans."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import crec

REPO = Path(__file__).resolve().parents[2]
SAXPY = REPO / "tests" / "mlir" / "saxpy.mlir"


def lowered(path: Path) -> crec.Program | None:
    """The program, or None for a source-tree input whose crec.image is built elsewhere
    (test_lower checks that reason; the build's staged copy is inspected instead)."""
    try:
        return crec.lower_file(path)
    except crec.IoError as e:
        assert "crec.image" in e.message
        return None


def end_of(r: crec.Range, buffers: list[crec.Buffer]) -> int | None:
    if r.size is not None:
        return r.offset + r.size
    return None if buffers[r.buffer].dynamic else buffers[r.buffer].size


def range_json(r: crec.Range | None, buffers: list[crec.Buffer]) -> dict[str, Any] | None:
    if r is None:
        return None
    return {"buffer": r.buffer_name, "offset": r.offset, "end": end_of(r, buffers)}


def test_inspection_matches_the_json_dump(mlir_path: Path) -> None:
    program = lowered(mlir_path)
    if program is None:
        return
    with program as p, p.plan() as plan:
        j = p.dump_json(plan)
        buffers = p.buffers
        assert [(b.name, b.kind, b.size, b.element, b.dynamic) for b in buffers] == [
            (b["name"], b["kind"], b["size"], b["element"], b["dynamic"]) for b in j["buffers"]
        ]
        for b, jb in zip(buffers, j["buffers"]):
            if "arena_offset" in jb:
                assert plan.temporary_offset(b.index) == jb["arena_offset"] == plan.temporary_offset(b.name)
                assert list(plan.lifetime(b.index)) == jb["live"]
        assert [(s.name, s.type, s.kind) for s in p.scalars] == [
            (s["name"], s["type"], s["kind"]) for s in j["scalars"]
        ]
        assert [(r.index, r.parent, r.role, r.index_in_parent) for r in p.regions] == [
            (r["id"], r["parent"], r["role"], r["index"]) for r in j["regions"]
        ]
        commands = p.commands
        # JSON lists commands in program order, depth first: walk() is that order
        assert [c.index for c in p.walk()] == [c["id"] for c in j["commands"]]
        kernels, modules, scalars = p.kernels, p.modules, p.scalars
        for jc in j["commands"]:
            c = commands[jc["id"]]
            assert (c.kind, c.name, c.region) == (jc["kind"], jc["name"], jc["region"])
            assert p.regions[c.region].commands[c.index_in_region] == c.index
            assert plan.deps(c.index) == jc["deps"]
            if c.kind == "launch":
                assert c.kernel is not None
                k = kernels[c.kernel]
                assert {"entry": k.entry, "module": modules[k.module].name, "format": modules[k.module].format} == jc[
                    "kernel"
                ]
                assert list(c.grid or ()) == jc["grid"] and list(c.block or ()) == jc["block"]
                assert c.shared_bytes == jc["shared"]
                assert len(c.args) == len(jc["args"])
                for a, ja in zip(c.args, jc["args"]):
                    assert a.kind == ja["kind"]
                    if a.kind == "buffer":
                        assert a.range is not None
                        assert {**range_json(a.range, buffers), "kind": "buffer", "access": a.access} == ja  # type: ignore[dict-item]
                    elif a.kind == "scalar":
                        assert a.scalar is not None
                        assert (scalars[a.scalar].name, scalars[a.scalar].type) == (ja["name"], ja["type"])
                    else:
                        assert (a.type or "bytes") == ja["type"] or ja["type"] in ("none", "bytes")
            if c.kind in ("memcpy", "memset"):
                assert range_json(c.dst, buffers) == jc["dst"]
                assert c.bytes == jc["bytes"] or jc["bytes"] is None
            if c.kind == "memcpy":
                assert range_json(c.src, buffers) == jc["src"]
            if c.kind == "memset":
                assert c.memset_value == int(jc["value"], 16) and c.memset_element_size == jc["element_size"]
            if c.kind == "while":  # a limit of its own (crec.max_iterations) is in the dump, else absent
                want = None if not c.loop_limit else "unlimited" if c.loop_limit == 2**64 - 1 else c.loop_limit
                assert jc.get("max_iterations") == want
            if c.kind in ("while", "if", "switch"):
                assert range_json(c.predicate, buffers) == jc["predicate"]
                assert list(c.regions) == jc["regions"]
                assert (list(c.case_values) if c.case_values is not None else None) == jc.get("cases")
                for r in c.regions:
                    assert p.regions[r].parent == c.index
            if "operands" in jc:
                assert [{**range_json(o.range, buffers), "access": o.access} for o in c.operands] == jc["operands"]  # type: ignore[dict-item]


def test_errors_are_pythons_kinds_too() -> None:
    """A missing name is a KeyError as well as a crec.NotFoundError; a file that cannot
    be read is an OSError as well as a crec.IoError."""
    with crec.lower_file(SAXPY) as p:
        for find in (p.find_buffer, p.find_scalar):
            with pytest.raises(KeyError) as info:
                find("nope")
            assert isinstance(info.value, crec.NotFoundError) and "no " in str(info.value)
        with pytest.raises(KeyError, match="no buffer named 'nope'"):
            p.plan().lifetime("nope")
    with pytest.raises(OSError) as err:
        crec.lower_file(REPO / "no-such-file.mlir")
    assert isinstance(err.value, crec.IoError) and "cannot open" in str(err.value)


def test_a_plan_takes_the_programs_own_objects() -> None:
    """Plan.deps, lifetime and temporary_offset take a Command or a Buffer read back from
    the program, as they take indices and names; anything else is a TypeError naming
    the call, and another program's object is refused."""
    with crec.lower_file(REPO / "examples" / "jacobi.mlir") as p, crec.lower_file(SAXPY) as other:
        plan = p.plan()
        more = p.find_buffer("more")
        assert more.kind == "temporary"
        assert plan.lifetime(more) == plan.lifetime("more") == plan.lifetime(more.index)
        assert plan.temporary_offset(more) == plan.temporary_offset("more")
        loop = next(c for c in p.commands if c.kind == "while")
        assert plan.deps(loop) == plan.deps(loop.index) and plan.deps(loop) != []
        with pytest.raises(TypeError, match=r"^Plan\.lifetime: buffer must be an index, a name or a crec\.Buffer, not float"):
            plan.lifetime(1.5)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"^Plan\.deps: command must be an index or a crec\.Command, not Buffer"):
            plan.deps(more)  # type: ignore[arg-type]
        with pytest.raises(IndexError, match=r"^Plan\.deps: command index 99 is out of range \(the program has 6 commands\)"):
            plan.deps(99)
        with pytest.raises(ValueError, match=r"^Plan\.temporary_offset: buffer 0 \('x'\) is not of this plan's program"):
            plan.temporary_offset(other.buffers[0])
        with pytest.raises(ValueError, match=r"^Plan\.deps: command 0 \('.*'\) is not of this plan's program"):
            plan.deps(other.commands[0])


def test_saxpy_as_the_c_api_sees_it() -> None:
    with crec.lower_file(SAXPY) as p:
        x, y = p.arguments
        assert (x.name, x.kind, x.size, x.element, x.argument_index, x.alignment) == ("x", "argument", 4096, "f32", 0, 16)
        assert (y.name, y.argument_index, y.memory) == ("y", 1, "device")
        (a,) = p.bound_scalars
        assert (a.name, a.type, a.kind, a.binding_index) == ("a", "f32", "bound", 0)
        assert p.find_buffer("y") == y and p.find_scalar("a") == a
        with pytest.raises(crec.NotFoundError):
            p.find_scalar("b")
        (k,) = p.kernels
        assert k.entry == "saxpy" and p.modules[k.module].name == "kernels"
        (c,) = p.commands
        assert c.kind == "launch" and c.grid == (4, 1, 1) and c.block == (256, 1, 1)
        assert [(arg.kind, arg.access) for arg in c.args] == [("buffer", "read"), ("buffer", "read-write"), ("scalar", None)]
        assert c.args[2].scalar == a.index
        assert p.warnings == [] and p.host_functions == []


def test_dynamic_sizes_derived_scalars_and_host_functions() -> None:
    with crec.lower_file(REPO / "examples" / "dynamic.mlir") as p:
        (x,) = p.arguments
        assert x.dynamic
        kinds = {s.name: s.kind for s in p.scalars}
        assert kinds["x.bytes"] == "size" and "derived" in kinds.values()
        assert p.find_scalar("x.bytes").buffer == x.index
        fns = p.host_functions
        assert fns and all(p.scalars[o].kind == "derived" for f in fns for o in f.outputs)
        launch = p.commands[0]
        assert launch.grid is not None and isinstance(launch.grid[0], str)  # a scalar's name
        assert launch.args[0].range is not None and launch.args[0].range.size is None  # to the end


def test_warnings() -> None:
    with crec.lower_file(Path(__file__).parent / "data" / "undefined_read.mlir") as p:
        (w,) = p.warnings
        assert w.command == 0 and w.access == "read"
        assert w.range == crec.Range(1, "t", 0, 1024)
        assert w.message.startswith("command 0 ('copy') reads 't', which nothing wrote before")
        p.validate()
        assert len(p.warnings) == 1


def test_control_flow_regions() -> None:
    with crec.lower_file(REPO / "examples" / "switch.mlir") as p:
        switches = [c for c in p.commands if c.kind == "switch"]
        assert switches
        for s in switches:
            roles = {p.regions[r].role for r in s.regions}
            assert roles == {"branch"}
            assert [p.regions[r].index_in_parent for r in s.regions] == list(range(len(s.regions)))


def test_plan_options_and_closed_objects() -> None:
    with crec.lower_file(REPO / "examples" / "branches.mlir") as p:
        with p.plan(schedule="sequential") as seq:
            assert [seq.deps(i) for i in range(1, 4)] == [[0], [1], [2]]
        with p.plan() as plan:
            assert plan.deps(8) == [1, 3, 5, 7]
            assert plan.arena_bytes == 16384
            with pytest.raises(crec.InvalidArgumentError):
                plan.temporary_offset("x")  # an argument
        with pytest.raises(ValueError):
            p.dump("html")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="closed"):
        p.buffers
