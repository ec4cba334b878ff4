"""Finding and loading libcrec, and the ctypes view of its C API.

The library is looked for, in this order, the first time a call needs it
(importing :mod:`crec` never does):

1. ``CREC_LIBRARY_PATH``: a file, or a folder holding ``libcrec.so.0`` (or
   ``libcrec.so``). When it is set it is the only place tried, so a test that
   points at one build never picks up another;
2. the package's own copy, ``crec/libcrec.so.0`` beside this file, which a
   wheel built by ``pip install ./python`` carries (with the MLIR front end,
   ``libcrec-mlir.so``, that libcrec opens from beside itself);
3. the build tree, when the package is used from crec's source tree:
   ``<repo>/build/libcrec.so.0``;
4. the system loader: ``libcrec.so.0`` through ``LD_LIBRARY_PATH`` and the
   ``ldconfig`` cache (an installed crec).

When none loads, the call raises :class:`crec.LibraryNotFoundError` listing
every place tried and why each failed.

Everything here is internal: the structs mirror ``include/crec/*.h`` field by
field (the test suite compiles a probe against the headers and compares every
size and offset).
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import threading
from ctypes import (
    POINTER,
    Structure,
    Union,
    c_char,
    c_char_p,
    c_double,
    c_float,
    c_int,
    c_int32,
    c_int64,
    c_size_t,
    c_uint8,
    c_uint32,
    c_uint64,
    c_void_p,
)
from pathlib import Path
from typing import Any, Self

from ._errors import CrecError, LibraryNotFoundError, error_class

class Owned:
    """A Python object that owns one C object, its address in ``_ptr``: :meth:`close`
    destroys it once (a second call does nothing), as do the end of a ``with``
    block and garbage collection. Subclasses say how in :meth:`_destroy`."""

    _ptr: int | None = None

    def _destroy(self, ptr: int) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Destroys the C object; a second call does nothing."""
        ptr, self._ptr = self._ptr, None
        if ptr is not None:
            self._destroy(ptr)

    @property
    def closed(self) -> bool:
        return self._ptr is None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # at interpreter exit the library may already be gone
            pass


LIBRARY_ENV = "CREC_LIBRARY_PATH"
SONAME = "libcrec.so.0"

# ---- the C structs ---------------------------------------------------------------------------


class Handle(Structure):
    """crec_buffer, crec_scalar, crec_module, crec_kernel, crec_region, crec_command."""

    _fields_ = [("id", c_uint32)]


class Range(Structure):
    _fields_ = [("buffer", Handle), ("offset", c_uint64), ("size", c_uint64)]


class Operand(Structure):
    """crec_operand: a range and how a command uses it (CREC_ACCESS_*)."""

    _fields_ = [("range", Range), ("access", c_int)]


ACCESS_READ, ACCESS_WRITE, ACCESS_READ_WRITE = 1, 2, 3


class Value(Union):
    _fields_ = [
        ("i32", c_int32),
        ("i64", c_int64),
        ("f32", c_float),
        ("f64", c_double),
        ("u64", c_uint64),
        ("bytes", c_uint8 * 8),
    ]


class Arg(Structure):
    _fields_ = [
        ("kind", c_int),
        ("access", c_int),
        ("range", Range),
        ("scalar", Handle),
        ("type", c_int),
        ("size", c_uint32),
        ("data", c_void_p),
        ("value", Value),
    ]


class Dim(Structure):
    _fields_ = [("scalar", Handle), ("value", c_uint32)]


class BufferInfo(Structure):
    _fields_ = [
        ("name", c_char_p),
        ("kind", c_int),
        ("memory", c_int),
        ("size", c_uint64),
        ("alignment", c_uint32),
        ("dynamic_size", c_int),
        ("element", c_int),
        ("argument_index", c_size_t),
        ("data", c_void_p),
    ]


