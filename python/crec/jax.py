"""``crec.jax``: a crec exec run inside ``jax.jit``, as an XLA FFI custom call.

::

    import jax, jax.numpy as jnp, crec, crec.jax

    program = crec.lower_file("examples/chain.mlir")          # y = (2x + 1)^2, 4096 floats
    f = jax.jit(lambda x: crec.jax.call(program, x, outputs=jax.ShapeDtypeStruct((4096,), jnp.float32)))
    y = f(jnp.arange(4096, dtype=jnp.float32))

libcrec's ``crec_xla_ffi_handler`` (``include/crec/xla.h``) is registered with XLA once per
process, for the CUDA platform, as the target ``"crec_replay"``, and its command-buffer
compatible twin as ``"crec_replay_graphable"``. :func:`call` emits one ``jax.ffi.ffi_call``
whose attribute ``exec`` is the exec's address: of the twin when the exec's replay can join a
stream capture (``crec_exec_capturable``: no while/if/switch, library calls or device-side
updates), so that XLA may capture it into its own CUDA graph, else of the plain handler. At each run XLA
hands the handler its stream and buffers; crec binds the call's arrays, then its outputs, as
the program's arguments in order, and replays the exec on XLA's stream (only the graph nodes
whose buffers moved are updated; nothing is copied).

What holds for the program (XLA's rules for a custom call, and the replay's):

- its arguments are the call's arrays, then its outputs: as many, each at least as many
  bytes as the exec was bound with (a dynamic-size argument: the size it was recorded at);
- it binds buffers alone (no bound scalars or communicators);
- it writes its outputs whole and nothing else: XLA's input arrays are immutable (a program
  that writes one corrupts that array), and an output holds no defined value before the
  program writes it;
- the exec lives as long as the process: compiled XLA programs keep its address, so this
  module keeps every exec it was given (and its program) alive;
- one exec replays one call at a time: two XLA programs that name the same exec must not
  run at once on different streams.

Importing this module needs no JAX: :func:`call` and :func:`register` import it.
"""

from __future__ import annotations

import ctypes
import math
import threading
from typing import Any

from . import _lib
from ._device import DeviceBuffer
from ._exec import Exec, record
from ._program import Program

TARGET = "crec_replay"
"""The name ``crec_xla_ffi_handler`` is registered under: XLA calls it at every run."""
TARGET_GRAPHABLE = "crec_replay_graphable"
"""The name ``crec_xla_ffi_handler_graphable`` is registered under: declared command-buffer
compatible, so that XLA may capture the call into its own CUDA graph (the replay then joins
that capture). :func:`call` takes it for every exec that ``crec_exec_capturable`` accepts."""

_lock = threading.Lock()
_registered: set[str] = set()  # the platforms the handler is registered for
_kept: dict[int, tuple[Any, ...]] = {}  # exec address -> what keeps it valid (the exec, its program, buffers)
_recorded: dict[int, Exec] = {}  # id(program) -> the exec :func:`call` recorded for it


def _capsule(fn: Any) -> Any:
    """A PyCapsule of a ctypes function's address, as XLA's registration takes it."""
    import jax

    pycapsule = getattr(getattr(jax, "ffi", None), "pycapsule", None)
    if pycapsule is not None:
        return pycapsule(fn)
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
    return new(ctypes.cast(fn, ctypes.c_void_p).value, None, None)


def register(platform: str = "CUDA") -> None:
    """Registers libcrec's ``crec_xla_ffi_handler`` with XLA as :data:`TARGET` for `platform`
    (once per process and platform; :func:`call` does it). XLA asks the handler for its FFI
    API version here, and refuses it when it speaks another major version."""
    import jax

    with _lock:
        if platform in _registered:
            return
        lib = _lib.load()
        try:
            handlers = {TARGET: lib.crec_xla_ffi_handler, TARGET_GRAPHABLE: lib.crec_xla_ffi_handler_graphable}
        except AttributeError:
            raise RuntimeError(f"{_lib.library_path()} has no crec_xla_ffi_handler_graphable: a libcrec older "
                               "than this package") from None
        for name, fn in handlers.items():
            jax.ffi.register_ffi_target(name, _capsule(fn), platform=platform)
        _registered.add(platform)


