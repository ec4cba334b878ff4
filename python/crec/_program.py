"""Programs: lowering MLIR, reading a program back, plans, dumps and program files."""

from __future__ import annotations

import ctypes
import json
import os
import weakref
from ctypes import byref, c_int, c_size_t, c_uint64, c_void_p
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Iterator, Literal, TypeVar, Union

from . import _lib
from ._errors import CrecError, Status

_I = TypeVar("_I", bound=ctypes.Structure)

#: A launch dimension: a fixed value, or the name of the scalar it is taken from.
DimValue = Union[int, str]

DumpFormatName = Literal["text", "json", "dot"]
_DUMP_FORMATS = {"text": 0, "json": 1, "dot": 2}
_SCHEDULES = {"concurrent": 0, "sequential": 1}
_ACCESS_NAMES = {1: "read", 2: "write", 3: "read-write"}
_MEMORY_NAMES = {0: "device", 1: "host"}
_ARG_KINDS = {0: "buffer", 1: "scalar", 2: "immediate"}
_SCALAR_KINDS = {0: "bound", 1: "derived", 2: "size"}


def _name(fn: Any, value: int) -> str:
    return _lib.text(fn(value))


def _open(ptr: int | None, what: str) -> int:
    """The address of an owned C object, or ``ValueError`` once it is closed."""
    if ptr is None:
        raise ValueError(f"the crec {what} is closed")
    return ptr


def _index(handle_id: int) -> int | None:
    """A handle's position in its table (the id dumps use); None for the invalid handle 0."""
    return None if handle_id == 0 else int(_lib.load().crec_handle_index(handle_id))


# ---- what a program holds, as plain Python values -----------------------------------------------


@dataclass(frozen=True)
class Diagnostic:
    """One MLIR diagnostic reported during a lowering."""

    severity: str  #: "error", "warning", "note" or "remark"
    location: str  #: "file:line:col", or "" when unknown
    message: str


@dataclass(frozen=True)
class Range:
    """A byte range of a buffer: ``size`` is None where it runs to the end of its buffer."""

    buffer: int  #: the buffer's index in :attr:`Program.buffers`
    buffer_name: str
    offset: int
    size: int | None


@dataclass(frozen=True)
class Buffer:
    """A buffer of the program (``crec_buffer_info``)."""

    index: int
    name: str
    kind: str  #: "argument", "temporary" or "constant"
    memory: str  #: "device" or "host" (arguments only; the others are device memory)
    size: int  #: bytes (the minimum, for a dynamic-size argument)
    alignment: int  #: alignment a bound pointer needs (arguments)
    dynamic: bool
    element: str  #: "f32", "i32", ..., "bytes"
    argument_index: int | None  #: the binding index, for arguments
    data: bytes | None  #: constants: their bytes


@dataclass(frozen=True)
class Scalar:
    """A scalar of the program (``crec_scalar_info``)."""

    index: int
    name: str
    type: str  #: "i32", "i64", "f32" or "f64"
    kind: str  #: "bound", "derived" or "size"
    binding_index: int | None  #: bound scalars: the position among the bound scalars
    buffer: int | None  #: size scalars: the index of the argument measured


@dataclass(frozen=True)
class HostFunction:
    """A host function deriving scalars (``crec_host_function_info``); scalars by index."""

    index: int
    name: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True)
class Module:
    """A module image (``crec_module_info``)."""

    index: int
    name: str
    format: str  #: "ptx", "cubin" or "fatbin"
    size: int  #: bytes of the image
    image: bytes = field(repr=False)


@dataclass(frozen=True)
class Kernel:
    """A kernel: an entry of a module (``crec_kernel_info``)."""

    index: int
    module: int  #: the module's index
    entry: str
    shared_bytes: int
    cluster: tuple[int, int, int]


@dataclass(frozen=True)
class Region:
    """A region: the program body, or a region of a control-flow command."""

    index: int
    role: str  #: "program", "body", "cond", "then", "else" or "branch"
    parent: int | None  #: the command owning it (None for the program body)
    index_in_parent: int
    commands: tuple[int, ...]  #: its commands' indices, in program order