class ScalarInfo(Structure):
    _fields_ = [
        ("name", c_char_p),
        ("type", c_int),
        ("kind", c_int),
        ("binding_index", c_size_t),
        ("buffer", Handle),
    ]


class HostFunctionInfo(Structure):
    _fields_ = [
        ("name", c_char_p),
        ("fn", c_void_p),
        ("user", c_void_p),
        ("inputs", POINTER(Handle)),
        ("num_inputs", c_size_t),
        ("outputs", POINTER(Handle)),
        ("num_outputs", c_size_t),
    ]


class ModuleInfo(Structure):
    _fields_ = [("name", c_char_p), ("format", c_int), ("image", c_void_p), ("size", c_size_t)]


class KernelInfo(Structure):
    _fields_ = [
        ("module", Handle),
        ("entry", c_char_p),
        ("shared_bytes", c_uint32),
        ("cluster", c_uint32 * 3),
    ]


class RegionInfo(Structure):
    _fields_ = [
        ("role", c_int),
        ("parent", Handle),
        ("index_in_parent", c_size_t),
        ("num_commands", c_size_t),
    ]


class CommandInfo(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("kind", c_int),
        ("name", c_char_p),
        ("region", Handle),
        ("index_in_region", c_size_t),
        ("kernel", Handle),
        ("grid", Dim * 3),
        ("block", Dim * 3),
        ("shared_bytes", Dim),
        ("num_args", c_size_t),
        ("dst", Range),
        ("src", Range),
        ("bytes", c_uint64),
        ("memset_value", c_uint32),
        ("memset_element_size", c_uint32),
        ("predicate", Range),
        ("num_regions", c_size_t),
        ("case_values", POINTER(c_int32)),
        ("num_operands", c_size_t),
        ("start", Handle),
        ("workspace", Handle),
        ("launch_flags", c_uint32),
    ]


class WarningInfo(Structure):
    _fields_ = [("command", Handle), ("range", Range), ("access", c_int), ("message", c_char_p)]


class LowerOptions(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("entry", c_char_p),
        ("chip", c_char_p),
        ("diagnostic", c_void_p),
        ("diagnostic_user", c_void_p),
        ("filename", c_char_p),
        ("base_dir", c_char_p),
        ("cubin", c_int),
        ("early_start", c_int),
    ]


#: the persistent cache's counters in ``crec_lower_cache_stats``, in order
LOWER_DISK_CACHE_FIELDS = (
    "disk_hits",
    "disk_misses",
    "disk_writes",
    "disk_evictions",
    "disk_rejected",
    "disk_uncacheable",
)


class LowerCacheStats(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("compilations", c_uint64),
        ("hits", c_uint64),
        ("entries", c_uint64),
        ("bytes", c_uint64),
    ] + [(f, c_uint64) for f in LOWER_DISK_CACHE_FIELDS]


class PlanOptions(Structure):
    _fields_ = [("struct_size", c_size_t), ("schedule", c_int), ("arena_alignment", c_uint32)]


class Binding(Structure):
    _fields_ = [("ptr", c_void_p), ("size", c_uint64)]


class Bindings(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("buffers", POINTER(Binding)),
        ("num_buffers", c_size_t),
        ("scalars", POINTER(Value)),
        ("num_scalars", c_size_t),
        ("communicators", POINTER(c_void_p)),
        ("num_communicators", c_size_t),
    ]


class RecordOptions(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("device", c_int),
        ("schedule", c_int),
        ("whole_update_percent", c_uint32),
        ("legacy_conditionals", c_int),
        ("trace_cache_size", c_uint32),
        ("eager_control_flow", c_int),
        ("max_loop_iterations", c_uint64),
        ("device_updates", c_int),
        ("profile", c_int),
        ("update_strategy", c_int),
        ("trace_child_graphs", c_int),
        ("variants", c_uint32),
    ]


