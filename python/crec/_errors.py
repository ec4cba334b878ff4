"""crec's statuses and the exceptions that carry them.

Every failing crec call raises a subclass of :class:`CrecError`, one per status
(``CREC_ERR_UNSUPPORTED`` raises :class:`UnsupportedError`), so callers can catch
one kind or all of them. Three are Python's own kinds too: :class:`IoError` is an
``OSError``, :class:`NotFoundError` a ``KeyError`` and :class:`BindingError` a
``ValueError``. Each carries ``status`` (a :class:`Status`),
``status_name`` (``"ERR_UNSUPPORTED"``, as ``crec_status_name()`` says) and
``message`` (``crec_last_error()`` of the failing call, or the status's own
description when crec left none).
"""

from __future__ import annotations

import enum


class Status(enum.IntEnum):
    """crec's statuses: the values of ``CREC_STATUS_TABLE`` in ``crec/status.h``.

    The test suite compares this table with ``crec_status_name()`` so the two
    cannot drift apart.
    """

    OK = 0
    ERR_INVALID_ARGUMENT = 1
    ERR_NULL_POINTER = 2
    ERR_INVALID_HANDLE = 3
    ERR_OUT_OF_RANGE = 4
    ERR_MISALIGNED = 5
    ERR_TOO_LARGE = 6
    ERR_DUPLICATE_NAME = 7
    ERR_TYPE_MISMATCH = 8
    ERR_OUT_OF_MEMORY = 9
    ERR_NO_DEVICE = 10
    ERR_CUDA = 11
    ERR_BINDING = 12
    ERR_UNSUPPORTED = 13
    ERR_MLIR = 14
    ERR_IO = 15
    ERR_NOT_FOUND = 16
    ERR_INVALID_PROGRAM = 17
    ERR_HOST_FUNCTION = 18
    ERR_INTERNAL = 19
    ERR_TIMEOUT = 20
    ERR_REMOTE = 21
    ERR_LOOP_LIMIT = 22
    ERR_DEVICE_ASSERT = 23
    ERR_DEVICE_OUT_OF_MEMORY = 24
    ERR_CONTEXT_LOST = 25


class CrecError(Exception):
    """A crec call failed: ``status``, ``status_name`` and crec's ``message``."""

    status: int
    status_name: str
    message: str

    def __init__(self, status: int, message: str, status_name: str | None = None) -> None:
        super().__init__(message)
        self.status = Status(status) if status in Status._value2member_map_ else status
        self.status_name = status_name if status_name is not None else _name_of(status)
        self.message = message

    def __str__(self) -> str:
        return f"{self.message} [{self.status_name}]"


def _name_of(status: int) -> str:
    try:
        return Status(status).name
    except ValueError:
        return "UNKNOWN"


class InvalidArgumentError(CrecError):
    """``CREC_ERR_INVALID_ARGUMENT``: invalid argument."""


class NullPointerError(CrecError):
    """``CREC_ERR_NULL_POINTER``: a required pointer or name is NULL."""


class InvalidHandleError(CrecError):
    """``CREC_ERR_INVALID_HANDLE``: a handle is out of range or belongs to another program."""


class OutOfRangeError(CrecError):
    """``CREC_ERR_OUT_OF_RANGE``: a byte range lies outside its buffer, or a value is out of range."""


class MisalignedError(CrecError):
    """``CREC_ERR_MISALIGNED``: an address or offset is not suitably aligned."""


class TooLargeError(CrecError):
    """``CREC_ERR_TOO_LARGE``: a size exceeds a CUDA limit."""


class DuplicateNameError(CrecError):
    """``CREC_ERR_DUPLICATE_NAME``: a name is already used."""


class TypeMismatchError(CrecError):
    """``CREC_ERR_TYPE_MISMATCH``: a value has the wrong type."""


class OutOfMemoryError(CrecError):
    """``CREC_ERR_OUT_OF_MEMORY``: a host memory allocation failed."""


class NoDeviceError(CrecError):
    """``CREC_ERR_NO_DEVICE``: no CUDA driver or device is available."""


class CudaError(CrecError):
    """``CREC_ERR_CUDA``: a CUDA driver call failed."""


class BindingError(CrecError, ValueError):
    """``CREC_ERR_BINDING``: bindings do not match the program: a buffer or scalar
    missing, one the program has no slot of, or one of the wrong size. Also a
    ``ValueError``. This package raises it too, for the same mistakes it finds before
    calling crec (a mapping that lacks a name, or names what the program lacks)."""


