"""Recording, replaying and running programs eagerly: ``crec/exec.h``."""

from __future__ import annotations

import ctypes
import math
import os
from collections.abc import Mapping, Sequence
from ctypes import byref, c_void_p
from dataclasses import dataclass
from typing import Any, Literal

from . import _lib
from ._buffers import pointer_of
from ._device import stream_handle
from ._errors import BindingError, Status
from ._program import Program

_SCHEDULES = {"concurrent": 0, "sequential": 1}
_UPDATE_STRATEGIES = {"auto": 0, "per_node": 1, "device": 2, "whole_graph": 3}  # crec_update_strategy
_I32 = (-(2**31), 2**31 - 1)
_I64 = (-(2**63), 2**63 - 1)
_F32_MAX = 3.4028234663852886e38


@dataclass(frozen=True)
class _ArgSpec:
    name: str
    size: int
    dynamic: bool


@dataclass(frozen=True)
class _ScalarSpec:
    name: str
    type: str


class _Signature:
    """What a program binds: its arguments and bound scalars, in binding order."""

    def __init__(self, program: Program) -> None:
        self._setup([_ArgSpec(b.name, b.size, b.dynamic) for b in program.arguments],
                    [_ScalarSpec(s.name, s.type) for s in program.bound_scalars])

    @classmethod
    def of_arguments(cls, args: list[_ArgSpec]) -> _Signature:
        """The signature of an exec whose program is not at hand (an imported graph's):
        its arguments alone."""
        sig = cls.__new__(cls)
        sig._setup(list(args), [])
        return sig

    def _setup(self, args: list[_ArgSpec], scalars: list[_ScalarSpec]) -> None:
        self.args = args
        self.scalars = scalars
        self.binding_array = (_lib.Binding * max(1, len(args)))()
        self.value_array = (_lib.Value * max(1, len(scalars)))()
        # one crec_bindings over those arrays, made once: a replay only refills them
        # (ctypes.cast and the struct cost more than the binding itself)
        self.struct = self._struct(self.binding_array, self.value_array)

    @staticmethod
    def _struct(barr: Any, varr: Any) -> _lib.Bindings:
        b = _lib.Bindings()
        b.struct_size = ctypes.sizeof(_lib.Bindings)
        b.buffers = ctypes.cast(barr, ctypes.POINTER(_lib.Binding))
        b.scalars = ctypes.cast(varr, ctypes.POINTER(_lib.Value))
        return b

    def _ordered(self, given: Any, names: list[str], what: str, call: str) -> list[Any]:
        if type(given) is list or type(given) is tuple:  # the common case, without the ABC checks below
            return list(given)
        if isinstance(given, Mapping):
            unknown = [k for k in given if k not in names]
            missing = [n for n in names if n not in given]
            if unknown or missing:
                parts = []
                if missing:
                    parts.append("missing " + ", ".join(repr(n) for n in missing))
                if unknown:
                    parts.append("no such " + what + " " + ", ".join(repr(n) for n in unknown))
                # the family crec's own count check raises, for buffers and scalars alike
                raise BindingError(
                    Status.ERR_BINDING, f"{call}: {what}s: " + "; ".join(parts) + f" (the program's: {names})"
                )
            return [given[n] for n in names]
        if isinstance(given, (str, bytes)) or not isinstance(given, Sequence):
            raise TypeError(f"{call}: {what}s must be a sequence in binding order or a mapping by name")
        # a wrong count goes to crec, which names it (CREC_ERR_BINDING)
        return list(given)

    def bindings(self, buffers: Any, scalars: Any, call: str = "crec.record") -> tuple[_lib.Bindings, list[Any]]:
        """The crec_bindings for `buffers` and `scalars` (sequences in binding order, or
        mappings by name), and what to keep alive until the call that takes it returns.
        The struct is this signature's own, refilled by each call. Errors name `call`."""
        keep: list[Any] = []
        bufs = self._ordered(buffers, [a.name for a in self.args] if isinstance(buffers, Mapping) else [], "argument", call)
        vals = self._ordered(scalars, [s.name for s in self.scalars] if isinstance(scalars, Mapping) else [], "scalar", call)
        barr = self.binding_array if len(bufs) <= len(self.binding_array) else (_lib.Binding * len(bufs))()
        for i, obj in enumerate(bufs):
            if type(obj) is tuple and len(obj) == 2 and type(obj[0]) is int and type(obj[1]) is int:
                barr[i].ptr = obj[0] or None  # (address, size): what pointer_of gives, without its checks
                barr[i].size = obj[1]
                continue
            spec = self.args[i] if i < len(self.args) else None
            what = f"argument {i}" + (f" ('{spec.name}')" if spec else "")
            ptr, size, alive = pointer_of(obj, what)
            if size is None:
                if spec is None:
                    size = 0
                elif spec.dynamic:
                    raise ValueError(f"{what} has a dynamic size: bind it as (address, size) or an array")
                else:
                    size = spec.size
            barr[i].ptr = ptr or None
            barr[i].size = size
            keep.append(alive)
        varr = self.value_array if len(vals) <= len(self.value_array) else (_lib.Value * len(vals))()
        for i, v in enumerate(vals):
            spec_s = self.scalars[i] if i < len(self.scalars) else None
            _set_value(varr[i], v, spec_s.type if spec_s else "i64",
                       f"{call}: scalar {i}" + (f" ('{spec_s.name}')" if spec_s else ""))
        b = self.struct if barr is self.binding_array and varr is self.value_array else self._struct(barr, varr)
        b.num_buffers = len(bufs)
        b.num_scalars = len(vals)
        keep.extend((barr, varr))
        return b, keep