EXEC_STATS_FIELDS = (
    "nodes",
    "replays",
    "nodes_updated",
    "updates_skipped",
    "per_node_updates",
    "whole_graph_updates",
    "host_function_calls",
    "last_nodes_updated",
    "eager_commands",
    "traced_nodes",
    "trace_captures",
    "trace_hits",
    "trace_misses",
    "trace_recaptures",
    "custom_updates",
    "launches",
    "device_nodes",
    "device_node_updates",
    "device_update_launches",
    "modules_loaded",
    "modules_jit",
    "module_load_us",
    "device_path_host_updates",
    "traced_inline",
    "variants",
    "variant_switches",
    "variant_hits",
    "copied_arguments",
    "captured_replays",
    "programmatic_edges",
)


class ExecStats(Structure):
    _fields_ = [("struct_size", c_size_t)] + [(f, c_uint64) for f in EXEC_STATS_FIELDS]


class ProfileSpan(Structure):
    _fields_ = [("command", Handle), ("replay", c_uint32), ("iteration", c_int32), ("start_ns", c_uint64),
                ("end_ns", c_uint64)]


class ProfileOptions(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("program", c_char_p),
        ("entry", c_char_p),
        ("device", c_char_p),
        ("replay_us", POINTER(c_double)),
        ("num_replay_us", c_size_t),
        ("profiled_us", POINTER(c_double)),
        ("num_profiled_us", c_size_t),
        ("host_binding_checks_us", c_double),
        ("host_per_node_updates_us", c_double),
        ("host_whole_graph_updates_us", c_double),
        ("host_device_updates_us", c_double),
        ("host_launch_us", c_double),
    ]


class ProfileSpread(Structure):
    _fields_ = [("min", c_double), ("p50", c_double), ("max", c_double)]


class ProfileCommand(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("ran", c_int),
        ("device_us", ProfileSpread),
        ("start_us", c_double),
        ("nodes", c_uint64),
        ("concurrent", c_uint64),
        ("is_loop", c_int),
        ("iterations", ProfileSpread),
        ("per_iteration_us", c_double),
        ("critical", c_int),
    ]


class ProfileSummary(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("replays", c_uint32),
        ("median_replay", c_uint32),
        ("span_us", c_double),
        ("idle_us", c_double),
        ("critical_us", c_double),
        ("critical_path", POINTER(Handle)),
        ("critical_length", c_size_t),
        ("timeline_spans", c_size_t),
    ]


#: Every mirrored struct, by its C name (the layout test checks each against the headers).
class GraphArgument(Structure):
    _fields_ = [("name", c_char_p), ("base", c_void_p), ("size", c_uint64)]


class GraphImport(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("graph", c_void_p),
        ("arguments", POINTER(GraphArgument)),
        ("num_arguments", c_size_t),
        ("second", c_void_p),
        ("second_bases", POINTER(c_void_p)),
        ("third", c_void_p),
        ("third_bases", POINTER(c_void_p)),
        ("access", POINTER(c_int)),
    ]


class ImportRoute(Structure):
    _fields_ = [("struct_size", c_size_t), ("copied", c_int), ("copied_back", c_int), ("relocations", c_size_t),
                ("why", c_char_p)]


STRUCTS: dict[str, type[Structure] | type[Union]] = {
    "crec_buffer": Handle,
    "crec_range": Range,
    "crec_operand": Operand,
    "crec_value": Value,
    "crec_arg": Arg,
    "crec_dim": Dim,
    "crec_buffer_info": BufferInfo,
    "crec_scalar_info": ScalarInfo,
    "crec_host_function_info": HostFunctionInfo,
    "crec_module_info": ModuleInfo,
    "crec_kernel_info": KernelInfo,
    "crec_region_info": RegionInfo,
    "crec_command_info": CommandInfo,
    "crec_warning_info": WarningInfo,
    "crec_lower_options": LowerOptions,
    "crec_lower_cache_stats": LowerCacheStats,
    "crec_plan_options": PlanOptions,
    "crec_binding": Binding,
    "crec_bindings": Bindings,
    "crec_record_options": RecordOptions,
    "crec_exec_stats": ExecStats,
    "crec_profile_span": ProfileSpan,
    "crec_profile_options": ProfileOptions,
    "crec_profile_spread": ProfileSpread,
    "crec_profile_command": ProfileCommand,
    "crec_profile_summary": ProfileSummary,
    "crec_graph_argument": GraphArgument,
    "crec_graph_import": GraphImport,
    "crec_import_route": ImportRoute,
}

