"""What a binding can be made from, without a device: addresses, pairs,
__cuda_array_interface__ and DLPack capsules (built here by hand), and the errors."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import pytest

import crec
from crec import _buffers
from crec._buffers import pointer_of

SAXPY = Path(__file__).resolve().parents[2] / "tests" / "mlir" / "saxpy.mlir"


class CudaArray:
    def __init__(self, ptr: int, shape: tuple[int, ...], typestr: str = "<f4", strides: Any = None) -> None:
        self.__cuda_array_interface__ = {
            "data": (ptr, False),
            "shape": shape,
            "typestr": typestr,
            "strides": strides,
            "version": 3,
        }


def dlpack_capsule(
    ptr: int, shape: tuple[int, ...], bits: int = 32, device_type: int = 2, strides: Any = None, byte_offset: int = 0
) -> tuple[Any, list[Any]]:
    """A "dltensor" capsule over a DLManagedTensor made here (and what keeps it alive)."""

    class Managed(ctypes.Structure):
        _fields_ = [("tensor", _buffers._DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]

    shp = (ctypes.c_int64 * len(shape))(*shape)
    strd = (ctypes.c_int64 * len(shape))(*strides) if strides else None
    m = Managed()
    m.tensor.data = ptr
    m.tensor.device.device_type = device_type
    m.tensor.ndim = len(shape)
    m.tensor.dtype.code, m.tensor.dtype.bits, m.tensor.dtype.lanes = 2, bits, 1
    m.tensor.shape = ctypes.cast(shp, ctypes.POINTER(ctypes.c_int64))
    if strd is not None:
        m.tensor.strides = ctypes.cast(strd, ctypes.POINTER(ctypes.c_int64))
    m.tensor.byte_offset = byte_offset
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return new(ctypes.addressof(m), b"dltensor", None), [m, shp, strd]


class DLPackObject:
    def __init__(self, capsule: Any) -> None:
        self.capsule = capsule

    def __dlpack__(self, stream: Any = None) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, 0)


def test_addresses_and_pairs() -> None:
    assert pointer_of(0x1000)[:2] == (0x1000, None)
    assert pointer_of((0x1000, 64))[:2] == (0x1000, 64)
    assert pointer_of(ctypes.c_void_p(0x2000))[:2] == (0x2000, None)
    with pytest.raises(TypeError, match="bool"):
        pointer_of(True)
    with pytest.raises(TypeError, match="cannot bind a str"):
        pointer_of("x", "argument 0 ('x')")


def test_cuda_array_interface() -> None:
    assert pointer_of(CudaArray(0x1000, (4, 256)))[:2] == (0x1000, 4096)
    assert pointer_of(CudaArray(0x1000, (4, 256), strides=(1024, 4)))[:2] == (0x1000, 4096)
    assert pointer_of(CudaArray(0x1000, (0, 3)))[:2] == (0x1000, 0)
    with pytest.raises(ValueError, match="not C-contiguous"):
        pointer_of(CudaArray(0x1000, (4, 256), strides=(4, 16)))


def test_dlpack_capsules_and_objects() -> None:
    cap, keep = dlpack_capsule(0x10000, (2, 512), byte_offset=256)
    assert pointer_of(cap)[:2] == (0x10100, 4096)
    assert pointer_of(DLPackObject(cap))[:2] == (0x10100, 4096)
    cap, keep = dlpack_capsule(0x10000, (3, 8), bits=16, strides=(8, 1))
    assert pointer_of(cap)[:2] == (0x10000, 48)
    cap, keep = dlpack_capsule(0x10000, (3, 8), strides=(1, 3))
    with pytest.raises(ValueError, match="not C-contiguous"):
        pointer_of(cap)
    cap, keep = dlpack_capsule(0x10000, (8,), device_type=1)
    with pytest.raises(ValueError, match="lives in CPU memory"):
        pointer_of(cap, "argument 1 ('y')")
    del keep


def test_numpy_dlpack_is_host_memory_and_refused() -> None:
    np = pytest.importorskip("numpy")
    a = np.zeros(16, dtype=np.float32)
    if not hasattr(a, "__dlpack__"):
        pytest.skip("this numpy has no DLPack")
    with pytest.raises(ValueError, match="CPU memory"):
        pointer_of(a)


def test_bindings_by_order_or_name_and_their_errors() -> None:
    from crec._exec import _Signature

    with crec.lower_file(SAXPY) as p:
        sig = _Signature(p)
    b, _ = sig.bindings([0x1000, (0x2000, 8192)], [2.5])
    assert (b.num_buffers, b.buffers[0].ptr, b.buffers[0].size, b.buffers[1].size) == (2, 0x1000, 4096, 8192)
    assert b.num_scalars == 1 and b.scalars[0].f32 == 2.5
    b, _ = sig.bindings({"y": 0x2000, "x": 0x1000}, {"a": 1})
    assert (b.buffers[0].ptr, b.buffers[1].ptr, b.scalars[0].f32) == (0x1000, 0x2000, 1.0)
    with pytest.raises(ValueError, match="missing 'y'; no such argument 'z'"):
        sig.bindings({"x": 1, "z": 2}, [1.0])
    with pytest.raises(TypeError, match="sequence in binding order or a mapping"):
        sig.bindings("xy", [1.0])


def test_scalar_types_are_checked() -> None:
    from crec._exec import _set_value
    from crec._lib import Value

    v = Value()
    _set_value(v, 7, "i32", "s")
    assert v.i32 == 7
    _set_value(v, -(2**40), "i64", "s")
    assert v.i64 == -(2**40)
    with pytest.raises(OverflowError, match="does not fit in i32"):
        _set_value(v, 2**31, "i32", "scalar 0 ('n')")
    with pytest.raises(TypeError, match="give an int"):
        _set_value(v, 1.5, "i64", "scalar 0 ('n')")
    _set_value(v, 0.1, "f64", "s")
    assert v.f64 == 0.1


def test_a_missing_buffer_and_a_missing_scalar_raise_one_family() -> None:
    """Whether bound in order (crec counts them) or by name (this package checks the
    names), a missing or unknown argument or scalar is a crec.BindingError, which is a
    ValueError too; its message names the call."""
    from crec._exec import _Signature

    with crec.lower_file(SAXPY) as p:
        sig = _Signature(p)
        raised = []
        for buffers, scalars in [({"x": 1}, [1.0]), ([1, 2], {}), ({"x": 1, "y": 2, "z": 3}, [1.0]),
                                 ([1, 2], {"a": 1.0, "b": 2.0})]:
            with pytest.raises(crec.BindingError) as info:
                sig.bindings(buffers, scalars, "crec.record")
            raised.append(info.value)
        assert [str(e).split(": ")[1] for e in raised] == ["arguments", "scalars", "arguments", "scalars"]
        assert all(isinstance(e, ValueError) and e.status == crec.Status.ERR_BINDING for e in raised)
        assert str(raised[1]) == "crec.record: scalars: missing 'a' (the program's: ['a']) [ERR_BINDING]"
        # in order, crec counts: the same class
        for buffers, scalars in [([(0x1000, 4096)] * 2, []), ([(0x1000, 4096)], [1.0])]:
            with pytest.raises(crec.BindingError, match="crec_run_eager: "):
                crec.run_eager(p, buffers, scalars)


def test_a_bad_scalar_is_named() -> None:
    """A value that is not a number names the scalar and the call; a string is never
    parsed, and a float too large for f32 is refused rather than made infinite."""
    from crec._exec import _Signature

    with crec.lower_file(SAXPY) as p:
        sig = _Signature(p)
    for bad in ["2.5", None, [1.0], object()]:
        with pytest.raises(TypeError, match=r"^crec\.record: scalar 0 \('a'\) is f32: give a number, not "):
            sig.bindings([1, 2], [bad], "crec.record")
    with pytest.raises(OverflowError, match=r"^Exec\.replay: scalar 0 \('a'\): 1e\+300 does not fit in f32"):
        sig.bindings([1, 2], {"a": 1e300}, "Exec.replay")
    b, _ = sig.bindings([1, 2], [float("inf")], "crec.record")
    assert b.scalars[0].f32 == float("inf")


def test_streams_from_other_libraries() -> None:
    from crec._device import stream_handle

    class TorchLike:
        cuda_stream = 0x1234

    class CupyLike:
        ptr = 0x5678

    class Protocol:
        def __cuda_stream__(self) -> tuple[int, int]:
            return (0, 0x9ABC)

    assert stream_handle(None) is None and stream_handle(5) == 5
    assert [stream_handle(s) for s in (TorchLike(), CupyLike(), Protocol())] == [0x1234, 0x5678, 0x9ABC]
    with pytest.raises(TypeError, match="not a CUDA stream"):
        stream_handle(1.5)


def test_without_a_device_the_gpu_calls_raise_no_device() -> None:
    if crec.device_available():
        pytest.skip("a device is present: the GPU tests run instead")
    reason = crec.device_unavailable_reason()
    assert reason
    with pytest.raises(crec.NoDeviceError) as info:
        crec.DeviceBuffer(16)
    assert info.value.status == crec.Status.ERR_NO_DEVICE
    with pytest.raises(crec.NoDeviceError):
        crec.Stream()
    with pytest.raises(crec.NoDeviceError):
        crec.device_count()
    with crec.lower_file(SAXPY) as p:
        with pytest.raises(crec.NoDeviceError) as info:
            p.record([0x1000, 0x2000], [2.0])
        assert info.value.message.startswith("crec_record")
        with pytest.raises(crec.NoDeviceError):
            p.run_eager([0x1000, 0x2000], [2.0])


def test_update_strategies_are_checked_before_the_device_is() -> None:
    with crec.lower_file(SAXPY) as p:
        with pytest.raises(ValueError, match="update_strategy 'sometimes'"):
            p.record([0x1000, 0x2000], [2.0], update_strategy="sometimes")
        # crec_record checks its options before it looks for a device
        with pytest.raises(crec.InvalidArgumentError, match="CREC_UPDATE_DEVICE needs device_updates"):
            p.record([0x1000, 0x2000], [2.0], update_strategy="device")
        with pytest.raises(crec.InvalidArgumentError, match="variants 17 is above 16"):
            p.record([0x1000, 0x2000], [2.0], variants=17)
        with pytest.raises(crec.InvalidArgumentError, match="variants 2 with device_updates"):
            p.record([0x1000, 0x2000], [2.0], variants=2, device_updates=True)


@pytest.mark.parametrize("timeout", [0, -1.5, float("nan")])
def test_a_wait_needs_a_positive_timeout(timeout: float) -> None:
    # refused before any CUDA call: no device needed
    with pytest.raises(ValueError, match="timeout must be a positive number of seconds"):
        crec.synchronize(None, timeout=timeout)