@dataclass(frozen=True)
class Arg:
    """An argument of a launch (``crec_arg``)."""

    kind: str  #: "buffer", "scalar" or "immediate"
    access: str | None = None  #: buffers: "read", "write" or "read-write"
    range: Range | None = None  #: buffers
    scalar: int | None = None  #: scalars: the scalar's index
    type: str | None = None  #: immediates: "i32", "i64", "f32", "f64", or None for bytes
    value: int | float | bytes | None = None  #: immediates


@dataclass(frozen=True)
class Operand:
    """A buffer range a library command touches, and how."""

    range: Range
    access: str


@dataclass(frozen=True)
class Command:
    """A command (``crec_command_info``); fields its kind does not use are None or empty."""

    index: int
    kind: str  #: "launch", "memcpy", "memset", "barrier", "while", "if", "switch", "gemm", ...
    name: str
    region: int
    index_in_region: int
    kernel: int | None = None
    grid: tuple[DimValue, DimValue, DimValue] | None = None
    block: tuple[DimValue, DimValue, DimValue] | None = None
    shared_bytes: DimValue | None = None
    args: tuple[Arg, ...] = ()
    dst: Range | None = None
    src: Range | None = None
    bytes: int | None = None  #: memcpy, memset
    memset_value: int | None = None
    memset_element_size: int | None = None
    predicate: Range | None = None  #: while, if (predicate) and switch (index)
    regions: tuple[int, ...] = ()  #: control flow: the regions it owns
    case_values: tuple[int, ...] | None = None  #: a switch with a case table
    loop_limit: int | None = None  #: while: its own iteration limit (0: none set)
    operands: tuple[Operand, ...] = ()  #: library commands
    start: int | None = None  #: a collective's done: the start it finishes
    workspace: int | None = None  #: gemm: its workspace temporary; barrier across ranks: its scratch
    early_start: bool = False  #: launch: CREC_LAUNCH_EARLY_START (it may start as the launches before it drain)


@dataclass(frozen=True)
class ProgramWarning:
    """A warning of ``crec_program_validate()`` (a read of bytes nothing wrote before)."""

    command: int
    range: Range
    access: str
    message: str


# ---- the program --------------------------------------------------------------------------------


