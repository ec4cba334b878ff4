"""Profiles (``crec/profile.h``, docs/profile.md): measured spans of graph-node runs
become per-command times, loop iterations, the critical path and a timeline."""

from __future__ import annotations

import ctypes
import json
from ctypes import byref, c_double, c_size_t, c_void_p
from dataclasses import dataclass
from typing import Any, Iterable, Literal, Sequence

from . import _lib
from ._program import Program, _index, _open

ProfileFormatName = Literal["text", "json"]
_FORMATS = {"text": 0, "json": 1}
_HOST_PHASES = ("binding_checks", "per_node_updates", "whole_graph_updates", "device_updates", "launch")


@dataclass(frozen=True)
class Span:
    """One run of one graph node in a profiled replay (``crec_profile_span``)."""

    command: int  #: the command's index (as in dumps)
    replay: int
    start_ns: int
    end_ns: int
    iteration: int = -1  #: inside a while loop: the innermost loop's iteration; else -1


@dataclass(frozen=True)
class Spread:
    min: float
    p50: float
    max: float


@dataclass(frozen=True)
class CommandTimes:
    """What a profile says of one command (``crec_profile_command``)."""

    ran: bool
    device_us: Spread
    start_us: float
    nodes: int
    concurrent: int
    is_loop: bool
    iterations: Spread | None  #: while loops only
    per_iteration_us: float | None
    critical: bool


@dataclass(frozen=True)
class ProfileSummary:
    """``crec_profile_summary``; `critical_path` holds command indices in dependency order."""

    replays: int
    median_replay: int
    span_us: float
    idle_us: float
    critical_us: float
    critical_path: list[int]
    timeline_spans: int


def _spread(s: _lib.ProfileSpread) -> Spread:
    return Spread(float(s.min), float(s.p50), float(s.max))


def _doubles(values: Sequence[float] | None) -> tuple[Any, int]:
    if values is None:
        return None, 0
    arr = (c_double * len(values))(*values)
    return arr, len(values)


class Profile(_lib.Owned):
    """A profile (``crec_profile *``), owned by this object; closed with :meth:`close`,
    a ``with`` block, garbage collection, or when its program closes (C needs the
    program to outlive it). Made by :func:`profile`."""

    program: Program

    def __init__(self, program: Program, handle: int) -> None:
        self.program = program
        self._ptr: int | None = handle

    def _destroy(self, ptr: int) -> None:
        _lib.load().crec_profile_destroy(ptr)

    @property
    def _handle(self) -> int:
        return _open(self._ptr, "profile")

    def command(self, index: int) -> CommandTimes:
        """What the profile says of command `index`."""
        lib = _lib.load()
        h = lib.crec_program_command(self.program._handle, index)
        info = _lib.ProfileCommand()
        info.struct_size = ctypes.sizeof(_lib.ProfileCommand)
        _lib.check(lib.crec_profile_get_command(self._handle, h, byref(info)))
        loop = bool(info.is_loop)
        return CommandTimes(
            ran=bool(info.ran),
            device_us=_spread(info.device_us),
            start_us=float(info.start_us),
            nodes=int(info.nodes),
            concurrent=int(info.concurrent),
            is_loop=loop,
            iterations=_spread(info.iterations) if loop else None,
            per_iteration_us=float(info.per_iteration_us) if loop else None,
            critical=bool(info.critical),
        )

    @property
    def summary(self) -> ProfileSummary:
        s = _lib.ProfileSummary()
        s.struct_size = ctypes.sizeof(_lib.ProfileSummary)
        _lib.check(_lib.load().crec_profile_get_summary(self._handle, byref(s)))
        return ProfileSummary(
            replays=int(s.replays),
            median_replay=int(s.median_replay),
            span_us=float(s.span_us),
            idle_us=float(s.idle_us),
            critical_us=float(s.critical_us),
            critical_path=[_index(s.critical_path[i].id) or 0 for i in range(s.critical_length)],
            timeline_spans=int(s.timeline_spans),
        )

    def dump(self, format: ProfileFormatName = "text") -> str:
        """``crec_profile_dump``: the table, or the JSON of docs/profile.schema.json (as text)."""
        if format not in _FORMATS:
            raise ValueError(f"format must be one of {sorted(_FORMATS)}, not {format!r}")
        lib = _lib.load()
        out = c_void_p()
        n = c_size_t()
        _lib.check(lib.crec_profile_dump(self._handle, _FORMATS[format], byref(out), byref(n)))
        try:
            return ctypes.string_at(out, n.value).decode("utf-8")
        finally:
            lib.crec_free(out)

    def dump_json(self) -> dict[str, Any]:
        """The JSON parsed into Python objects."""
        result: dict[str, Any] = json.loads(self.dump("json"))
        return result