DIAGNOSTIC_FN = ctypes.CFUNCTYPE(None, c_void_p, c_char_p, c_char_p, c_char_p)
CAPTURE_FN = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, POINTER(c_void_p))

# ---- the functions ---------------------------------------------------------------------------

_P = c_void_p  # crec_program *, crec_plan *, crec_exec *, crec_stream: opaque pointers
_S = c_int  # crec_status

_PROTOTYPES: dict[str, tuple[Any, list[Any]]] = {
    # status.h
    "crec_status_name": (c_char_p, [c_int]),
    "crec_status_string": (c_char_p, [c_int]),
    "crec_last_error": (c_char_p, []),
    "crec_version": (c_char_p, []),
    "crec_free": (None, [c_void_p]),
    # program.h
    "crec_program_create": (_S, [POINTER(c_void_p)]),
    "crec_program_destroy": (None, [_P]),
    "crec_program_add_argument": (_S, [_P, c_char_p, c_uint64, c_void_p, POINTER(Handle)]),
    "crec_program_add_while": (_S, [_P, Handle, c_char_p, Range, POINTER(Handle), POINTER(Handle), POINTER(Handle)]),
    "crec_program_add_if": (_S, [_P, Handle, c_char_p, Range, POINTER(Handle), POINTER(Handle), POINTER(Handle)]),
    "crec_program_set_loop_limit": (_S, [_P, Handle, c_uint64]),
    "crec_program_body": (Handle, [_P]),
    "crec_program_validate": (_S, [_P]),
    "crec_program_get_loop_limit": (_S, [_P, Handle, POINTER(c_uint64)]),
    # inspect.h
    "crec_command_kind_name": (c_char_p, [c_int]),
    "crec_region_role_name": (c_char_p, [c_int]),
    "crec_buffer_kind_name": (c_char_p, [c_int]),
    "crec_type_name": (c_char_p, [c_int]),
    "crec_element_name": (c_char_p, [c_int]),
    "crec_element_size": (c_size_t, [c_int]),
    "crec_type_size": (c_size_t, [c_int]),
    "crec_image_format_name": (c_char_p, [c_int]),
    "crec_image_needs_jit": (c_int, [c_int, c_void_p, c_size_t, c_int, c_int]),
    "crec_program_buffer_count": (c_size_t, [_P]),
    "crec_program_buffer": (Handle, [_P, c_size_t]),
    "crec_program_argument_count": (c_size_t, [_P]),
    "crec_program_argument": (Handle, [_P, c_size_t]),
    "crec_buffer_get_info": (_S, [_P, Handle, POINTER(BufferInfo)]),
    "crec_program_find_buffer": (_S, [_P, c_char_p, POINTER(Handle)]),
    "crec_program_scalar_count": (c_size_t, [_P]),
    "crec_program_scalar": (Handle, [_P, c_size_t]),
    "crec_program_bound_scalar_count": (c_size_t, [_P]),
    "crec_program_bound_scalar": (Handle, [_P, c_size_t]),
    "crec_scalar_get_info": (_S, [_P, Handle, POINTER(ScalarInfo)]),
    "crec_program_find_scalar": (_S, [_P, c_char_p, POINTER(Handle)]),
    "crec_program_host_function_count": (c_size_t, [_P]),
    "crec_program_get_host_function": (_S, [_P, c_size_t, POINTER(HostFunctionInfo)]),
    "crec_program_module_count": (c_size_t, [_P]),
    "crec_program_module": (Handle, [_P, c_size_t]),
    "crec_module_get_info": (_S, [_P, Handle, POINTER(ModuleInfo)]),
    "crec_program_kernel_count": (c_size_t, [_P]),
    "crec_program_kernel": (Handle, [_P, c_size_t]),
    "crec_kernel_get_info": (_S, [_P, Handle, POINTER(KernelInfo)]),
    "crec_program_region_count": (c_size_t, [_P]),
    "crec_program_region": (Handle, [_P, c_size_t]),
    "crec_region_get_info": (_S, [_P, Handle, POINTER(RegionInfo)]),
    "crec_region_command": (Handle, [_P, Handle, c_size_t]),
    "crec_program_command_count": (c_size_t, [_P]),
    "crec_program_command": (Handle, [_P, c_size_t]),
    "crec_command_get_info": (_S, [_P, Handle, POINTER(CommandInfo)]),
    "crec_command_get_operand": (_S, [_P, Handle, c_size_t, POINTER(Range), POINTER(c_int)]),
    "crec_command_get_arg": (_S, [_P, Handle, c_size_t, POINTER(Arg)]),
    "crec_command_region": (Handle, [_P, Handle, c_size_t]),
    "crec_handle_index": (c_size_t, [c_uint32]),
    "crec_program_warning_count": (c_size_t, [_P]),
    "crec_program_get_warning": (_S, [_P, c_size_t, POINTER(WarningInfo)]),
    # plan.h
    "crec_plan_create": (_S, [_P, POINTER(PlanOptions), POINTER(c_void_p)]),
    "crec_plan_destroy": (None, [_P]),
    "crec_plan_get_deps": (_S, [_P, Handle, POINTER(POINTER(Handle)), POINTER(c_size_t)]),
    "crec_plan_arena_bytes": (c_uint64, [_P]),
    "crec_plan_get_temporary": (_S, [_P, Handle, POINTER(c_uint64)]),
    "crec_plan_get_lifetime": (_S, [_P, Handle, POINTER(c_size_t), POINTER(c_size_t)]),
    # dump.h
    "crec_dump": (_S, [_P, _P, c_int, POINTER(c_void_p), POINTER(c_size_t)]),
    "crec_profile_create": (
        _S,
        [_P, POINTER(ProfileSpan), c_size_t, c_uint32, POINTER(ProfileOptions), POINTER(c_void_p)],
    ),
    "crec_profile_destroy": (None, [_P]),
    "crec_exec_profile": (_S, [_P, POINTER(Bindings), _P, c_uint32, POINTER(ProfileOptions), POINTER(c_void_p)]),
    "crec_profile_get_command": (_S, [_P, Handle, POINTER(ProfileCommand)]),
    "crec_profile_get_summary": (_S, [_P, POINTER(ProfileSummary)]),
    "crec_profile_dump": (_S, [_P, c_int, POINTER(c_void_p), POINTER(c_size_t)]),
    # serialize.h
    "crec_program_serialize": (_S, [_P, POINTER(c_void_p), POINTER(c_size_t)]),
    "crec_program_deserialize": (_S, [c_void_p, c_size_t, POINTER(c_void_p)]),
    # lower.h
    "crec_lower_mlir_file": (_S, [c_char_p, POINTER(LowerOptions), POINTER(c_void_p)]),
    "crec_lower_mlir_string": (_S, [c_char_p, c_size_t, POINTER(LowerOptions), POINTER(c_void_p)]),
    "crec_lower_cache_get_stats": (_S, [POINTER(LowerCacheStats)]),
    "crec_lower_cache_clear": (None, []),
    # device.h
    "crec_device_available": (c_int, []),
    "crec_device_count": (_S, [POINTER(c_int)]),
    "crec_driver_version": (_S, [POINTER(c_int)]),
    "crec_device_describe": (_S, [c_int, POINTER(c_char), c_size_t, POINTER(c_int), POINTER(c_int)]),
    "crec_device_alloc": (_S, [c_int, c_uint64, POINTER(c_void_p)]),
    "crec_device_free": (None, [c_void_p]),
    "crec_host_alloc": (_S, [c_int, c_uint64, POINTER(c_void_p)]),
    "crec_host_free": (None, [c_void_p]),
    "crec_copy": (_S, [c_void_p, c_void_p, c_uint64]),
    "crec_stream_create": (_S, [c_int, POINTER(c_void_p)]),
    "crec_stream_destroy": (None, [_P]),
    "crec_stream_synchronize": (_S, [_P]),
    "crec_stream_wait": (_S, [_P, c_int]),
    # exec.h
    "crec_record": (_S, [_P, POINTER(Bindings), POINTER(RecordOptions), POINTER(c_void_p)]),
    "crec_exec_replay": (_S, [_P, POINTER(Bindings), _P]),
    "crec_exec_check": (_S, [_P]),
    "crec_exec_bind_buffer": (_S, [_P, c_size_t, c_void_p, c_uint64]),
    "crec_exec_bind_scalar": (_S, [_P, c_size_t, Value]),
    "crec_exec_bind_comm": (_S, [_P, c_size_t, _P]),
    "crec_exec_clear_bindings": (_S, [_P]),
    "crec_exec_launch": (_S, [_P, _P]),
    "crec_exec_destroy": (None, [_P]),
    "crec_exec_get_stats": (_S, [_P, POINTER(ExecStats)]),
    "crec_exec_replay_buffers": (_S, [_P, POINTER(c_void_p), c_size_t, _P]),
    "crec_exec_capturable": (_S, [_P]),
    "crec_exec_dump_cuda_dot": (_S, [_P, c_char_p]),
    "crec_run_eager": (_S, [_P, POINTER(Bindings), _P]),
    # capture.h
    "crec_capture_begin": (_S, [_P]),
    "crec_capture_end": (_S, [_P, POINTER(c_void_p)]),
    "crec_graph_destroy": (None, [_P]),
    "crec_program_add_graph": (_S, [_P, Handle, c_char_p, _P, POINTER(Operand), c_size_t, POINTER(Handle)]),
    "crec_import_graph": (_S, [POINTER(GraphImport), POINTER(RecordOptions), POINTER(c_void_p)]),
    "crec_capture_import": (
        _S,
        [CAPTURE_FN, c_void_p, _P, POINTER(GraphArgument), c_size_t, POINTER(c_void_p), POINTER(RecordOptions),
         POINTER(c_void_p)],
    ),
    "crec_exec_import_counts": (_S, [_P, POINTER(c_size_t), POINTER(c_size_t), POINTER(c_size_t)]),
    "crec_exec_import_edges": (_S, [_P, POINTER(c_size_t), POINTER(c_size_t)]),
    "crec_exec_import_route": (_S, [_P, c_size_t, POINTER(ImportRoute)]),
    "crec_exec_dump_import_string": (_S, [_P, c_int, POINTER(c_void_p), POINTER(c_size_t)]),
    # debug.h
    "crec_debug_live_objects": (c_int64, []),
}

