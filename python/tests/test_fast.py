"""crec.torch's compiled call path (python/src/_crec_fast.c), on the CPU: the checks it makes
before it calls, and what it passes to crec_exec_replay_buffers. A ctypes callback
stands in for that function (so nothing here needs a GPU), and small objects with a
tensor's attributes stand in for tensors."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from crec import _lib

REPLAY = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t,
                          ctypes.c_void_p)


def _module() -> Any:
    try:
        _lib.load()
    except _lib.LibraryNotFoundError as e:
        pytest.skip(f"no libcrec: {e}")
    module = _lib.fast()
    if module is None:
        pytest.skip(f"crec's compiled call path is not built here: {_lib.fast_why()}")
    return module


class Dtype:
    pass


F32, F16 = Dtype(), Dtype()


class Tensor:
    """What _crec_fast reads of a torch.Tensor."""

    def __init__(self, shape: tuple[int, ...], dtype: Dtype, device: int, ptr: int, contiguous: bool = True) -> None:
        self.shape, self.dtype = shape, dtype
        self._device, self._ptr, self._contiguous = device, ptr, contiguous

    def get_device(self) -> int:
        return self._device

    def data_ptr(self) -> int:
        return self._ptr

    def is_contiguous(self) -> bool:
        return self._contiguous


class Recorder:
    def __init__(self, status: int = 0) -> None:
        self.calls: list[tuple[int, list[int], int]] = []
        self.status = status
        self.fn = REPLAY(self._call)
        self.address = ctypes.cast(self.fn, ctypes.c_void_p).value

    def _call(self, exec: int, ptrs: Any, n: int, stream: int) -> int:
        self.calls.append((exec, [ptrs[i] for i in range(n)], stream))
        return self.status


SIG = ((((4, 8), F32, 0, 255)), ((16,), F16, 0, 15))


def _replayer(module: Any, rec: Recorder, streams: list[int]) -> Any:
    def stream(device: int) -> int:
        streams.append(device)
        return 0x5000 + device

    return module.Replayer(rec.address, 0xE0E0, SIG, stream, 0)


def test_a_call_that_matches_passes_the_addresses_and_the_current_stream() -> None:
    module = _module()
    rec, streams = Recorder(), []
    r = _replayer(module, rec, streams)
    assert r(Tensor((4, 8), F32, 0, 0x10000), Tensor((16,), F16, 0, 0x20010)) == 0
    assert r(Tensor((4, 8), F32, 0, 0x30000), Tensor((16,), F16, 0, 0x40000)) == 0
    assert rec.calls == [(0xE0E0, [0x10000, 0x20010], 0x5000), (0xE0E0, [0x30000, 0x40000], 0x5000)]
    assert streams == [0, 0], "the stream is asked for at each call, for the device given"


def test_crecs_status_comes_back_as_it_is() -> None:
    module = _module()
    rec = Recorder(status=7)
    r = _replayer(module, rec, [])
    assert r(Tensor((4, 8), F32, 0, 0x10000), Tensor((16,), F16, 0, 0x20000)) == 7
    assert len(rec.calls) == 1


@pytest.mark.parametrize("args,why", [
    ((Tensor((4, 8), F32, 0, 0x10000),), "one tensor of two"),
    ((Tensor((4, 8), F32, 0, 0x10000), Tensor((16,), F16, 0, 0x20000), Tensor((16,), F16, 0, 0)), "three"),
    ((Tensor((8, 4), F32, 0, 0x10000), Tensor((16,), F16, 0, 0x20000)), "another shape"),
    ((Tensor((4, 8), F16, 0, 0x10000), Tensor((16,), F16, 0, 0x20000)), "another dtype"),
    ((Tensor((4, 8), F32, 1, 0x10000), Tensor((16,), F16, 0, 0x20000)), "another device"),
    ((Tensor((4, 8), F32, 0, 0x10080), Tensor((16,), F16, 0, 0x20000)), "less aligned than the example"),
    ((Tensor((4, 8), F32, 0, 0x10000), Tensor((16,), F16, 0, 0x20000, contiguous=False)), "not contiguous"),
    ((Tensor((4, 8), F32, 0, 0x10000), 3.0), "not a tensor"),
])
def test_a_tensor_unlike_the_examples_is_refused_before_any_call(args: tuple[Any, ...], why: str) -> None:
    module = _module()
    rec, streams = Recorder(), []
    r = _replayer(module, rec, streams)
    assert r(*args) == -1, why
    assert rec.calls == [] and streams == [], why


def test_an_error_raised_by_a_tensor_is_not_swallowed() -> None:
    module = _module()

    class Broken(Tensor):
        def data_ptr(self) -> int:
            raise RuntimeError("device lost")

    rec = Recorder()
    r = _replayer(module, rec, [])
    with pytest.raises(RuntimeError, match="device lost"):
        r(Tensor((4, 8), F32, 0, 0x10000), Broken((16,), F16, 0, 0x20000))
    assert rec.calls == []


def test_bad_construction_is_refused_by_name() -> None:
    module = _module()
    rec = Recorder()
    with pytest.raises(ValueError, match="replay is NULL"):
        module.Replayer(0, 0xE0E0, SIG, lambda d: 0, 0)
    with pytest.raises(ValueError, match="exec is NULL"):
        module.Replayer(rec.address, 0, SIG, lambda d: 0, 0)
    with pytest.raises(TypeError, match="stream must be callable"):
        module.Replayer(rec.address, 0xE0E0, SIG, 5, 0)
    with pytest.raises(TypeError, match="signature 0 is not"):
        module.Replayer(rec.address, 0xE0E0, (((4, 8), F32),), lambda d: 0, 0)


def _run(code: str, tmp_path: Path, **env: str) -> str:
    """Runs `code` in a new Python that imports the crec this test imported (the source
    tree's, or an installed one), from another folder."""
    package = Path(_lib.__file__).resolve().parents[1]
    full = dict(os.environ, PYTHONPATH=str(package), **env)
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, check=True,
                          cwd=tmp_path, timeout=60).stdout


def test_crec_python_fast_0_turns_it_off_and_says_so(tmp_path: Path) -> None:
    _module()
    out = _run("from crec import _lib; print(_lib.fast() is None, _lib.fast_why())", tmp_path, CREC_PYTHON_FAST="0")
    assert out.strip() == "True CREC_PYTHON_FAST=0"


def test_it_loads_in_a_process_that_has_not_loaded_libcrec_yet(tmp_path: Path) -> None:
    _module()
    # (fast() loads libcrec first: it once did so holding the lock that loading takes, and hung)
    out = _run("from crec import _lib; m = _lib.fast(); print(m is not None, _lib.library_path())", tmp_path)
    assert out.startswith("True "), out


def test_more_inputs_than_fit_on_the_stack_are_passed_in_order() -> None:
    module = _module()
    rec = Recorder()
    sig = tuple(((i + 1,), F32, 0, 3) for i in range(12))
    r = module.Replayer(rec.address, 0xE0E0, sig, lambda d: 0x5000, 0)
    ts = [Tensor((i + 1,), F32, 0, 0x1000 * (i + 1)) for i in range(12)]
    assert r(*ts) == 0
    assert rec.calls == [(0xE0E0, [0x1000 * (i + 1) for i in range(12)], 0x5000)]