class Program(_lib.Owned):
    """A crec program (``crec_program *``), owned by this object.

    Made by :func:`lower_file`, :func:`lower_string` or :meth:`deserialize`.
    :meth:`close` (or leaving a ``with`` block, or garbage collection) destroys it
    once; plans and profiles made from it are closed first (C requires the program
    to outlive them). Execs recorded from it keep what they need in C and stay valid after
    the program is closed. Reading it after :meth:`close` raises ``ValueError``.
    """

    diagnostics: list[Diagnostic]

    def __init__(self, _handle: int, diagnostics: list[Diagnostic] | None = None) -> None:
        # Only this package makes programs: the handle is a fresh crec_program * we own.
        self._ptr: int | None = _handle
        self.diagnostics = diagnostics or []
        self._plans: weakref.WeakSet[_lib.Owned] = weakref.WeakSet()  # its plans and profiles

    # life cycle

    def _destroy(self, ptr: int) -> None:
        # its plans and profiles first: C needs the program to outlive them
        for plan in list(self._plans):
            plan.close()
        _lib.load().crec_program_destroy(ptr)

    @property
    def _handle(self) -> int:
        return _open(self._ptr, "program")

    def __repr__(self) -> str:
        if self._ptr is None:
            return "<crec.Program closed>"
        counts = [(len(self.commands), "command"), (len(self.buffers), "buffer"), (len(self.scalars), "scalar"),
                  (len(self.kernels), "kernel")]
        return "<crec.Program: " + ", ".join(f"{n} {w}{'' if n == 1 else 's'}" for n, w in counts) + ">"

    # reading it back

    def _range(self, r: _lib.Range) -> Range | None:
        if r.buffer.id == 0:
            return None
        b = self._buffer(r.buffer)
        size = None if r.size == 0xFFFFFFFFFFFFFFFF else int(r.size)
        return Range(b.index, b.name, int(r.offset), size)

    def _buffer(self, h: _lib.Handle) -> Buffer:
        lib = _lib.load()
        info = _lib.BufferInfo()
        _lib.check(lib.crec_buffer_get_info(self._handle, h, byref(info)))
        kind = _name(lib.crec_buffer_kind_name, info.kind)
        data = None
        if kind == "constant" and info.data:
            data = ctypes.string_at(info.data, info.size)
        return Buffer(
            index=_index(h.id) or 0,
            name=_lib.text(info.name),
            kind=kind,
            memory=_MEMORY_NAMES.get(info.memory, "unknown"),
            size=int(info.size),
            alignment=int(info.alignment),
            dynamic=bool(info.dynamic_size),
            element=_name(lib.crec_element_name, info.element),
            argument_index=int(info.argument_index) if kind == "argument" else None,
            data=data,
        )

    def _scalar(self, h: _lib.Handle) -> Scalar:
        lib = _lib.load()
        info = _lib.ScalarInfo()
        _lib.check(lib.crec_scalar_get_info(self._handle, h, byref(info)))
        kind = _SCALAR_KINDS.get(info.kind, "unknown")
        return Scalar(
            index=_index(h.id) or 0,
            name=_lib.text(info.name),
            type=_name(lib.crec_type_name, info.type),
            kind=kind,
            binding_index=int(info.binding_index) if kind == "bound" else None,
            buffer=_index(info.buffer.id) if kind == "size" else None,
        )

    def _handles(self, what: str) -> list[_lib.Handle]:
        """The handles ``crec_program_{what}(p, i)`` gives for i below
        ``crec_program_{what}_count(p)`` ("buffer", "argument", "command", ...)."""
        lib = _lib.load()
        p = self._handle
        at = getattr(lib, f"crec_program_{what}")
        return [at(p, i) for i in range(getattr(lib, f"crec_program_{what}_count")(p))]

    def _infos(self, what: str, info_type: type[_I]) -> Iterator[tuple[int, _I]]:
        """(index, info) of each entry ``crec_program_get_{what}(p, i, &info)`` reads
        ("host_function", "warning")."""
        lib = _lib.load()
        p = self._handle
        get = getattr(lib, f"crec_program_get_{what}")
        for i in range(getattr(lib, f"crec_program_{what}_count")(p)):
            info = info_type()
            _lib.check(get(p, i, byref(info)))
            yield i, info

    @property
    def buffers(self) -> list[Buffer]:
        """Every buffer, in creation order."""
        return [self._buffer(h) for h in self._handles("buffer")]

    @property
    def arguments(self) -> list[Buffer]:
        """The argument buffers, in binding order."""
        return [self._buffer(h) for h in self._handles("argument")]

    @property
    def scalars(self) -> list[Scalar]:
        """Every scalar (bound, derived, size), in creation order."""
        return [self._scalar(h) for h in self._handles("scalar")]

    @property
    def bound_scalars(self) -> list[Scalar]:
        """The scalars bound at each execution, in binding order."""
        return [self._scalar(h) for h in self._handles("bound_scalar")]

    def find_buffer(self, name: str) -> Buffer:
        """The buffer called `name` (:class:`crec.NotFoundError` when there is none)."""
        h = _lib.Handle()
        _lib.check(_lib.load().crec_program_find_buffer(self._handle, name.encode(), byref(h)))
        return self._buffer(h)

    def find_scalar(self, name: str) -> Scalar:
        """The scalar called `name` (:class:`crec.NotFoundError` when there is none)."""
        h = _lib.Handle()
        _lib.check(_lib.load().crec_program_find_scalar(self._handle, name.encode(), byref(h)))
        return self._scalar(h)

    @property
    def host_functions(self) -> list[HostFunction]:
        return [
            HostFunction(
                index=i,
                name=_lib.text(info.name),
                inputs=tuple(_index(info.inputs[j].id) or 0 for j in range(info.num_inputs)),
                outputs=tuple(_index(info.outputs[j].id) or 0 for j in range(info.num_outputs)),
            )
            for i, info in self._infos("host_function", _lib.HostFunctionInfo)
        ]

    def _table(self, what: str, info_type: type[_I]) -> Iterator[tuple[int, _lib.Handle, _I]]:
        """(position, handle, info) of each entry of table `what` ("module",
        "kernel", "region"), in creation order."""
        lib = _lib.load()
        p = self._handle
        get = getattr(lib, f"crec_{what}_get_info")
        for i, h in enumerate(self._handles(what)):
            info = info_type()
            _lib.check(get(p, h, byref(info)))
            yield i, h, info

    @property
    def modules(self) -> list[Module]:
        lib = _lib.load()
        return [
            Module(
                index=i,
                name=_lib.text(info.name),
                format=_name(lib.crec_image_format_name, info.format),
                size=int(info.size),
                image=ctypes.string_at(info.image, info.size) if info.image else b"",
            )
            for i, _, info in self._table("module", _lib.ModuleInfo)
        ]

    @property
    def kernels(self) -> list[Kernel]:
        return [
            Kernel(
                index=i,
                module=_index(info.module.id) or 0,
                entry=_lib.text(info.entry),
                shared_bytes=int(info.shared_bytes),
                cluster=(int(info.cluster[0]), int(info.cluster[1]), int(info.cluster[2])),
            )
            for i, _, info in self._table("kernel", _lib.KernelInfo)
        ]

    @property
    def regions(self) -> list[Region]:
        lib = _lib.load()
        p = self._handle
        return [
            Region(
                index=i,
                role=_name(lib.crec_region_role_name, info.role),
                parent=_index(info.parent.id),
                index_in_parent=int(info.index_in_parent),
                commands=tuple(_index(lib.crec_region_command(p, h, j).id) or 0 for j in range(info.num_commands)),
            )
            for i, h, info in self._table("region", _lib.RegionInfo)
        ]

    def _dim(self, d: _lib.Dim) -> DimValue:
        if d.scalar.id == 0:
            return int(d.value)
        return self._scalar(d.scalar).name

    def _arg(self, a: _lib.Arg) -> Arg:
        lib = _lib.load()
        kind = _ARG_KINDS.get(a.kind, "unknown")
        if kind == "buffer":
            return Arg(kind, access=_ACCESS_NAMES.get(a.access), range=self._range(a.range))
        if kind == "scalar":
            return Arg(kind, scalar=_index(a.scalar.id))
        if kind == "immediate":
            t = None if a.type < 0 else _name(lib.crec_type_name, a.type)
            raw = ctypes.string_at(a.data, a.size) if a.data else bytes(a.value.bytes)[: a.size]
            value: int | float | bytes = raw
            if t == "i32":
                value = int(a.value.i32) if not a.data else int.from_bytes(raw[:4], "little", signed=True)
            elif t == "i64":
                value = int(a.value.i64) if not a.data else int.from_bytes(raw[:8], "little", signed=True)
            elif t == "f32" and not a.data:
                value = float(a.value.f32)
            elif t == "f64" and not a.data:
                value = float(a.value.f64)
            return Arg(kind, type=t, value=value)
        return Arg(kind)

    def _command(self, h: _lib.Handle) -> Command:
        lib = _lib.load()
        p = self._handle
        info = _lib.CommandInfo()
        info.struct_size = ctypes.sizeof(_lib.CommandInfo)
        _lib.check(lib.crec_command_get_info(p, h, byref(info)))
        kind = _name(lib.crec_command_kind_name, info.kind)
        fields: dict[str, Any] = {}
        if kind == "launch":
            args = []
            for j in range(info.num_args):
                a = _lib.Arg()
                _lib.check(lib.crec_command_get_arg(p, h, j, byref(a)))
                args.append(self._arg(a))
            fields.update(
                kernel=_index(info.kernel.id),
                grid=tuple(self._dim(info.grid[k]) for k in range(3)),
                block=tuple(self._dim(info.block[k]) for k in range(3)),
                shared_bytes=self._dim(info.shared_bytes),
                args=tuple(args),
                early_start=bool(info.launch_flags & 1),
            )
        if kind in ("memcpy", "memset"):
            fields.update(dst=self._range(info.dst), bytes=int(info.bytes))
        if kind == "memcpy":
            fields.update(src=self._range(info.src))
        if kind == "memset":
            fields.update(memset_value=int(info.memset_value), memset_element_size=int(info.memset_element_size))
        if kind in ("while", "if", "switch"):
            fields.update(
                predicate=self._range(info.predicate),
                regions=tuple(
                    _index(lib.crec_command_region(p, h, j).id) or 0 for j in range(info.num_regions)
                ),
            )
            if info.case_values:
                fields.update(case_values=tuple(int(info.case_values[j]) for j in range(info.num_regions - 1)))
        if kind == "while":
            limit = c_uint64()
            _lib.check(lib.crec_program_get_loop_limit(p, h, byref(limit)))
            fields.update(loop_limit=int(limit.value))
        if info.num_operands:
            ops = []
            for j in range(info.num_operands):
                r = _lib.Range()
                acc = c_int()
                _lib.check(lib.crec_command_get_operand(p, h, j, byref(r), byref(acc)))
                rng = self._range(r)
                assert rng is not None
                ops.append(Operand(rng, _ACCESS_NAMES.get(acc.value, "unknown")))
            fields.update(operands=tuple(ops))
        if info.start.id:
            fields.update(start=_index(info.start.id))
        if info.workspace.id:
            fields.update(workspace=_index(info.workspace.id))
        return Command(
            index=_index(h.id) or 0,
            kind=kind,
            name=_lib.text(info.name),
            region=_index(info.region.id) or 0,
            index_in_region=int(info.index_in_region),
            **fields,
        )

    @property
    def commands(self) -> list[Command]:
        """Every command, in creation order (the ids of dumps)."""
        return [self._command(h) for h in self._handles("command")]

    def walk(self, region: int = 0) -> Iterator[Command]:
        """The commands of `region` (default: the program body) in program order, depth first."""
        regions = self.regions
        commands = self.commands

        def visit(r: int) -> Iterator[Command]:
            for c in regions[r].commands:
                yield commands[c]
                for sub in commands[c].regions:
                    yield from visit(sub)

        yield from visit(region)

    @property
    def warnings(self) -> list[ProgramWarning]:
        """What ``crec_program_validate()`` found (lowering validates; call :meth:`validate`
        after changes)."""
        out = []
        for _, info in self._infos("warning", _lib.WarningInfo):
            rng = self._range(info.range)
            assert rng is not None
            out.append(
                ProgramWarning(
                    command=_index(info.command.id) or 0,
                    range=rng,
                    access=_ACCESS_NAMES.get(info.access, "unknown"),
                    message=_lib.text(info.message),
                )
            )
        return out

    # building

    def add_graph(self, imported: Any, operands: Sequence[Any], region: int = 0, name: str | None = None) -> int:
        """``crec_program_add_graph``: appends imported graph `imported` (an
        :class:`crec.ImportedExec`, or a ``crec.torch.graph`` result's ``exec``) to region
        `region` (an index into :attr:`regions`; 0 is the body) as a command, and returns its
        index. `operands` gives, per argument of the import in its order, the program buffer
        it reads and writes: a buffer name, an index, a :class:`Buffer`, or a pair of one of
        those and an access (``"read"``, ``"write"``, ``"read_write"``, the default), the whole
        buffer each time. The program then holds the imported exec (closing the Python object
        leaves it to the program); what the captured work uses besides its arguments (a
        ``crec.torch.graph`` result's capture pool, its examples) must stay alive as long as
        the program and its execs: keep that object. Raises as the C call returns."""
        lib = _lib.load()
        p = self._handle
        if getattr(imported, "_handle", None) is None:
            raise TypeError(f"imported: an imported exec is needed (crec.import_graph, crec.capture_import, "
                            f"crec.torch.graph(...).exec), not {type(imported).__name__}")
        if not isinstance(operands, Sequence) or isinstance(operands, (str, bytes)):
            raise TypeError("operands must be a sequence: one buffer per argument of the import")
        ops = (_lib.Operand * max(1, len(operands)))()
        accesses = {"read": _lib.ACCESS_READ, "write": _lib.ACCESS_WRITE, "read_write": _lib.ACCESS_READ_WRITE}
        for i, o in enumerate(operands):
            which, access = (o if isinstance(o, tuple) else (o, "read_write"))
            if access not in accesses:
                raise ValueError(f"operand {i}: access {access!r}, one of {', '.join(accesses)}")
            if isinstance(which, Buffer):
                which = which.index
            if isinstance(which, str):
                h = _lib.Handle()
                _lib.check(lib.crec_program_find_buffer(p, which.encode(), byref(h)))
            else:
                h = lib.crec_program_buffer(p, which.__index__())
            ops[i].range = _lib.Range(h, 0, 0xFFFFFFFFFFFFFFFF)  # CREC_WHOLE: the whole buffer
            ops[i].access = accesses[access]
        regions = self._handles("region")
        if not 0 <= region < len(regions):
            raise IndexError(f"region {region}: the program has {len(regions)} regions")
        out = _lib.Handle()
        _lib.check(lib.crec_program_add_graph(p, regions[region], name.encode() if name else None,
                                              imported._handle, ops, len(operands), byref(out)))
        return _index(out.id) or 0

    def validate(self) -> None:
        """Checks that the program is complete (raises :class:`crec.InvalidProgramError`)."""
        _lib.check(_lib.load().crec_program_validate(self._handle))

    # plans and dumps

    def plan(self, schedule: Literal["concurrent", "sequential"] = "concurrent", arena_alignment: int = 256) -> Plan:
        """Plans the program: dependencies and the temporary arena (``crec_plan_create``)."""
        opts = _lib.PlanOptions(ctypes.sizeof(_lib.PlanOptions), _SCHEDULES[schedule], arena_alignment)
        out = c_void_p()
        _lib.check(_lib.load().crec_plan_create(self._handle, byref(opts), byref(out)))
        plan = Plan(self, out.value or 0)
        self._plans.add(plan)
        return plan

    def dump(self, format: DumpFormatName = "text", plan: Plan | None = None) -> str:
        """``crec_dump``: the text summary, the JSON object (as text) or Graphviz DOT.

        Dependencies come from `plan` (default: a plan with default options)."""
        if format not in _DUMP_FORMATS:
            raise ValueError(f"format must be one of {sorted(_DUMP_FORMATS)}, not {format!r}")
        if plan is not None and plan.program is not self:
            raise ValueError("the plan is of another program")
        lib = _lib.load()
        out = c_void_p()
        n = c_size_t()
        _lib.check(lib.crec_dump(self._handle, plan._handle if plan else None, _DUMP_FORMATS[format], byref(out), byref(n)))
        try:
            return ctypes.string_at(out, n.value).decode("utf-8")
        finally:
            lib.crec_free(out)

    def dump_json(self, plan: Plan | None = None) -> dict[str, Any]:
        """The JSON dump parsed into Python objects (the schema is in ``crec/dump.h``)."""
        result: dict[str, Any] = json.loads(self.dump("json", plan))
        return result

    # program files

    def serialize(self) -> bytes:
        """``crec_program_serialize``: the program as a program file's bytes."""
        lib = _lib.load()
        out = c_void_p()
        n = c_size_t()
        _lib.check(lib.crec_program_serialize(self._handle, byref(out), byref(n)))
        try:
            return ctypes.string_at(out, n.value)
        finally:
            lib.crec_free(out)

    @classmethod
    def deserialize(cls, data: bytes) -> Program:
        """``crec_program_deserialize``: the program a program file's bytes hold."""
        out = c_void_p()
        buf = ctypes.create_string_buffer(bytes(data), len(data))
        _lib.check(_lib.load().crec_program_deserialize(buf, len(data), byref(out)))
        return cls(out.value or 0)

    # running it

    def record(self, buffers: Any = (), scalars: Any = (), **options: Any) -> Any:
        """Records the program: the same as :func:`crec.record` (self, buffers, scalars, ...)."""
        from ._exec import record

        return record(self, buffers, scalars, **options)

    def run_eager(self, buffers: Any = (), scalars: Any = (), stream: Any = None) -> None:
        """Runs the program eagerly: the same as :func:`crec.run_eager` (self, ...)."""
        from ._exec import run_eager

        run_eager(self, buffers, scalars, stream)