def _set_value(out: _lib.Value, v: Any, type_name: str, what: str) -> None:
    """Converts `v` to the scalar's type into `out`; errors name the scalar (`what`)."""
    if type_name in ("i32", "i64"):
        if isinstance(v, float) or not hasattr(v, "__index__"):
            raise TypeError(f"{what} is {type_name}: give an int, not {type(v).__name__}")
        n = v.__index__()
        lo, hi = _I32 if type_name == "i32" else _I64
        if not lo <= n <= hi:
            raise OverflowError(f"{what}: {n} does not fit in {type_name}")
        out.u64 = 0
        if type_name == "i32":
            out.i32 = n
        else:
            out.i64 = n
    elif type_name in ("f32", "f64"):
        # a number (int, float, numpy or torch scalar), never a string float() would parse
        if isinstance(v, (str, bytes)) or not (hasattr(v, "__float__") or hasattr(v, "__index__")):
            raise TypeError(f"{what} is {type_name}: give a number, not {type(v).__name__}")
        try:
            x = float(v)
        except (TypeError, ValueError, OverflowError) as e:
            raise TypeError(f"{what} is {type_name}: {v!r} is not a number ({e})") from None
        if type_name == "f32":
            if math.isfinite(x) and abs(x) > _F32_MAX:
                raise OverflowError(f"{what}: {x!r} does not fit in f32 (largest {_F32_MAX!r})")
            out.u64 = 0
            out.f32 = x
        else:
            out.f64 = x
    else:
        raise TypeError(f"{what} has unknown type {type_name!r}")


@dataclass(frozen=True)
class ExecStats:
    """What replays did so far (``crec_exec_stats``; exec.h says what each counts)."""

    nodes: int
    replays: int
    nodes_updated: int
    updates_skipped: int
    per_node_updates: int
    whole_graph_updates: int
    host_function_calls: int
    last_nodes_updated: int
    eager_commands: int
    traced_nodes: int
    trace_captures: int
    trace_hits: int
    trace_misses: int
    trace_recaptures: int
    custom_updates: int
    launches: int
    device_nodes: int
    device_node_updates: int
    device_update_launches: int
    modules_loaded: int
    modules_jit: int
    module_load_us: int
    device_path_host_updates: int
    traced_inline: int
    variants: int
    variant_switches: int
    variant_hits: int
    copied_arguments: int
    captured_replays: int
    programmatic_edges: int