# ---- loading ---------------------------------------------------------------------------------

_lock = threading.Lock()
_lib: ctypes.CDLL | None = None
_path: str | None = None


def _package_library() -> Path | None:
    """crec/libcrec.so.0 when the package carries its library (an installed wheel)."""
    p = Path(__file__).resolve().parent / SONAME
    return p if p.is_file() else None


def _source_tree_library() -> Path | None:
    """<repo>/build/libcrec.so.0 when this package sits in crec's source tree (python/crec/)."""
    repo = Path(__file__).resolve().parent.parent.parent
    if (repo / "include" / "crec" / "crec.h").is_file() and (repo / "python" / "crec").is_dir():
        return repo / "build" / SONAME
    return None


def candidates() -> list[tuple[str, str]]:
    """The places tried, in order: (what, path or name given to the loader)."""
    env = os.environ.get(LIBRARY_ENV)
    if env:
        p = Path(env)
        if p.is_dir():
            return [(LIBRARY_ENV, str(p / SONAME)), (LIBRARY_ENV, str(p / "libcrec.so"))]
        return [(LIBRARY_ENV, env)]
    found: list[tuple[str, str]] = []
    own = _package_library()
    if own is not None:
        found.append(("the package", str(own)))
    tree = _source_tree_library()
    if tree is not None:
        found.append(("the build tree", str(tree)))
    found.append(("the system loader", SONAME))
    return found