class Plan(_lib.Owned):
    """A plan of one program (``crec_plan *``), owned by this object; closed with
    :meth:`close`, a ``with`` block, garbage collection, or when its program closes."""

    program: Program

    def __init__(self, program: Program, handle: int) -> None:
        self.program = program
        self._ptr: int | None = handle

    def _destroy(self, ptr: int) -> None:
        _lib.load().crec_plan_destroy(ptr)

    @property
    def _handle(self) -> int:
        return _open(self._ptr, "plan")

    def deps(self, command: int | Command) -> list[int]:
        """The commands `command` (an index or a :class:`Command` of the program) waits
        for, as indices, after transitive reduction."""
        lib = _lib.load()
        p = self.program._handle
        i = _position(command, Command, "command", "Plan.deps", "an index")
        h = lib.crec_program_command(p, i)
        if h.id == 0:
            raise IndexError(f"Plan.deps: command index {i} is out of range (the program has "
                             f"{lib.crec_program_command_count(p)} commands)")
        if isinstance(command, Command):
            _check_own(self.program._command(h).name, command, "Plan.deps")
        deps = ctypes.POINTER(_lib.Handle)()
        n = c_size_t()
        _lib.check(lib.crec_plan_get_deps(self._handle, h, byref(deps), byref(n)))
        return [_index(deps[i].id) or 0 for i in range(n.value)]

    @property
    def arena_bytes(self) -> int:
        """Bytes the temporary arena needs."""
        return int(_lib.load().crec_plan_arena_bytes(self._handle))

    def temporary_offset(self, buffer: int | str | Buffer) -> int:
        """The arena offset of temporary `buffer` (an index, a name, or a :class:`Buffer`
        of the program)."""
        lib = _lib.load()
        off = c_uint64()
        _lib.check(lib.crec_plan_get_temporary(self._handle, self._buffer(buffer, "Plan.temporary_offset"), byref(off)))
        return int(off.value)

    def lifetime(self, buffer: int | str | Buffer) -> tuple[int, int]:
        """(first, last) top-level command positions using temporary `buffer` (an index, a
        name, or a :class:`Buffer` of the program); first > last: unused."""
        lib = _lib.load()
        first, last = c_size_t(), c_size_t()
        _lib.check(lib.crec_plan_get_lifetime(self._handle, self._buffer(buffer, "Plan.lifetime"), byref(first),
                                              byref(last)))
        return int(first.value), int(last.value)

    def _buffer(self, buffer: int | str | Buffer, call: str) -> _lib.Handle:
        lib = _lib.load()
        p = self.program._handle
        if isinstance(buffer, str):
            found = _lib.Handle()
            _lib.check(lib.crec_program_find_buffer(p, buffer.encode(), byref(found)))
            return found
        i = _position(buffer, Buffer, "buffer", call, "an index, a name")
        h: _lib.Handle = lib.crec_program_buffer(p, i)
        if h.id == 0:
            raise IndexError(f"{call}: buffer index {i} is out of range (the program has "
                             f"{lib.crec_program_buffer_count(p)} buffers)")
        if isinstance(buffer, Buffer):
            _check_own(self.program._buffer(h).name, buffer, call)
        return h