def profile(
    program: Program,
    spans: Iterable[Span],
    replays: int,
    *,
    name: str | None = None,
    entry: str | None = None,
    device: str | None = None,
    replay_us: Sequence[float] | None = None,
    profiled_us: Sequence[float] | None = None,
    host_us: dict[str, float] | None = None,
) -> Profile:
    """``crec_profile_create``: the profile of `replays` replays of `program` from the
    measured `spans`. `replay_us` and `profiled_us` are each replay's wall time
    without and with the profiler; `host_us` the host side of a replay by phase
    (keys: binding_checks, per_node_updates, whole_graph_updates, device_updates,
    launch)."""
    lib = _lib.load()
    p = program._handle
    spans = list(spans)
    arr = (_lib.ProfileSpan * max(len(spans), 1))()
    for i, s in enumerate(spans):
        arr[i] = _lib.ProfileSpan(lib.crec_program_command(p, s.command), s.replay, s.iteration, s.start_ns, s.end_ns)
    opts = _lib.ProfileOptions()
    opts.struct_size = ctypes.sizeof(_lib.ProfileOptions)
    opts.program = name.encode() if name is not None else None
    opts.entry = entry.encode() if entry is not None else None
    opts.device = device.encode() if device is not None else None
    plain, opts.num_replay_us = _doubles(replay_us)
    profiled, opts.num_profiled_us = _doubles(profiled_us)
    opts.replay_us = plain
    opts.profiled_us = profiled
    host = dict(host_us or {})
    unknown = set(host) - set(_HOST_PHASES)
    if unknown:
        raise ValueError(f"host_us: unknown phases {sorted(unknown)} (known: {', '.join(_HOST_PHASES)})")
    for phase in _HOST_PHASES:
        setattr(opts, f"host_{phase}_us", float(host.get(phase, -1.0)))
    out = c_void_p()
    _lib.check(lib.crec_profile_create(p, arr, len(spans), replays, byref(opts), byref(out)))
    prof = Profile(program, out.value or 0)
    program._plans.add(prof)  # closed before the program, as its plans are
    return prof


def profile_exec(
    exec: Any,
    buffers: Any = (),
    scalars: Any = (),
    *,
    stream: Any = None,
    iters: int = 20,
    name: str | None = None,
    entry: str | None = None,
    device: str | None = None,
) -> Profile:
    """``crec_exec_profile``: replays `exec` (a :class:`crec.Exec` from :func:`crec.record`)
    with the bindings `buffers` and `scalars` (as :meth:`crec.Exec.replay` takes them) on
    `stream`: once to warm up, `iters` times plainly and `iters` times under CUPTI, and
    returns the :class:`Profile` of the profiled ones, each activity record attributed to
    its command. Needs a device and CUPTI (``libcupti.so.13``); raises
    :class:`crec.UnsupportedError` naming what is missing, and for an exec with a while
    loop that was not recorded with ``profile=True``."""
    from ._device import stream_handle

    program = getattr(exec, "program", None)
    if not isinstance(program, Program):
        raise TypeError("exec: a crec.Exec from crec.record() is needed (it knows its program)")
    if not 1 <= iters < 2**32:
        raise ValueError(f"iters is {iters}: give 1 to 2**32 - 1 replays")
    b, keep = exec._sig.bindings(buffers, scalars, "crec.profile_exec")
    opts = _lib.ProfileOptions()
    opts.struct_size = ctypes.sizeof(_lib.ProfileOptions)
    opts.program = name.encode() if name is not None else None
    opts.entry = entry.encode() if entry is not None else None
    opts.device = device.encode() if device is not None else None
    for phase in _HOST_PHASES:
        setattr(opts, f"host_{phase}_us", -1.0)
    out = c_void_p()
    lib = _lib.load()
    _lib.check(lib.crec_exec_profile(exec._handle, byref(b), stream_handle(stream), iters, byref(opts), byref(out)))
    exec._bound.clear()  # its replays bound every slot anew, as Exec.replay does
    del keep
    prof = Profile(program, out.value or 0)
    program._plans.add(prof)
    return prof
