"""What a buffer binding can be made from: an address, crec's own memory, an object with
``__cuda_array_interface__``, or DLPack (a capsule, or an object with ``__dlpack__``).

crec binds bytes: a binding is a base address and a size. Arrays must be
C-contiguous (a strided view would bind bytes the kernel does not expect).
Nothing here takes ownership: the caller keeps the memory alive until the work
that uses it is done.
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, Structure, c_char_p, c_int, c_int32, c_int64, c_uint8, c_uint16, c_uint64, c_void_p
from typing import Any

from ._device import _Memory

_KDL_CPU = 1
_KDL_CUDA = 2
_KDL_CUDA_HOST = 3
_KDL_CUDA_MANAGED = 13
_KDL_NAMES = {1: "CPU", 2: "CUDA", 3: "CUDA host", 4: "OpenCL", 7: "Vulkan", 8: "Metal", 10: "ROCm", 13: "CUDA managed"}


class _DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class _DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class _DLTensor(Structure):
    _fields_ = [
        ("data", c_void_p),
        ("device", _DLDevice),
        ("ndim", c_int32),
        ("dtype", _DLDataType),
        ("shape", POINTER(c_int64)),
        ("strides", POINTER(c_int64)),
        ("byte_offset", c_uint64),
    ]


# DLManagedTensorVersioned: {DLPackVersion version; void *manager_ctx; deleter; uint64 flags; DLTensor}
_VERSIONED_TENSOR_OFFSET = 8 + 8 + 8 + 8

_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype = c_int
_capsule_is_valid.argtypes = [ctypes.py_object, c_char_p]
_capsule_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get_pointer.restype = c_void_p
_capsule_get_pointer.argtypes = [ctypes.py_object, c_char_p]


def _is_capsule(obj: Any) -> bool:
    return type(obj).__name__ == "PyCapsule"


def _contiguous_bytes(shape: tuple[int, ...], strides: tuple[int, ...] | None, itemsize: int, what: str) -> int:
    """Bytes of a C-contiguous array; ValueError for any other layout. `strides` in bytes."""
    n = 1
    for d in shape:
        n *= d
    if n == 0 or strides is None:
        return n * itemsize
    expected = itemsize
    for d, s in reversed(list(zip(shape, strides))):
        if d != 1 and s != expected:
            raise ValueError(f"{what} is not C-contiguous (shape {shape}, strides {strides} bytes): crec binds bytes")
        expected *= d
    return n * itemsize


def _from_dltensor(t: _DLTensor, what: str) -> tuple[int, int]:
    if t.device.device_type not in (_KDL_CUDA, _KDL_CUDA_HOST, _KDL_CUDA_MANAGED):
        kind = _KDL_NAMES.get(t.device.device_type, f"device type {t.device.device_type}")
        raise ValueError(f"{what} lives in {kind} memory: crec binds CUDA device (or pinned host) memory")
    bits = t.dtype.bits * t.dtype.lanes
    if bits % 8:
        raise ValueError(f"{what} has {bits}-bit elements: crec binds whole bytes")
    itemsize = bits // 8
    shape = tuple(int(t.shape[i]) for i in range(t.ndim))
    strides = None
    if t.strides:
        strides = tuple(int(t.strides[i]) * itemsize for i in range(t.ndim))
    size = _contiguous_bytes(shape, strides, itemsize, what)
    return int(t.data or 0) + int(t.byte_offset), size


def _from_capsule(capsule: Any, what: str) -> tuple[int, int]:
    # The capsule is read, not consumed (not renamed "used_dltensor"): its producer
    # still owns the tensor and frees it when the capsule goes away.
    if _capsule_is_valid(capsule, b"dltensor"):
        ptr = _capsule_get_pointer(capsule, b"dltensor")
        return _from_dltensor(_DLTensor.from_address(ptr), what)
    if _capsule_is_valid(capsule, b"dltensor_versioned"):
        ptr = _capsule_get_pointer(capsule, b"dltensor_versioned")
        return _from_dltensor(_DLTensor.from_address(ptr + _VERSIONED_TENSOR_OFFSET), what)
    raise ValueError(f"{what} is a capsule that holds no DLPack tensor (already consumed?)")


def _from_cuda_array_interface(cai: dict[str, Any], what: str) -> tuple[int, int]:
    ptr = int(cai["data"][0] or 0)
    shape = tuple(int(d) for d in cai["shape"])
    typestr = cai["typestr"]
    itemsize = int(typestr[2:])
    strides = cai.get("strides")
    mask = cai.get("mask")
    if mask is not None:
        raise ValueError(f"{what} is a masked array: crec binds bytes")
    return ptr, _contiguous_bytes(shape, tuple(strides) if strides is not None else None, itemsize, what)


def pointer_of(obj: Any, what: str = "the buffer") -> tuple[int, int | None, Any]:
    """(address, size in bytes or None when `obj` does not say, what to keep alive during the call).

    `obj` is an int (an address), a ``(address, size)`` pair, a :class:`crec.DeviceBuffer` or
    :class:`crec.HostBuffer`, an object with ``__cuda_array_interface__`` (CuPy, Numba,
    PyTorch), a DLPack capsule, or an object with ``__dlpack__`` (PyTorch, CuPy, JAX, ...).
    """
    if isinstance(obj, bool):
        raise TypeError(f"{what}: a bool is not a buffer")
    if isinstance(obj, int):
        return obj, None, None
    if isinstance(obj, _Memory):
        return obj.ptr, obj.size, obj
    if isinstance(obj, tuple) and len(obj) == 2 and all(isinstance(v, int) for v in obj):
        return obj[0], obj[1], None
    if isinstance(obj, ctypes.c_void_p):
        return obj.value or 0, None, None
    try:
        cai = getattr(obj, "__cuda_array_interface__", None)
    except Exception:  # e.g. PyTorch refuses it for a tensor that requires grad: try DLPack
        if not hasattr(obj, "__dlpack__"):
            raise
        cai = None
    if cai is not None:
        ptr, size = _from_cuda_array_interface(cai, what)
        return ptr, size, obj
    if _is_capsule(obj):
        ptr, size = _from_capsule(obj, what)
        return ptr, size, obj
    if hasattr(obj, "__dlpack__"):
        capsule = obj.__dlpack__()
        ptr, size = _from_capsule(capsule, what)
        return ptr, size, (obj, capsule)
    raise TypeError(
        f"{what}: cannot bind a {type(obj).__name__}: give an address (int), (address, size), a "
        "crec.DeviceBuffer, an object with __cuda_array_interface__, or a DLPack capsule or object"
    )
