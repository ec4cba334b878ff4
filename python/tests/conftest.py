"""Shared fixtures: where the repository, the crec tool and the MLIR inputs are, and
the `gpu` marker, whose tests skip (with crec's reason) without a CUDA device."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import crec

REPO = Path(__file__).resolve().parents[2]

# the persistent cache of lowered programs stays off in tests (crec/lower.h), unless asked for
os.environ.setdefault("CREC_CACHE", "0")


def _library_dir() -> Path | None:
    try:
        return Path(crec.library_path()).resolve().parent
    except crec.CrecError:
        return None


def mlir_inputs() -> list[Path]:
    """Every MLIR program of tests/mlir/ and examples/, and the build's staged copies
    (which carry the PTX images that crec.image names)."""
    found = sorted((REPO / "tests" / "mlir").glob("*.mlir")) + sorted((REPO / "examples").glob("*.mlir"))
    lib_dir = _library_dir()
    if lib_dir is not None:
        for sub in ("examples", "tests/mlir"):
            found += sorted((lib_dir / sub).glob("*.mlir"))
    return found


def _input_id(p: Path) -> str:
    try:
        return str(p.relative_to(REPO))
    except ValueError:
        return str(p)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "mlir_path" in metafunc.fixturenames:
        paths = mlir_inputs()
        metafunc.parametrize("mlir_path", paths, ids=[_input_id(p) for p in paths])


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def tool() -> Path:
    """The crec tool of the same build as the library: CREC_TOOL, else <library dir>/tools/crec."""
    env = os.environ.get("CREC_TOOL")
    if env:
        return Path(env)
    lib_dir = _library_dir()
    if lib_dir is not None and (lib_dir / "tools" / "crec").is_file():
        return lib_dir / "tools" / "crec"
    pytest.skip("no crec tool next to libcrec (set CREC_TOOL)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA device; skipped, saying why, without one")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    try:
        if crec.device_available():
            return
    except crec.LibraryNotFoundError:
        return  # no libcrec at all: every test fails, saying where it looked
    skip = pytest.mark.skip(reason=f"no CUDA device: {crec.device_unavailable_reason()}")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)