class UnsupportedError(CrecError):
    """``CREC_ERR_UNSUPPORTED``: a feature is not supported."""


class MlirError(CrecError):
    """``CREC_ERR_MLIR``: MLIR input could not be parsed, verified or lowered.

    ``diagnostics`` holds what MLIR reported during the lowering.
    """


class IoError(CrecError, OSError):
    """``CREC_ERR_IO``: a file could not be read or written. Also an ``OSError``, so
    ``except OSError`` catches it as it catches Python's own file errors."""


class NotFoundError(CrecError, KeyError):
    """``CREC_ERR_NOT_FOUND``: a named entity was not found (``Program.find_buffer``,
    ``find_scalar``, a plan's buffer by name, a lowering's entry function). Also a
    ``KeyError``, as a missing key of a mapping is."""


class InvalidProgramError(CrecError):
    """``CREC_ERR_INVALID_PROGRAM``: the program is incomplete or inconsistent."""


class HostFunctionError(CrecError):
    """``CREC_ERR_HOST_FUNCTION``: a host function reported failure."""


class InternalError(CrecError):
    """``CREC_ERR_INTERNAL``: internal error."""


class DeadlineError(CrecError):
    """``CREC_ERR_TIMEOUT``: a wait ran past its deadline (other ranks, or a stream)."""


class RemoteError(CrecError):
    """``CREC_ERR_REMOTE``: another rank of a communicator failed."""


class LoopLimitError(CrecError):
    """``CREC_ERR_LOOP_LIMIT``: a device loop reached its iteration limit and was stopped."""


class DeviceAssertError(CrecError):
    """``CREC_ERR_DEVICE_ASSERT``: a kernel's assertion failed (its message is on
    standard error); the process's CUDA context can no longer be used."""


class DeviceOutOfMemoryError(CudaError):
    """``CREC_ERR_DEVICE_OUT_OF_MEMORY``: device or page-locked memory allocation
    failed (``CUDA_ERROR_OUT_OF_MEMORY``). A :class:`CudaError` too, as it was
    before it had a status of its own."""


class ContextLostError(CudaError):
    """``CREC_ERR_CONTEXT_LOST``: a kernel faulted (illegal address, launch
    failure); the process's CUDA context can no longer be used. A
    :class:`CudaError` too, as it was before it had a status of its own."""


class LibraryNotFoundError(CrecError):
    """libcrec could not be loaded. Raised by this package (not by libcrec) at the
    first call that needs the library; the message lists every place it looked.
    Its status is ``ERR_NOT_FOUND``."""

    def __init__(self, message: str) -> None:
        super().__init__(Status.ERR_NOT_FOUND, message)


_BY_STATUS: dict[int, type[CrecError]] = {
    Status.ERR_INVALID_ARGUMENT: InvalidArgumentError,
    Status.ERR_NULL_POINTER: NullPointerError,
    Status.ERR_INVALID_HANDLE: InvalidHandleError,
    Status.ERR_OUT_OF_RANGE: OutOfRangeError,
    Status.ERR_MISALIGNED: MisalignedError,
    Status.ERR_TOO_LARGE: TooLargeError,
    Status.ERR_DUPLICATE_NAME: DuplicateNameError,
    Status.ERR_TYPE_MISMATCH: TypeMismatchError,
    Status.ERR_OUT_OF_MEMORY: OutOfMemoryError,
    Status.ERR_NO_DEVICE: NoDeviceError,
    Status.ERR_CUDA: CudaError,
    Status.ERR_BINDING: BindingError,
    Status.ERR_UNSUPPORTED: UnsupportedError,
    Status.ERR_MLIR: MlirError,
    Status.ERR_IO: IoError,
    Status.ERR_NOT_FOUND: NotFoundError,
    Status.ERR_INVALID_PROGRAM: InvalidProgramError,
    Status.ERR_HOST_FUNCTION: HostFunctionError,
    Status.ERR_INTERNAL: InternalError,
    Status.ERR_TIMEOUT: DeadlineError,
    Status.ERR_REMOTE: RemoteError,
    Status.ERR_LOOP_LIMIT: LoopLimitError,
    Status.ERR_DEVICE_ASSERT: DeviceAssertError,
    Status.ERR_DEVICE_OUT_OF_MEMORY: DeviceOutOfMemoryError,
    Status.ERR_CONTEXT_LOST: ContextLostError,
}


def error_class(status: int) -> type[CrecError]:
    """Returns the exception class raised for `status` (CrecError for an unknown one)."""
    return _BY_STATUS.get(status, CrecError)
