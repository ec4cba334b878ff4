"""Lowering MLIR, and the dumps against what the crec tool of the same build prints."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import crec

REPO = Path(__file__).resolve().parents[2]
SAXPY = REPO / "tests" / "mlir" / "saxpy.mlir"


def tool_dump(tool: Path, path: Path, fmt: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(tool), "dump", str(path), "--format", fmt], capture_output=True, text=True)


def test_every_input_dumps_as_the_tool_does(tool: Path, mlir_path: Path) -> None:
    r = tool_dump(tool, mlir_path, "json")
    if r.returncode != 0:
        # the tool could not lower it (a crec.image next to a source file, not built there):
        # the package must fail the same way, with crec's message
        with pytest.raises(crec.CrecError) as info:
            crec.lower_file(mlir_path)
        reason = info.value.message.split(": ", 1)[-1]
        assert reason.split(": ")[-1] in r.stderr, (info.value.message, r.stderr)
        return
    with crec.lower_file(mlir_path) as p:
        text = p.dump("json")
        assert text == r.stdout
        assert p.dump_json() == json.loads(r.stdout)
        for fmt in ("text", "dot"):
            assert p.dump(fmt) == tool_dump(tool, mlir_path, fmt).stdout, fmt  # type: ignore[arg-type]


def lower_or_missing_image(path: Path) -> crec.Program | None:
    """The program, or None for a source-tree input whose crec.image is built elsewhere."""
    try:
        return crec.lower_file(path)
    except crec.IoError as e:
        assert "crec.image" in e.message and "cannot be opened" in e.message, e.message
        return None


def test_a_string_lowers_like_its_file(mlir_path: Path) -> None:
    text = mlir_path.read_text()
    from_file = lower_or_missing_image(mlir_path)
    if from_file is None:
        with pytest.raises(crec.IoError) as info:
            crec.lower_string(text, filename=str(mlir_path), base_dir=mlir_path.parent)
        assert "crec.image" in info.value.message
        return
    with from_file, crec.lower_string(text, filename=str(mlir_path), base_dir=mlir_path.parent) as s:
        assert s.dump("json") == from_file.dump("json")


def test_lower_string_takes_bytes_and_names_its_locations() -> None:
    with crec.lower_string(SAXPY.read_bytes()) as p:
        assert [b.name for b in p.arguments] == ["x", "y"]
    with pytest.raises(crec.MlirError) as info:
        crec.lower_string("module {", filename="mine.mlir")
    assert "mine.mlir:1:" in info.value.message


def test_a_malformed_string_raises_mlir_error_with_status_message_and_diagnostics() -> None:
    with pytest.raises(crec.MlirError) as info:
        crec.lower_string("module { func.func @main( }")
    e = info.value
    assert e.status == crec.Status.ERR_MLIR == 14
    assert e.status_name == "ERR_MLIR"
    assert e.message.startswith("crec_lower_mlir_string: <string>:1:")
    assert e.message == crec.last_error()
    diags = e.diagnostics  # type: ignore[attr-defined]
    assert diags and diags[0].severity == "error" and diags[0].location.startswith("<string>:1:")


def test_a_missing_file_raises_io_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "missing.mlir"
    with pytest.raises(crec.IoError) as info:
        crec.lower_file(missing)
    assert info.value.status == crec.Status.ERR_IO
    assert str(missing) in info.value.message
    assert "crec_lower_mlir_file" in info.value.message


def test_entry_option() -> None:
    with pytest.raises(crec.NotFoundError) as info:
        crec.lower_file(SAXPY, entry="nope")
    assert "nope" in info.value.message and "main" in info.value.message
    text = SAXPY.read_text().replace("func.func @main", "func.func @other")
    with crec.lower_string(text, entry="other") as p:
        assert len(p.commands) == 1


def test_chip_option_sets_the_ptx_target() -> None:
    with crec.lower_file(SAXPY, chip="sm_80") as p:
        (module,) = p.modules
        assert module.format == "ptx"
        assert b".target sm_80" in module.image
    with crec.lower_file(SAXPY, chip="sm_90") as p:
        assert b".target sm_90" in p.modules[0].image


def test_warnings_of_the_front_end_are_kept_as_diagnostics() -> None:
    with crec.lower_file(Path(__file__).parent / "data" / "undefined_read.mlir") as p:
        (d,) = p.diagnostics
        assert d.severity == "warning" and d.location.endswith("undefined_read.mlir:15:5")
        assert "reads 't', which nothing wrote before" in d.message


def test_program_files_round_trip(mlir_path: Path) -> None:
    p = lower_or_missing_image(mlir_path)
    if p is None:
        return
    with p:
        try:
            data = p.serialize()
        except crec.UnsupportedError as e:
            assert "host" in e.message  # host code cannot go into a file
            return
        with crec.Program.deserialize(data) as q:
            assert q.dump("json") == p.dump("json")
            assert q.serialize() == data


def test_a_damaged_program_file_is_refused() -> None:
    with crec.lower_file(SAXPY) as p:
        data = bytearray(p.serialize())
    data[40] ^= 0xFF
    with pytest.raises(crec.InvalidArgumentError) as info:
        crec.Program.deserialize(bytes(data))
    assert "checksum" in info.value.message


def test_lower_cache_counts() -> None:
    before = crec.lower_cache_stats()
    crec.lower_file(SAXPY).close()
    after = crec.lower_cache_stats()
    assert after.compilations + after.hits == before.compilations + before.hits + 1
    crec.lower_cache_clear()
    assert crec.lower_cache_stats().entries == 0


def test_cubin_lowering_compiles_kernels_ahead_of_time() -> None:
    saxpy = Path(__file__).resolve().parents[2] / "tests" / "mlir" / "saxpy.mlir"
    try:
        p = crec.lower_file(saxpy, chip="sm_80", cubin=True)
    except crec.UnsupportedError as e:
        pytest.skip(f"no nvJitLink: {e}")
    with p:
        assert [m.format for m in p.modules] == ["cubin"]
    with crec.lower_file(saxpy, chip="sm_80") as ptx:
        assert [m.format for m in ptx.modules] == ["ptx"]


LIMITED_LOOP = """module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @step(%flag: memref<i32>) kernel { gpu.return }
  }
  func.func @main(%flag: memref<i32> {crec.name = "flag"}) {
    %c1 = arith.constant 1 : index
    %z = arith.constant 0 : i32
    scf.while : () -> () {
      %v = memref.load %flag[] : memref<i32>
      %go = arith.cmpi ne, %v, %z : i32
      scf.condition(%go)
    } do {
      gpu.launch_func @k::@step blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%flag : memref<i32>)
      scf.yield
    } attributes {ATTRS}
    return
  }
}
"""


def test_a_loop_limit_reaches_the_program_and_every_dump(tool: Path, tmp_path: Path) -> None:
    """{crec.max_iterations = N} is the loop's limit, and every dump says so: the one
    the tool prints too."""
    path = tmp_path / "limited.mlir"
    path.write_text(LIMITED_LOOP.replace("ATTRS", "crec.max_iterations = 250 : i64"))
    with crec.lower_file(path) as p:
        (loop,) = [c for c in p.commands if c.kind == "while"]
        assert loop.loop_limit == 250
        assert p.dump_json()["commands"][0]["max_iterations"] == 250
        assert "while 'while' predicate flag[0..1) max_iterations 250\n" in p.dump("text")
        assert "at most 250 iterations" in p.dump("dot")
        assert p.dump("json") == tool_dump(tool, path, "json").stdout


def test_a_misspelt_crec_attribute_is_an_error_at_its_op(tool: Path, tmp_path: Path) -> None:
    """crec.max_iteration (no s) would leave the loop unlimited: it is refused, at the
    scf.while, naming what that op takes; the tool says the same in one line."""
    path = tmp_path / "misspelt.mlir"
    path.write_text(LIMITED_LOOP.replace("ATTRS", "crec.max_iteration = 250 : i64"))
    with pytest.raises(crec.MlirError) as info:
        crec.lower_file(path)
    want = (f"{path}:8:5: 'scf.while': unknown attribute 'crec.max_iteration': did you mean "
            "'crec.max_iterations'? (on scf.while crec reads crec.name and crec.max_iterations)")
    assert info.value.message == "crec_lower_mlir_file: " + want
    r = subprocess.run([str(tool), "dump", str(path)], capture_output=True, text=True)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"crec: error: {want}\n")


EARLY = """module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @twice(%x: memref<128xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<128xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %x[%i] : memref<128xf32>
      gpu.return
    }
  }
  func.func @main(%x: memref<128xf32> {crec.name = "x"}) {
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    gpu.launch_func @k::@twice blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1) args(%x : memref<128xf32>)
    gpu.launch_func @k::@twice blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1) args(%x : memref<128xf32>)
    return
  }
}
"""


def test_early_start_makes_compiled_kernels_wait_and_their_launches_start_early() -> None:
    with crec.lower_string(EARLY, chip="sm_90", early_start=True) as p:
        assert b"griddepcontrol.wait" in p.modules[0].image
        assert [c.early_start for c in p.commands] == [True, True]
    with crec.lower_string(EARLY, chip="sm_90") as p:
        assert b"griddepcontrol.wait" not in p.modules[0].image
        assert [c.early_start for c in p.commands] == [False, False]
    # below sm_90 there is no programmatic dependent launch: nothing changes
    with crec.lower_string(EARLY, chip="sm_80", early_start=True) as p:
        assert [c.early_start for c in p.commands] == [False, False]
