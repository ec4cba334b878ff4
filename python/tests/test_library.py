"""Loading libcrec, statuses, errors and the C structs' layouts."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import crec
from crec import _lib

PYTHON_DIR = Path(__file__).resolve().parents[1]


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    e = dict(os.environ)
    e.update(env)
    e["PYTHONPATH"] = str(PYTHON_DIR)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=e, capture_output=True, text=True)


def test_import_needs_no_library_and_the_first_call_says_where_it_looked(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    r = run_python(
        """
        import crec
        try:
            crec.version()
        except crec.LibraryNotFoundError as e:
            assert isinstance(e, crec.CrecError)
            print(e.status_name, e.message)
        """,
        CREC_LIBRARY_PATH=str(missing),
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ERR_NOT_FOUND cannot load libcrec: CREC_LIBRARY_PATH: ")
    assert str(missing) in r.stdout and "no such file" in r.stdout


def test_library_path_may_be_a_file_or_a_folder() -> None:
    lib = Path(crec.library_path()).resolve()
    for given in (lib, lib.parent):
        r = run_python("import crec; print(crec.library_path()); print(crec.version())", CREC_LIBRARY_PATH=str(given))
        assert r.returncode == 0, r.stderr
        loaded, version = r.stdout.split()
        assert Path(loaded).resolve() == lib
        assert version == crec.version()


INSTALLED = Path(crec.__file__).resolve().parent != PYTHON_DIR / "crec"
TINY = "module {\n  func.func @main() {\n    return\n  }\n}\n"


def test_without_the_variable_the_build_tree_then_the_system_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    if INSTALLED:
        pytest.skip(f"crec is imported from {crec.__file__}, not the source tree")
    monkeypatch.delenv(_lib.LIBRARY_ENV, raising=False)
    places = _lib.candidates()
    # the source tree's package carries no library of its own
    assert places[0] == ("the build tree", str(PYTHON_DIR.parent / "build" / "libcrec.so.0"))
    assert places[-1] == ("the system loader", "libcrec.so.0")


def test_an_installed_package_brings_its_library_and_front_end(tmp_path: Path) -> None:
    """pip install ./python: from any folder, with no variable set, import crec finds the
    package's own libcrec, and lowering finds the MLIR front end beside it."""
    if not INSTALLED:
        pytest.skip("crec is imported from the source tree (python/crec), not an installed package")
    e = {k: v for k, v in os.environ.items() if k not in (_lib.LIBRARY_ENV, "PYTHONPATH", "LD_LIBRARY_PATH")}
    code = textwrap.dedent(
        f"""
        import crec
        from crec import _lib
        print(crec.__file__)
        print(_lib.candidates()[0][0])
        print(crec.library_path())
        with crec.lower_string({TINY!r}) as p:
            print(len(p.commands))
        """
    )
    r = subprocess.run([sys.executable, "-c", code], env=e, cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    module, first, library, commands = r.stdout.split("\n")[:4]
    package = Path(crec.__file__).resolve().parent
    assert Path(module).resolve().parent == package
    assert first == "the package"
    assert Path(library).resolve() == package / "libcrec.so.0"
    assert (package / "libcrec-mlir.so").is_file(), "the wheel carries no MLIR front end"
    assert commands == "0"


def test_without_the_front_end_only_lowering_fails(tmp_path: Path) -> None:
    r = run_python(
        f"""
        import crec
        print(crec.version())
        try:
            crec.lower_string({TINY!r})
        except crec.UnsupportedError as e:
            print(e.message)
        """,
        CREC_MLIR_PLUGIN=str(tmp_path / "libcrec-mlir.so"),
        CREC_LIBRARY_PATH=crec.library_path(),
    )
    assert r.returncode == 0, r.stderr
    version, message = r.stdout.strip().split("\n")
    assert version == crec.version()
    if "CREC_WITH_MLIR=OFF" in message:
        pytest.skip("this libcrec is built without MLIR")
    assert "the MLIR front end (libcrec-mlir.so) is not available" in message, message
    assert str(tmp_path / "libcrec-mlir.so") in message


def test_a_file_that_is_not_libcrec_is_refused() -> None:
    libc = ctypes.util.find_library("c")
    if libc is None:
        pytest.skip("no libc to load")
    r = run_python(
        "import crec\ntry: crec.version()\nexcept crec.LibraryNotFoundError as e: print(e.message)",
        CREC_LIBRARY_PATH=libc,
    )
    assert "not a libcrec this package can use" in r.stdout, r.stdout + r.stderr


def test_status_table_matches_the_library() -> None:
    for s in crec.Status:
        assert crec.status_name(s) == s.name
        assert crec.status_string(s) != "unknown status"
    beyond = max(crec.Status) + 1
    assert crec.status_name(beyond) == "UNKNOWN", "libcrec has a status this package does not know"


def test_every_error_status_has_its_own_class() -> None:
    classes = {crec.error_class(s) for s in crec.Status if s != crec.Status.OK}
    assert len(classes) == len(crec.Status) - 1
    for s in crec.Status:
        if s == crec.Status.OK:
            continue
        cls = crec.error_class(s)
        assert issubclass(cls, crec.CrecError) and cls is not crec.CrecError
        assert f"CREC_{s.name}" in (cls.__doc__ or "")
    assert crec.error_class(9999) is crec.CrecError


def test_device_out_of_memory_and_a_lost_context_are_cuda_errors_too() -> None:
    # sorted out of CREC_ERR_CUDA: code that catches CudaError still catches them
    assert crec.error_class(crec.Status.ERR_DEVICE_OUT_OF_MEMORY) is crec.DeviceOutOfMemoryError
    assert crec.error_class(crec.Status.ERR_CONTEXT_LOST) is crec.ContextLostError
    assert issubclass(crec.DeviceOutOfMemoryError, crec.CudaError)
    assert issubclass(crec.ContextLostError, crec.CudaError)
    assert not issubclass(crec.DeviceOutOfMemoryError, crec.OutOfMemoryError)


def test_errors_carry_status_name_and_the_library_message() -> None:
    with pytest.raises(crec.NotFoundError) as info:
        with crec.lower_file(PYTHON_DIR.parent / "tests" / "mlir" / "saxpy.mlir") as p:
            p.find_buffer("nope")
    e = info.value
    assert e.status == crec.Status.ERR_NOT_FOUND and e.status_name == "ERR_NOT_FOUND"
    assert e.message == crec.last_error()
    assert "nope" in e.message
    assert str(e) == f"{e.message} [ERR_NOT_FOUND]"


def test_version() -> None:
    v = crec.version()
    assert len(v.split(".")) == 3 and all(part.isdigit() for part in v.split("."))


# ---- the structs mirror the headers ------------------------------------------------------------

PROBE = """
#include <stddef.h>
#include <stdio.h>
#include <crec/crec.h>
#define S(t) printf("%s sizeof %zu\\n", #t, sizeof(t));
#define F(t, f) printf("%s.%s %zu\\n", #t, #f, offsetof(t, f));
int main(void) {
@BODY@
  return 0;
}
"""


def test_struct_layouts_match_the_headers(tmp_path: Path) -> None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the layout probe")
    lines = []
    expected = {}
    for cname, py in _lib.STRUCTS.items():
        lines.append(f"S({cname})")
        expected[f"{cname} sizeof"] = ctypes.sizeof(py)
        for fname, *_ in py._fields_:
            if py is _lib.Value:
                continue  # a union: every member at 0
            lines.append(f"F({cname}, {fname})")
            expected[f"{cname}.{fname}"] = getattr(py, fname).offset
    src = tmp_path / "probe.c"
    src.write_text(PROBE.replace("@BODY@", "\n".join("  " + line for line in lines)))
    exe = tmp_path / "probe"
    include = PYTHON_DIR.parent / "include"
    subprocess.run([cc, "-std=c11", f"-I{include}", str(src), "-o", str(exe)], check=True)
    got = {}
    for line in subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines():
        key, value = line.rsplit(" ", 1)
        got[key] = int(value)
    assert got == expected