def _record_for(program: Program, bindings: Any, record_options: dict[str, Any]) -> Exec:
    """The exec recorded for `program` (once: later calls, new traces included, reuse it)."""
    ex = _recorded.get(id(program))
    if ex is not None and ex._ptr is not None:
        return ex
    keep: list[Any] = []
    if bindings is None:
        # record on scratch buffers of the arguments' sizes: every call rebinds them all
        dynamic = [a.name for a in program.arguments if a.dynamic]
        if dynamic:
            raise ValueError(f"crec.jax.call: arguments {dynamic} have dynamic sizes: give bindings= of the "
                             "sizes the calls will have")
        keep = [DeviceBuffer(max(a.size, 1), record_options.get("device", 0)) for a in program.arguments]
        bindings = keep
    ex = record(program, bindings, **record_options)
    _recorded[id(program)] = ex
    _kept[ex._handle] = (ex, program, keep, bindings)
    return ex


def _nbytes(x: Any) -> int:
    import numpy as np

    return math.prod(x.shape) * np.dtype(x.dtype).itemsize


def call(exec_or_program: Exec | Program, *arrays: Any, outputs: Any, bindings: Any = None,
         **record_options: Any) -> Any:
    """Runs a crec exec as one XLA custom call: usable inside ``jax.jit`` (and outside it).

    `exec_or_program` is a :class:`crec.Exec` (an imported graph's too), or a
    :class:`crec.Program`, recorded on the first call (with `bindings`, as
    :func:`crec.record` takes them, or on scratch device buffers of its arguments' sizes; with
    `record_options`, :func:`crec.record`'s keywords) and reused after. `arrays` (JAX or
    numpy arrays) and then `outputs` (a ``jax.ShapeDtypeStruct`` or a sequence of them) bind
    the program's arguments in order. Returns what ``jax.ffi.ffi_call`` returns: one array for
    one ShapeDtypeStruct, a list for a sequence.

    Raises ValueError at trace time when the count differs from the program's or an array or
    output has fewer bytes than its argument needs; the handler checks again at each run (then
    against the sizes the exec was last bound with) and its errors name crec's failing call."""
    import jax
    import numpy as np

    if isinstance(exec_or_program, Program):
        program = exec_or_program
        if program.bound_scalars:
            raise ValueError("crec.jax.call: the program binds scalars ("
                             + ", ".join(repr(s.name) for s in program.bound_scalars)
                             + "): an XLA custom call binds buffers alone")
        specs = [(a.name, a.size) for a in program.arguments]
    elif isinstance(exec_or_program, Exec):
        if bindings is not None or record_options:
            raise TypeError("crec.jax.call: bindings and record options are for a program, not an exec")
        if exec_or_program._sig.scalars:
            raise ValueError("crec.jax.call: the exec's program binds scalars: an XLA custom call binds "
                             "buffers alone")
        specs = [(a.name, a.size) for a in exec_or_program._sig.args]
    else:
        raise TypeError(f"crec.jax.call: a crec.Exec or crec.Program is needed, not {type(exec_or_program).__name__}")

    outs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    arrays = tuple(a if hasattr(a, "shape") and hasattr(a, "dtype") else np.asarray(a) for a in arrays)
    if len(arrays) + len(outs) != len(specs):
        raise ValueError(f"crec.jax.call: {len(arrays)} arrays and {len(outs)} outputs, but the program has "
                         f"{len(specs)} arguments ({', '.join(name for name, _ in specs)}), bound in that order")
    for i, (x, (name, size)) in enumerate(zip([*arrays, *outs], specs)):
        if _nbytes(x) < size:
            what = f"array {i}" if i < len(arrays) else f"output {i - len(arrays)}"
            raise ValueError(f"crec.jax.call: {what} ({x.dtype}{list(x.shape)}) binds argument {i} "
                             f"('{name}'): {_nbytes(x)} bytes, {size} needed")

    if isinstance(exec_or_program, Program):
        ex = _record_for(exec_or_program, bindings, record_options)
    else:
        ex = exec_or_program
    address = ex._handle  # ValueError when closed
    with _lock:
        _kept.setdefault(address, (ex,))
    register()
    # an exec whose replay can join a capture lets XLA put the call in its command buffers
    target = TARGET_GRAPHABLE if _lib.load().crec_exec_capturable(address) == 0 else TARGET
    return jax.ffi.ffi_call(target, outputs)(*arrays, exec=np.uint64(address))