def _position(x: Any, cls: type, what: str, call: str, forms: str) -> int:
    """The index `x` gives: an int, or a `cls` (:class:`Buffer`, :class:`Command`) read
    back from a program; anything else is a TypeError naming `call` and the `forms` it takes."""
    if isinstance(x, cls):
        return int(x.index)
    if isinstance(x, bool) or not hasattr(x, "__index__"):
        raise TypeError(f"{call}: {what} must be {forms} or a crec.{cls.__name__}, not {type(x).__name__}")
    i = int(x.__index__())
    if i < 0:
        raise IndexError(f"{call}: {what} index {i} is negative")
    return i


def _check_own(name: str | None, x: Any, call: str) -> None:
    """Refuses a Buffer or Command read back from another program: its index here names
    something else."""
    if name != x.name:
        raise ValueError(f"{call}: {type(x).__name__.lower()} {x.index} ({x.name!r}) is not of this plan's program"
                         + (f" (its {type(x).__name__.lower()} {x.index} is {name!r})" if name is not None else ""))


# ---- lowering -----------------------------------------------------------------------------------


def _lower(
    call: Any,
    entry: str | None,
    chip: str | None,
    filename: str | None,
    base_dir: str | os.PathLike[str] | None,
    cubin: bool = False,
    early_start: bool = False,
) -> Program:
    lib = _lib.load()
    diagnostics: list[Diagnostic] = []

    def on_diagnostic(_user: int | None, severity: bytes | None, location: bytes | None, message: bytes | None) -> None:
        diagnostics.append(Diagnostic(_lib.text(severity), _lib.text(location), _lib.text(message)))

    callback = _lib.DIAGNOSTIC_FN(on_diagnostic)  # kept alive by this frame for the call
    opts = _lib.LowerOptions()
    opts.struct_size = ctypes.sizeof(_lib.LowerOptions)
    opts.entry = entry.encode() if entry is not None else None
    opts.chip = chip.encode() if chip is not None else None
    opts.diagnostic = ctypes.cast(callback, c_void_p)
    opts.filename = filename.encode() if filename is not None else None
    opts.base_dir = os.fsencode(base_dir) if base_dir is not None else None
    opts.cubin = int(bool(cubin))
    opts.early_start = int(bool(early_start))
    out = c_void_p()
    status = call(lib, byref(opts), byref(out))
    if status != 0:
        if out.value:
            lib.crec_program_destroy(out)
        err = _lib.error(status)
        err.diagnostics = diagnostics  # type: ignore[attr-defined]
        raise err
    if not out.value:
        raise CrecError(Status.ERR_INTERNAL, "the front end returned no program")
    return Program(out.value, diagnostics)


