"""Devices, device and pinned host memory, copies and streams: ``crec/device.h``.

crec opens ``libcuda.so.1`` itself; these helpers need no CUDA runtime, CuPy or
PyTorch. Each uses the primary context of its device.
"""

from __future__ import annotations

import ctypes
from ctypes import byref, c_int, c_void_p
from dataclasses import dataclass
from typing import Any

from . import _lib


def device_available() -> bool:
    """True when a CUDA driver loads and at least one device is present."""
    return bool(_lib.load().crec_device_available())


def device_unavailable_reason() -> str:
    """Why no device is available ("" when one is): crec's message, e.g. "no CUDA driver: ..."."""
    lib = _lib.load()
    if lib.crec_device_available():
        return ""
    return _lib.text(lib.crec_last_error()) or "no CUDA device is available"


def device_count() -> int:
    """The number of CUDA devices (:class:`crec.NoDeviceError` without a driver)."""
    n = c_int()
    _lib.check(_lib.load().crec_device_count(byref(n)))
    return n.value


def driver_version() -> int:
    """The CUDA driver version, e.g. 13000."""
    v = c_int()
    _lib.check(_lib.load().crec_driver_version(byref(v)))
    return v.value


@dataclass(frozen=True)
class DeviceInfo:
    ordinal: int
    name: str
    major: int  #: compute capability
    minor: int


def describe_device(ordinal: int = 0) -> DeviceInfo:
    """The name and compute capability of device `ordinal`."""
    name = ctypes.create_string_buffer(256)
    major, minor = c_int(), c_int()
    _lib.check(_lib.load().crec_device_describe(ordinal, name, len(name), byref(major), byref(minor)))
    return DeviceInfo(ordinal, _lib.text(name.value), major.value, minor.value)


class _Memory(_lib.Owned):
    """Memory from crec's allocators, owned by this object and freed once."""

    _free_name = ""
    size: int
    device: int

    def __init__(self, ptr: int, size: int, device: int) -> None:
        self._ptr: int | None = ptr
        self.size = size
        self.device = device

    @property
    def ptr(self) -> int:
        """The address, as an int."""
        if self._ptr is None:
            raise ValueError(f"the {type(self).__name__} is closed")
        return self._ptr

    def _destroy(self, ptr: int) -> None:
        # frees the memory: synchronize work that uses it first
        getattr(_lib.load(), self._free_name)(ptr)

    def __int__(self) -> int:
        return self.ptr

    def __len__(self) -> int:
        return self.size

    def copy_from(self, data: Any, offset: int = 0) -> None:
        """Copies the bytes of `data` (any buffer-protocol object: bytes, numpy array, ...)
        into this memory at `offset`, synchronously (``crec_copy``)."""
        view = memoryview(data).cast("B")
        if offset < 0 or offset + view.nbytes > self.size:
            raise ValueError(f"{view.nbytes} bytes at offset {offset} do not fit in {self.size} bytes")
        src = (ctypes.c_char * view.nbytes).from_buffer_copy(view) if view.readonly else (
            ctypes.c_char * view.nbytes).from_buffer(view)
        _lib.check(_lib.load().crec_copy(self.ptr + offset, src, view.nbytes))

    def to_bytes(self, size: int | None = None, offset: int = 0) -> bytes:
        """Copies `size` bytes (default: to the end) at `offset` back to the host, synchronously."""
        n = self.size - offset if size is None else size
        if offset < 0 or n < 0 or offset + n > self.size:
            raise ValueError(f"{n} bytes at offset {offset} lie outside {self.size} bytes")
        out = ctypes.create_string_buffer(n)
        if n:
            _lib.check(_lib.load().crec_copy(out, self.ptr + offset, n))
        return out.raw


class DeviceBuffer(_Memory):
    """``size`` bytes of device memory on device `device` (``crec_device_alloc``), freed by
    :meth:`close`, a ``with`` block or garbage collection (``crec_device_free``).

    It binds as a crec argument directly, and exposes ``__cuda_array_interface__``
    (bytes, shape ``(size,)``) so CuPy or Numba can view it.
    """

    _free_name = "crec_device_free"

    def __init__(self, size: int, device: int = 0) -> None:
        out = c_void_p()
        _lib.check(_lib.load().crec_device_alloc(device, size, byref(out)))
        super().__init__(out.value or 0, size, device)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"shape": (self.size,), "typestr": "|u1", "data": (self.ptr, False), "version": 3, "strides": None}

    def __repr__(self) -> str:
        state = "closed" if self.closed else hex(self.ptr)
        return f"<crec.DeviceBuffer {self.size} bytes on device {self.device} at {state}>"