class Exec(_lib.Owned):
    """A recorded execution (``crec_exec *``), owned by this object: made by :func:`record`,
    destroyed once by :meth:`close`, a ``with`` block or garbage collection. Synchronize the
    stream of its last replay before closing it (crec waits for nothing)."""

    program: Program | None
    """The program it was recorded from (None for an imported graph's exec)."""

    def __init__(self, handle: int, signature: _Signature) -> None:
        self._ptr: int | None = handle
        self._sig = signature
        self.program = None
        self._bound: list[Any] = []  # what bind() was given, alive until its launch

    @property
    def _handle(self) -> int:
        if self._ptr is None:
            raise ValueError("the crec exec is closed")
        return self._ptr

    def replay(self, buffers: Any = (), scalars: Any = (), stream: Any = None) -> None:
        """``crec_exec_replay``: updates only the nodes whose bindings changed, then launches on
        `stream` (None: the legacy default stream; an int, a :class:`crec.Stream`, a PyTorch or
        CuPy stream). Returns once launched; the work may still run."""
        b, keep = self._sig.bindings(buffers, scalars, "Exec.replay")
        _lib.check(_lib.load().crec_exec_replay(self._handle, byref(b), stream_handle(stream)))
        self._bound.clear()  # a replay binds every slot anew: what was bound one by one is dropped
        del keep

    def _slot(self, which: int | str, names: list[str], what: str, call: str) -> int:
        if isinstance(which, str):
            if which not in names:
                # as a mapping that names what the program lacks: a BindingError for arguments and scalars alike
                raise BindingError(Status.ERR_BINDING, f"{call}: no {what} {which!r} (the program's: {names})")
            return names.index(which)
        return which.__index__()  # an index out of range goes to crec (CREC_ERR_OUT_OF_RANGE)

    def bind(self, which: int | str, buffer: Any) -> None:
        """``crec_exec_bind_buffer``: binds one argument (by index or name) for the next
        :meth:`launch`; checked now, as :meth:`replay` checks a binding. `buffer` is anything
        :func:`record` takes. The object is kept alive until the launch that uses it."""
        i = self._slot(which, [a.name for a in self._sig.args], "argument", "Exec.bind")
        spec = self._sig.args[i] if 0 <= i < len(self._sig.args) else None
        what = f"argument {i}" + (f" ('{spec.name}')" if spec else "")
        ptr, size, alive = pointer_of(buffer, what)
        if size is None:
            if spec is not None and spec.dynamic:
                raise ValueError(f"{what} has a dynamic size: bind it as (address, size) or an array")
            size = spec.size if spec else 0
        _lib.check(_lib.load().crec_exec_bind_buffer(self._handle, i, ptr or None, size))
        self._bound.append(alive)

    def bind_scalar(self, which: int | str, value: Any) -> None:
        """``crec_exec_bind_scalar``: binds one bound scalar (by index or name) for the next
        :meth:`launch`, converted to its type."""
        names = [s.name for s in self._sig.scalars]
        i = self._slot(which, names, "bound scalar", "Exec.bind_scalar")
        spec = self._sig.scalars[i] if 0 <= i < len(self._sig.scalars) else None
        v = _lib.Value()
        _set_value(v, value, spec.type if spec else "i64",
                   "Exec.bind_scalar: scalar " + str(i) + (f" ('{spec.name}')" if spec else ""))
        _lib.check(_lib.load().crec_exec_bind_scalar(self._handle, i, v))

    def clear_bindings(self) -> None:
        """``crec_exec_clear_bindings``: drops what was bound since the last execution."""
        _lib.check(_lib.load().crec_exec_clear_bindings(self._handle))
        self._bound.clear()

    def launch(self, stream: Any = None) -> None:
        """``crec_exec_launch``: applies what :meth:`bind` and :meth:`bind_scalar` bound since
        the last execution (only the nodes that use a changed slot are updated) and launches on
        `stream`. Nothing bound: the last execution's bindings again."""
        _lib.check(_lib.load().crec_exec_launch(self._handle, stream_handle(stream)))
        self._bound.clear()

    def check(self) -> None:
        """``crec_exec_check``: raises :class:`crec.LoopLimitError` when a finished replay
        stopped a loop at its limit (synchronize the stream first)."""
        _lib.check(_lib.load().crec_exec_check(self._handle))

    @property
    def stats(self) -> ExecStats:
        s = _lib.ExecStats()
        s.struct_size = ctypes.sizeof(s)
        _lib.check(_lib.load().crec_exec_get_stats(self._handle, byref(s)))
        return ExecStats(**{f: int(getattr(s, f)) for f in _lib.EXEC_STATS_FIELDS})

    def dump_cuda_dot(self, path: str | os.PathLike[str]) -> None:
        """Writes the CUDA driver's DOT dump of the graph to `path`."""
        _lib.check(_lib.load().crec_exec_dump_cuda_dot(self._handle, os.fsencode(path)))

    def _destroy(self, ptr: int) -> None:
        _lib.load().crec_exec_destroy(ptr)

    def __repr__(self) -> str:
        return "<crec.Exec closed>" if self._ptr is None else f"<crec.Exec at {self._ptr:#x}>"