def lower_file(
    path: str | os.PathLike[str],
    *,
    entry: str | None = None,
    chip: str | None = None,
    cubin: bool = False,
    early_start: bool = False,
) -> Program:
    """Lowers the MLIR file at `path` (``crec_lower_mlir_file``) into a new :class:`Program`.

    `entry` is the entry function (default "main"), `chip` the target chip ("sm_90";
    default: the device's, else sm_90). `cubin`: kernels compiled ahead of time to SASS for
    the chip (``crec_lower_options.cubin``, needs the CUDA toolkit's nvJitLink). `early_start`:
    every compiled kernel waits for the kernels before it at its entry, and its launches may
    start early (``crec_lower_options.early_start``; sm_90 and later). MLIR's diagnostics are kept in the program's
    ``diagnostics`` (and in a raised error's). Errors: :class:`crec.IoError`,
    :class:`crec.MlirError`, :class:`crec.NotFoundError`, :class:`crec.UnsupportedError`, ...
    """
    p = os.fsencode(path)
    return _lower(lambda lib, o, out: lib.crec_lower_mlir_file(p, o, out), entry, chip, None, None, cubin, early_start)


def lower_string(
    text: str | bytes,
    *,
    entry: str | None = None,
    chip: str | None = None,
    filename: str | None = None,
    base_dir: str | os.PathLike[str] | None = None,
    cubin: bool = False,
    early_start: bool = False,
) -> Program:
    """Lowers MLIR text (``crec_lower_mlir_string``) into a new :class:`Program`.

    `filename` names the text in locations (default "<string>"); `base_dir` is where
    relative ``crec.image`` paths are found (default: the current directory).
    Other options and errors: as :func:`lower_file`.
    """
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    buf = ctypes.create_string_buffer(data, len(data))
    return _lower(
        lambda lib, o, out: lib.crec_lower_mlir_string(buf, len(data), o, out),
        entry,
        chip,
        filename,
        base_dir,
        cubin,
        early_start,
    )


@dataclass(frozen=True)
class LowerCacheStats:
    """Counters of the process-wide cache of PTX compiled from gpu.module bodies, and of the
    persistent cache of lowered programs on disk (``disk_*``; crec/lower.h)."""

    compilations: int
    hits: int
    entries: int
    bytes: int
    disk_hits: int = 0
    disk_misses: int = 0
    disk_writes: int = 0
    disk_evictions: int = 0
    disk_rejected: int = 0
    disk_uncacheable: int = 0


def lower_cache_stats() -> LowerCacheStats:
    """``crec_lower_cache_get_stats``."""
    s = _lib.LowerCacheStats()
    s.struct_size = ctypes.sizeof(s)
    _lib.check(_lib.load().crec_lower_cache_get_stats(byref(s)))
    disk = {f: int(getattr(s, f)) for f in _lib.LOWER_DISK_CACHE_FIELDS}
    return LowerCacheStats(int(s.compilations), int(s.hits), int(s.entries), int(s.bytes), **disk)


def lower_cache_clear() -> None:
    """``crec_lower_cache_clear``: empties the cache (the counters keep counting)."""
    _lib.load().crec_lower_cache_clear()