def _declare(lib: ctypes.CDLL) -> None:
    for name, (restype, argtypes) in _PROTOTYPES.items():
        fn = getattr(lib, name)  # AttributeError: a libcrec older than this package
        fn.restype = restype
        fn.argtypes = argtypes


def load() -> ctypes.CDLL:
    """Returns libcrec, loading it on the first call (see the module's doc for where)."""
    global _lib, _path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried: list[str] = []
        for what, path in candidates():
            if os.sep in path and not os.path.exists(path):
                tried.append(f"{what}: {path}: no such file")
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                tried.append(f"{what}: {path}: {e}")
                continue
            try:
                _declare(lib)
            except AttributeError as e:
                tried.append(f"{what}: {path}: not a libcrec this package can use ({e})")
                continue
            _lib, _path = lib, path
            return lib
        hint = (
            f"set {LIBRARY_ENV} to libcrec.so.0 or its folder, build crec in <repo>/build, "
            "install the package with its library (pip install ./python), "
            "or install crec where the loader finds it"
        )
        raise LibraryNotFoundError("cannot load libcrec: " + "; ".join(tried) + f" ({hint})")


def library_path() -> str:
    """The path (or loader name) libcrec was loaded from; loads it first."""
    load()
    assert _path is not None
    return _path


FAST_ENV = "CREC_PYTHON_FAST"
FAST_NAME = "_crec_fast.abi3.so"
_fast: Any = None
_fast_why = ""