class HostBuffer(_Memory):
    """``size`` bytes of page-locked host memory (``crec_host_alloc``), usable by memcpy
    commands and bound to host-memory arguments; :meth:`view` reads and writes it in place."""

    _free_name = "crec_host_free"

    def __init__(self, size: int, device: int = 0) -> None:
        out = c_void_p()
        _lib.check(_lib.load().crec_host_alloc(device, size, byref(out)))
        super().__init__(out.value or 0, size, device)

    def view(self) -> memoryview:
        """A writable view of the bytes (valid until :meth:`close`)."""
        return memoryview((ctypes.c_char * self.size).from_address(self.ptr)).cast("B")

    def __repr__(self) -> str:
        state = "closed" if self.closed else hex(self.ptr)
        return f"<crec.HostBuffer {self.size} bytes at {state}>"


def copy(dst: Any, src: Any, size: int) -> None:
    """``crec_copy``: copies `size` bytes between host and device memory (any direction) and
    returns once done. `dst` and `src` are addresses (ints), crec buffers, or ctypes objects."""

    def addr(x: Any) -> Any:
        if isinstance(x, _Memory):
            return x.ptr
        return x

    _lib.check(_lib.load().crec_copy(addr(dst), addr(src), size))


class Stream(_lib.Owned):
    """A non-blocking CUDA stream on device `device` (``crec_stream_create``), destroyed by
    :meth:`close`, a ``with`` block or garbage collection. ``handle`` is the ``CUstream``
    as an int (what PyTorch's ``torch.cuda.ExternalStream`` or CuPy's
    ``cupy.cuda.ExternalStream`` take)."""

    def __init__(self, device: int = 0) -> None:
        out = c_void_p()
        _lib.check(_lib.load().crec_stream_create(device, byref(out)))
        self._ptr: int | None = out.value or 0
        self.device = device

    @property
    def handle(self) -> int:
        if self._ptr is None:
            raise ValueError("the crec stream is closed")
        return self._ptr

    def synchronize(self, timeout: float | None = None) -> None:
        """Waits until all work on the stream is done; with `timeout` (seconds), raises
        :class:`DeadlineError` once that much time has passed first (the work keeps running)."""
        _wait(self.handle, timeout)

    def _destroy(self, ptr: int) -> None:
        _lib.load().crec_stream_destroy(ptr)

    def __int__(self) -> int:
        return self.handle

    def __repr__(self) -> str:
        state = "closed" if self._ptr is None else hex(self._ptr)
        return f"<crec.Stream {state} on device {self.device}>"


def stream_handle(stream: Any) -> int | None:
    """A CUstream from None (the legacy default stream), an int, a :class:`Stream`, or another
    library's stream object (PyTorch's ``cuda_stream``, CuPy's ``ptr``, ``__cuda_stream__``)."""
    if stream is None:
        return None
    if isinstance(stream, Stream):
        return stream.handle
    if isinstance(stream, int) and not isinstance(stream, bool):
        return stream
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        value = proto() if callable(proto) else proto
        return int(value[1])
    for attr in ("cuda_stream", "ptr", "handle"):
        value = getattr(stream, attr, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    raise TypeError(f"not a CUDA stream: {type(stream).__name__} (give None, an int, or a crec.Stream)")


def _wait(handle: int | None, timeout: float | None) -> None:
    if timeout is None:
        _lib.check(_lib.load().crec_stream_synchronize(handle))
        return
    if not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
    # whole milliseconds, rounded up; crec_stream_wait takes an int
    ms = min(int(-(-float(timeout) * 1000 // 1)), 2**31 - 1)
    _lib.check(_lib.load().crec_stream_wait(handle, ms))


def synchronize(stream: Any = None, timeout: float | None = None) -> None:
    """Waits until all work on `stream` is done (None: the legacy default stream); with
    `timeout` (seconds), raises :class:`DeadlineError` once that much time has passed first.
    The work is not cancelled: a kernel that never ends holds the device until the process
    exits, so nothing it uses may be freed."""
    _wait(stream_handle(stream), timeout)
