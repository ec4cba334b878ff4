"""crec: record lowered GPU programs into CUDA graphs once, replay them many times.

ctypes bindings over libcrec (``libcrec.so.0``); no compiled extension. Importing
this package never loads the library: the first call that needs it does, and
raises :class:`LibraryNotFoundError` (a :class:`CrecError`) saying where it
looked when it cannot (see :func:`library_path` and ``python/README.md``).
"""

from __future__ import annotations

from . import _lib
from ._device import (
    DeviceBuffer,
    DeviceInfo,
    HostBuffer,
    Stream,
    copy,
    describe_device,
    device_available,
    device_count,
    device_unavailable_reason,
    driver_version,
    synchronize,
)
from ._errors import (
    BindingError,
    ContextLostError,
    CrecError,
    CudaError,
    DeadlineError,
    DeviceAssertError,
    DeviceOutOfMemoryError,
    DuplicateNameError,
    HostFunctionError,
    InternalError,
    InvalidArgumentError,
    InvalidHandleError,
    InvalidProgramError,
    IoError,
    LibraryNotFoundError,
    LoopLimitError,
    MisalignedError,
    MlirError,
    NoDeviceError,
    NotFoundError,
    NullPointerError,
    OutOfMemoryError,
    OutOfRangeError,
    RemoteError,
    Status,
    TooLargeError,
    TypeMismatchError,
    UnsupportedError,
    error_class,
)
from ._capture import (
    ImportCounts,
    ImportedExec,
    capture_begin,
    capture_end,
    capture_import,
    Route,
    graph_destroy,
    import_graph,
    import_page,
)
from ._exec import Exec, ExecStats, record, run_eager
from ._profile import CommandTimes, Profile, ProfileSummary, Span, Spread, profile, profile_exec
from ._program import (
    Arg,
    Buffer,
    Command,
    Diagnostic,
    HostFunction,
    Kernel,
    LowerCacheStats,
    Module,
    Operand,
    Plan,
    Program,
    ProgramWarning,
    Range,
    Region,
    Scalar,
    lower_cache_clear,
    lower_cache_stats,
    lower_file,
    lower_string,
)

__version__ = "0.1.0"


def version() -> str:
    """libcrec's version ("MAJOR.MINOR.PATCH"), from ``crec_version()``."""
    return _lib.text(_lib.load().crec_version())


def library_path() -> str:
    """Where libcrec was loaded from (loads it first)."""
    return _lib.library_path()


def last_error() -> str:
    """``crec_last_error()``: the calling thread's last crec error message ("" if none)."""
    return _lib.last_error()


def status_name(status: int) -> str:
    """``crec_status_name()``: "OK", "ERR_CUDA", ..., or "UNKNOWN"."""
    return _lib.text(_lib.load().crec_status_name(status))


def status_string(status: int) -> str:
    """``crec_status_string()``: a short English description of the status."""
    return _lib.text(_lib.load().crec_status_string(status))


def live_objects() -> int:
    """``crec_debug_live_objects()``: crec objects alive now (programs, plans, execs, ...)."""
    return int(_lib.load().crec_debug_live_objects())


# Public classes say "crec.X" in reprs and tracebacks, not the private module they live in.
for _name in (
    "Arg Buffer Command Diagnostic HostFunction Kernel LowerCacheStats Module Operand Plan Program "
    "ProgramWarning Range Region Scalar Exec ExecStats DeviceBuffer DeviceInfo HostBuffer Stream Status "
    "CommandTimes Profile ProfileSummary Span Spread"
).split():
    globals()[_name].__module__ = __name__
for _status in Status:
    error_class(_status).__module__ = __name__
CrecError.__module__ = LibraryNotFoundError.__module__ = __name__
del _name, _status

__all__ = [
    "Arg",
    "BindingError",
    "Buffer",
    "Command",
    "CommandTimes",
    "ContextLostError",
    "CrecError",
    "CudaError",
    "DeadlineError",
    "DeviceAssertError",
    "DeviceBuffer",
    "DeviceOutOfMemoryError",
    "DeviceInfo",
    "Diagnostic",
    "DuplicateNameError",
    "Exec",
    "ExecStats",
    "HostBuffer",
    "HostFunction",
    "HostFunctionError",
    "ImportCounts",
    "ImportedExec",
    "Route",
    "InternalError",
    "InvalidArgumentError",
    "InvalidHandleError",
    "InvalidProgramError",
    "IoError",
    "Kernel",
    "LibraryNotFoundError",
    "LoopLimitError",
    "LowerCacheStats",
    "MisalignedError",
    "MlirError",
    "Module",
    "NoDeviceError",
    "NotFoundError",
    "NullPointerError",
    "Operand",
    "OutOfMemoryError",
    "OutOfRangeError",
    "Plan",
    "Profile",
    "ProfileSummary",
    "Program",
    "ProgramWarning",
    "Range",
    "Region",
    "RemoteError",
    "Scalar",
    "Span",
    "Spread",
    "Status",
    "Stream",
    "TooLargeError",
    "TypeMismatchError",
    "UnsupportedError",
    "capture_begin",
    "capture_end",
    "capture_import",
    "copy",
    "describe_device",
    "device_available",
    "device_count",
    "device_unavailable_reason",
    "driver_version",
    "error_class",
    "graph_destroy",
    "import_graph",
    "import_page",
    "last_error",
    "library_path",
    "live_objects",
    "lower_cache_clear",
    "lower_cache_stats",
    "lower_file",
    "lower_string",
    "profile",
    "profile_exec",
    "record",
    "run_eager",
    "status_name",
    "status_string",
    "synchronize",
    "version",
]