def fast() -> Any:
    """The compiled call path of crec.torch (python/src/_crec_fast.c), or None: loaded from
    the folder libcrec came from (the build tree, or the package in a wheel), unless
    CREC_PYTHON_FAST=0. Without it the same checks run in Python; fast_why() says why."""
    global _fast, _fast_why
    if _fast is not None or _fast_why:
        return _fast
    where = library_path()  # (takes _lock itself)
    with _lock:
        if _fast is not None or _fast_why:
            return _fast
        if os.environ.get(FAST_ENV, "1") == "0":
            _fast_why = f"{FAST_ENV}=0"
            return None
        folder = Path(where).resolve().parent if os.sep in where else Path(__file__).resolve().parent
        path = folder / FAST_NAME
        if not path.is_file():
            _fast_why = f"no {path} (built with libcrec where Python's headers are found: python3-dev)"
            return None
        try:
            spec = importlib.util.spec_from_file_location("_crec_fast", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        except (ImportError, OSError) as e:
            _fast_why = f"{path}: {e}"
            return None
        _fast = module
        return module


def fast_why() -> str:
    """Why fast() is None ("" when it is loaded, or not asked for yet)."""
    return _fast_why


# ---- calling ---------------------------------------------------------------------------------


def text(b: bytes | None) -> str:
    return "" if b is None else b.decode("utf-8", "replace")


def last_error() -> str:
    return text(load().crec_last_error())


def error(status: int, fallback: str = "") -> CrecError:
    """The exception for `status`, with the calling thread's crec_last_error()."""
    lib = load()
    message = text(lib.crec_last_error()) or fallback or text(lib.crec_status_string(status))
    return error_class(status)(status, message, text(lib.crec_status_name(status)))


def check(status: int) -> None:
    if status != 0:
        raise error(status)