def record(
    program: Program,
    buffers: Any = (),
    scalars: Any = (),
    *,
    device: int = 0,
    schedule: Literal["concurrent", "sequential"] = "concurrent",
    whole_update_percent: int = 0,
    legacy_conditionals: bool = False,
    trace_cache_size: int = 16,
    eager_control_flow: bool = False,
    max_loop_iterations: int = 0,
    device_updates: bool = False,
    profile: bool = False,
    update_strategy: Literal["auto", "per_node", "device", "whole_graph"] = "auto",
    trace_child_graphs: bool = False,
    variants: int = 1,
) -> Exec:
    """``crec_record``: records `program` into a CUDA graph with the first execution's
    bindings, and returns the :class:`Exec`. Nothing is launched.

    `buffers` bind the arguments, in order (a sequence) or by name (a mapping); each is
    an address (int: its size is the argument's), an ``(address, size)`` pair, a
    :class:`crec.DeviceBuffer`, an object with ``__cuda_array_interface__``, or DLPack.
    `scalars` bind the bound scalars the same way, converted to each scalar's type.
    The options are ``crec_record_options``' fields: ``profile=True`` lets
    :func:`crec.profile_exec` count the iterations of the program's while loops;
    `update_strategy` is how replays apply what changed (``"auto"``: by crec's cost
    model; ``"device"`` needs ``device_updates=True``); ``trace_child_graphs=True`` keeps
    every traced command (GEMM, FFT, ...) a child graph node instead of inlining its kernels;
    ``variants=N`` (1..16) keeps N executable graphs, each with the bindings it last ran
    with, so that bindings rotating through up to N sets update nothing."""
    sig = _Signature(program)
    b, keep = sig.bindings(buffers, scalars)
    opts = _lib.RecordOptions()
    opts.struct_size = ctypes.sizeof(opts)
    opts.device = device
    opts.schedule = _SCHEDULES[schedule]
    opts.whole_update_percent = whole_update_percent
    opts.legacy_conditionals = int(bool(legacy_conditionals))
    opts.trace_cache_size = trace_cache_size
    opts.eager_control_flow = int(bool(eager_control_flow))
    opts.max_loop_iterations = max_loop_iterations
    opts.device_updates = int(bool(device_updates))
    opts.profile = int(bool(profile))
    if update_strategy not in _UPDATE_STRATEGIES:
        raise ValueError(f"update_strategy {update_strategy!r}: one of {', '.join(_UPDATE_STRATEGIES)}")
    opts.update_strategy = _UPDATE_STRATEGIES[update_strategy]
    opts.trace_child_graphs = int(bool(trace_child_graphs))
    opts.variants = variants
    out = c_void_p()
    _lib.check(_lib.load().crec_record(program._handle, byref(b), byref(opts), byref(out)))
    del keep
    ex = Exec(out.value or 0, sig)
    ex.program = program  # what crec.profile_exec() names the commands of
    return ex


def run_eager(program: Program, buffers: Any = (), scalars: Any = (), stream: Any = None) -> None:
    """``crec_run_eager``: issues the program command by command on `stream`, control flow
    decided on the host. Bindings as :func:`record`'s. Returns once issued."""
    b, keep = _Signature(program).bindings(buffers, scalars, "crec.run_eager")
    _lib.check(_lib.load().crec_run_eager(program._handle, byref(b), stream_handle(stream)))
    del keep
