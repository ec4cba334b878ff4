"""``crec.torch``: PyTorch work captured with PyTorch's own machinery, replayed with new
input tensors and no copies; and, with :func:`loop` and :func:`cond`, captured steps run
inside a while loop or an if decided on the device (one launch for the whole loop).

``torch.cuda.graph`` bakes the addresses of its inputs into the graph: its documentation
has users keep "static" input tensors and ``copy_()`` each new input into them before
``replay()``. :func:`graph` captures `fn` three times with ``torch.cuda.graph``: on the
example inputs (the graph it replays: the examples are its static inputs), then twice more
on copies of them displaced by multiples of 2 MiB (which keeps every address's alignment),
as evidence of which words of the graph are the inputs' addresses. It imports the first
capture into crec (:func:`crec.import_graph`) and returns a callable that rebinds the
inputs at each call: a replay rewrites only the graph nodes that read a moved input.

Never refused for what the graph holds: an input whose uses crec cannot follow (its
address kept in device memory or in a table the work copies from the host, or moving in a
way no rewrite explains) is copied, alone, into its example by a copy node at the head of
the graph, as ``copy_()`` into a static input would, and back at the tail when `fn` writes
it; keep such examples for the graph alone.
:attr:`Graphed.routes` says which way each input went, and why. Bytes that differ between
the captures for no reason an input explains (padding, empty functors, host addresses) are
replayed as the first capture had them, as ``torch.cuda.graph`` replays them.

What breaks it (as it breaks ``torch.cuda.graph``):

- CPU synchronization inside `fn` (``.item()``, ``.cpu()``, printing a tensor): the
  capture fails;
- shapes or control flow that depend on the data: the graph holds the path taken at
  capture, for every input;
- inputs of another shape, dtype or layout than the examples: refused;
- random numbers: PyTorch advances a captured graph's RNG offsets in its own ``replay()``,
  which crec does not call, so each call draws the same numbers (dropout, ``rand``);
- outputs live in the capture's pool and are overwritten by the next call, as with
  ``torch.cuda.graph``: clone what you keep;
- memory the work allocated for itself during capture stays the first capture's and lives
  as long as the returned object (which also keeps `fn`, whose parameters the graph reads);
  the two evidence captures and their memory are released once the import is done;
- an output that is an input, or a view of one: refused (a call would return the
  example's storage, not the new input's);
- a new input whose address is less aligned than its example's: refused (kernels chose
  their vector widths from the example's alignment at capture).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any, TypeVar

from . import _lib
from ._capture import ImportedExec, Route, import_graph
from ._errors import CudaError, UnsupportedError

_OPS = 0  # custom operators made by Graphed.op, for their names
_STEP = 2 << 20  # every displacement is a multiple of this: alignment kept, pointer-derived values move in round steps


def _alignment(ptr: int) -> int:
    """The largest power of two up to 256 that divides `ptr`."""
    return min(ptr & -ptr, 256) if ptr else 256


def _outputs(out: Any) -> list[Any]:
    import torch

    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _outputs(o)]
    if isinstance(out, dict):
        return [t for o in out.values() for t in _outputs(o)]
    return []


def _span(t: Any, what: str) -> tuple[int, int]:
    import torch

    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{what}: a torch.Tensor is needed, not {type(t).__name__}")
    if not t.is_cuda:
        raise ValueError(f"{what}: the tensor is on {t.device}, not a CUDA device")
    if not t.is_contiguous():
        raise ValueError(f"{what}: the tensor is not contiguous (give .contiguous())")
    return t.data_ptr(), t.numel() * t.element_size()


def _placed(torch: Any, examples: list[Any], order: list[int], gaps: bool) -> tuple[Any, list[Any]]:
    """Copies of `examples` in one new allocation, each at an address congruent to its
    example's modulo 2 MiB (so as aligned), laid out in `order`, with `gaps` of 2 MiB more
    before each: the same copies placed twice this way differ by a multiple of 2 MiB, and
    by a different one for each input."""
    sizes = [t.numel() * t.element_size() for t in examples]
    slot = [(s + 2 * _STEP - 1) // _STEP * _STEP for s in sizes]  # room for the offset within 2 MiB too
    total = sum(slot) + (len(examples) * _STEP if gaps else 0) + _STEP
    arena = torch.empty(total, dtype=torch.uint8, device=examples[0].device)
    base = (arena.data_ptr() + _STEP - 1) // _STEP * _STEP - arena.data_ptr()
    copies: list[Any] = [None] * len(examples)
    at = base
    for i in order:
        if gaps:
            at += _STEP  # the n-th placed lies n + 1 steps further than without gaps
        t = examples[i]
        offset = at + t.data_ptr() % _STEP
        view = arena[offset:offset + sizes[i]].view(t.dtype).view(t.shape)
        view.copy_(t)
        copies[i] = view
        at += slot[i]
    return arena, copies


class Graphed:
    """What :func:`graph` returns: call it with tensors like the examples; it returns the
    outputs of the first capture, overwritten by each call. ``exec`` is the crec exec
    (its ``stats``, ``import_counts`` and ``routes``); :attr:`routes` says per input
    whether it is rebound or copied."""

    def __init__(self, exec: ImportedExec, outputs: Any, examples: list[Any], keep: list[Any]) -> None:
        import torch

        self.exec = exec
        self._outputs = outputs
        self._shapes = [(tuple(t.shape), t.dtype, t.device) for t in examples]
        self._align = [_alignment(t.data_ptr()) for t in examples]
        self._keep = keep  # fn, the graph (and so its pool), the examples (the capture's own buffers)
        # The hot path, often longer on the host than the graph on the GPU: per input a
        # shape, dtype, device and layout check against what was captured, its address
        # into an array, and one call of crec_exec_replay_buffers on the current stream
        # (read raw, as torch's compiled code reads it).
        self._n = len(examples)
        self._sig = [(t.shape, t.dtype, t.get_device(), self._align[i] - 1) for i, t in enumerate(examples)]
        self._ptrs = (ctypes.c_void_p * max(1, self._n))()
        self._bound = exec._bound
        self._replay = _lib.load().crec_exec_replay_buffers
        self._check = _lib.check
        self._device = examples[0].get_device()
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        self._stream = raw if raw else (lambda d: torch.cuda.current_stream(d).cuda_stream)
        # the same checks and call compiled (python/src/_crec_fast.c), where the package has it
        self._fast = None
        module = _lib.fast()
        if module is not None:
            address = ctypes.cast(self._replay, ctypes.c_void_p).value
            self._fast = module.Replayer(address, exec._handle, tuple(self._sig), self._stream, self._device)

    @property
    def routes(self) -> list[Route]:
        """Per input, how it reaches the captured work: rebound in place, or copied (and why)."""
        return self.exec.routes

    def _refuse(self, args: tuple[Any, ...]) -> None:
        """Raises what is wrong with `args` (the checks of __call__, with their messages)."""
        import torch

        if len(args) != len(self._shapes):
            raise TypeError(f"{len(args)} tensors given, {len(self._shapes)} expected")
        for i, (t, (shape, dtype, device)) in enumerate(zip(args, self._shapes)):
            what = f"input {i}"
            if isinstance(t, torch.Tensor) and (tuple(t.shape) != shape or t.dtype != dtype or t.device != device):
                raise ValueError(f"{what}: {tuple(t.shape)} {t.dtype} on {t.device}, but the capture took "
                                 f"{shape} {dtype} on {device}")
            ptr, _ = _span(t, what)
            if _alignment(ptr) < self._align[i]:
                raise ValueError(f"{what}: its address is {_alignment(ptr)}-byte aligned, the example's "
                                 f"{self._align[i]}: the captured kernels may need the example's alignment")
        raise ValueError("the inputs were refused for a reason this check does not know")  # not reached

    def __call__(self, *args: Any) -> Any:
        fast = self._fast
        if fast is not None and self.exec._ptr is not None:
            status = fast(*args)
            if status:
                if status < 0:
                    self._refuse(args)
                self._check(status)
            if self._bound:
                self._bound.clear()
            return self._outputs
        if len(args) != self._n:
            self._refuse(args)
        ptrs = self._ptrs
        sig = self._sig
        try:
            for i, t in enumerate(args):
                shape, dtype, device, mask = sig[i]
                ptr = t.data_ptr()
                if (t.shape != shape or t.dtype is not dtype or t.get_device() != device or ptr & mask
                        or not t.is_contiguous()):
                    self._refuse(args)
                ptrs[i] = ptr
        except AttributeError:
            self._refuse(args)  # not a tensor
        handle = self.exec._ptr
        if handle is None:
            raise ValueError("the crec exec is closed")
        self._check(self._replay(handle, ptrs, self._n, self._stream(self._device)))
        if self._bound:
            self._bound.clear()  # as Exec.replay: a replay binds every slot anew
        return self._outputs

    _written: list[bool] = []
    _op: Any = None

    @property
    def op(self) -> Callable[[list[Any]], list[Any]]:
        """This call as a PyTorch custom operator (``torch.library.custom_op``, named
        ``crec::graphed_N``): ``op([x, ...])`` returns copies of the outputs. Code compiled
        with ``torch.compile`` keeps it in its graph instead of breaking the graph there, so
        under ``mode="reduce-overhead"`` PyTorch's own CUDA graph captures the call, and crec
        adds its graph to that capture (``stats.captured_replays``). Refused for work that
        writes its inputs in place (the operator declares none mutated)."""
        if self._op is not None:
            return self._op
        if any(self._written):
            raise ValueError("the captured work writes its inputs "
                             f"{[i for i, w in enumerate(self._written) if w]} in place: as an operator it would "
                             "have to declare them mutated, which this one does not; call the object instead")
        import torch

        global _OPS
        _OPS += 1
        outputs = _outputs(self._outputs)
        call = self

        # the schema given: this module's annotations are strings, and `torch` is not its global
        @torch.library.custom_op(f"crec::graphed_{_OPS}", mutates_args=(), schema="(Tensor[] inputs) -> Tensor[]")
        def graphed_op(inputs: list[Any]) -> list[Any]:
            return [o.clone() for o in _outputs(call(*inputs))]

        @graphed_op.register_fake
        def _(inputs: list[Any]) -> list[Any]:
            return [inputs[0].new_empty(o.shape, dtype=o.dtype) for o in outputs]

        self._op = graphed_op
        return graphed_op

    def close(self) -> None:
        """Destroys the exec (after synchronizing its stream)."""
        import torch

        torch.cuda.synchronize(self._device)
        self._fast = None
        self.exec.close()
        self._keep.clear()


def graph(fn: Callable[..., Any], *example_args: Any, warmup: int = 1, variants: int = 1) -> Graphed:
    """Captures ``fn(*example_args)`` (CUDA tensors, contiguous) with ``torch.cuda.graph``
    three times, after `warmup` eager calls on a side stream (as PyTorch advises, so that
    library handles and workspaces exist before the capture), and imports it into crec.
    Returns a :class:`Graphed` that replays it for new tensors of the same shapes and
    dtypes, in one executable graph updated in place for each new input. With
    `variants` > 1 crec keeps that many executable graphs, so that inputs rotating among
    that many sets launch a graph that already holds them and update nothing
    (``crec_record_options.variants``). That saves the host a little but costs the GPU
    more: on an H100 (tools/bench/torch_capture.py and torch_census.py), one graph came
    out at 0.98-1.013x the torch graph's GPU time on small blocks and 0.996x over 38
    models, four at 1.024-1.10x and 1.015x, against 0.4-0.8 us of host time a call."""
    import torch

    spans = [_span(t, f"example {i}") for i, t in enumerate(example_args)]
    if not spans:
        raise ValueError("give at least one example tensor: it is what each call rebinds")
    devices = {t.device for t in example_args}
    if len(devices) > 1:
        raise ValueError(f"the examples are on several devices ({sorted(str(d) for d in devices)}): one graph runs on one")
    if not 1 <= variants <= 16:
        raise ValueError(f"variants: {variants}, but crec keeps 1 to 16 executable graphs")
    with torch.cuda.device(example_args[0].device):
        return _graph(torch, fn, list(example_args), warmup, variants)


def _graph(torch: Any, fn: Callable[..., Any], examples: list[Any], warmup: int, variants: int) -> Graphed:
    n = len(examples)
    versions = [t._version for t in examples]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            fn(*examples)
    torch.cuda.current_stream().wait_stream(side)
    # an input the warm-up wrote in place is written by the graph too: copied back if copied
    written = [t._version != v for t, v in zip(examples, versions)]
    order = list(range(n))
    statics = examples  # the capture's own buffers, as torch.cuda.graph's static inputs
    arena1, twins1 = _placed(torch, examples, order, gaps=True)
    arena2, twins2 = _placed(torch, examples, order[::-1], gaps=True)
    torch.cuda.synchronize()
    pool = torch.cuda.graph_pool_handle()
    g = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(g, pool=pool):
        outputs = fn(*statics)
    for k, o in enumerate(_outputs(outputs)):
        for i, t in enumerate(statics):
            base, size = t.data_ptr(), t.numel() * t.element_size()
            if base <= o.data_ptr() < base + size:
                raise ValueError(f"output {k} is example {i} or a view of it: a call would return the example's "
                                 "storage, not the new input's (return a copy, e.g. x.clone())")
    # the evidence: the same work on displaced copies, in a pool of its own, released below
    evidence_pool = torch.cuda.graph_pool_handle()
    g1 = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(g1, pool=evidence_pool):
        out1 = fn(*twins1)
    g2 = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(g2, pool=evidence_pool):
        out2 = fn(*twins2)

    def spans(ts: list[Any]) -> list[tuple[int, int]]:
        return [(t.data_ptr(), t.numel() * t.element_size()) for t in ts]

    graphs = (g.raw_cuda_graph(), g1.raw_cuda_graph(), g2.raw_cuda_graph())
    bases = (spans(statics), spans(twins1), spans(twins2))
    try:
        def imported(count: int) -> ImportedExec:
            return import_graph(graphs[0], [(f"input{i}", span) for i, span in enumerate(bases[0])],
                                second_graph=graphs[1], second=bases[1], third_graph=graphs[2], third=bases[2],
                                written=written, device=examples[0].get_device(), variants=count)

        try:
            exec = imported(variants)
        except (UnsupportedError, CudaError):
            if variants == 1:
                raise
            # a graph with relocations inside child graphs, or with conditional nodes
            # (CUDA instantiates those once), keeps one executable graph
            exec = imported(1)
    finally:
        del out1, out2, twins1, twins2, arena1, arena2
        g1.reset()
        g2.reset()
        del g1, g2
    graphed = Graphed(exec, outputs, examples, [fn, g, examples])
    graphed._written = written
    return graphed


# ---- device-side control flow around captured work ------------------------------------------


def _build(lib: Any) -> Any:
    """A new, empty crec program (for :class:`Looped` and :class:`Branched`)."""
    from ._program import Program

    out = ctypes.c_void_p()
    _lib.check(lib.crec_program_create(ctypes.byref(out)))
    return Program(out.value or 0)


def _arguments(lib: Any, program: Any, tensors: list[Any], names: list[str]) -> list[Any]:
    handles = []
    for name, t in zip(names, tensors):
        h = _lib.Handle()
        _lib.check(lib.crec_program_add_argument(program._handle, name.encode(), t.numel() * t.element_size(), None,
                                                 ctypes.byref(h)))
        handles.append(h)
    return handles


def _operands(handles: list[Any], tensors: list[Any]) -> Any:
    ops = (_lib.Operand * max(1, len(handles)))()
    for i, (h, t) in enumerate(zip(handles, tensors)):
        ops[i].range = _lib.Range(h, 0, t.numel() * t.element_size())
        ops[i].access = _lib.ACCESS_READ_WRITE
    return ops


def _one_byte(t: Any, what: str) -> None:
    import torch

    _span(t, what)
    if t.numel() != 1:
        raise ValueError(f"{what}: {t.numel()} elements; give a one-element tensor")
    if t.dtype not in (torch.bool, torch.uint8, torch.int8):
        raise ValueError(f"{what}: {t.dtype}; crec's device control flow reads one byte (nonzero is true): "
                         "give a torch.bool or torch.uint8 tensor")


class _Controlled:
    """A crec program of device control flow around captured steps, recorded once and
    replayed with each call's state tensors (the first byte of the flag or predicate
    decides, on the device)."""

    def __init__(self, program: Any, graphed: list[Graphed], state: list[Any], extra: list[Any]) -> None:
        import torch

        from ._exec import record

        self.program = program
        self._graphed = graphed  # the imports' captures, examples and pools: what the graph reads
        self._shapes = [(tuple(t.shape), t.dtype, t.device) for t in state]
        self._align = [_alignment(t.data_ptr()) for t in state]
        self._extra = extra  # the flag or predicate when it is not a state tensor: bound to itself at every call
        self._device = state[0].get_device()
        self.exec = record(program, [(t.data_ptr(), t.numel() * t.element_size()) for t in state + extra],
                           device=self._device)
        self._n = len(state) + len(extra)
        self._ptrs = (ctypes.c_void_p * self._n)()
        for i, t in enumerate(extra):
            self._ptrs[len(state) + i] = t.data_ptr()
        self._replay = _lib.load().crec_exec_replay_buffers
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        self._stream = raw if raw else (lambda d: torch.cuda.current_stream(d).cuda_stream)

    def __call__(self, *state: Any) -> None:
        if len(state) != len(self._shapes):
            raise TypeError(f"{len(state)} tensors given, {len(self._shapes)} expected")
        for i, (t, (shape, dtype, device)) in enumerate(zip(state, self._shapes)):
            what = f"state {i}"
            ptr, _ = _span(t, what)
            if tuple(t.shape) != shape or t.dtype != dtype or t.device != device:
                raise ValueError(f"{what}: {tuple(t.shape)} {t.dtype} on {t.device}, but the capture took "
                                 f"{shape} {dtype} on {device}")
            if _alignment(ptr) < self._align[i]:
                raise ValueError(f"{what}: its address is {_alignment(ptr)}-byte aligned, the example's "
                                 f"{self._align[i]}: the captured kernels may need the example's alignment")
            self._ptrs[i] = ptr
        _lib.check(self._replay(self.exec._handle, self._ptrs, self._n, self._stream(self._device)))

    @property
    def routes(self) -> list[list[Route]]:
        """Per captured function (the step; or then_fn, else_fn), how each state tensor
        reaches it: rebound in place, or copied (and why), as :attr:`Graphed.routes`."""
        return [g.routes for g in self._graphed]

    def check(self) -> None:
        """Raises :class:`crec.LoopLimitError` when a finished call stopped the loop at its
        limit (synchronize first; the next call raises it too)."""
        self.exec.check()

    def close(self) -> None:
        """Destroys the exec and the program (after synchronizing the device), then the
        captures: in that order, since the exec's graph reads the captures' memory."""
        import torch

        if self.exec._ptr is not None:
            torch.cuda.synchronize(self._device)
        self.exec.close()
        self.program.close()
        for g in self._graphed:
            g.close()

    def __del__(self) -> None:
        # garbage collection tears attributes down in no set order: the captures' pools
        # must outlive any launch of the exec
        try:
            self.close()
        except Exception:
            pass


class Looped(_Controlled):
    """What :func:`loop` returns: ``looped(*state)`` runs ``while flag: step(*state)`` on
    the device in one launch, on the tensors given (each call may pass others of the same
    shapes). ``exec`` is the crec exec, ``program`` the crec program (a while loop whose
    body is the captured step); :meth:`check` raises when the loop stopped at its limit.
    A call made inside another capture (``torch.cuda.graph``) adds the loop to that
    graph, which then uses this object's exec and captures: keep it alive, and do not
    run it at the same time, while that graph is replayed."""


class Branched(_Controlled):
    """What :func:`cond` returns: ``branched(*state)`` runs ``then_fn(*state)`` when the
    predicate's first byte is nonzero, else ``else_fn(*state)``, decided on the device."""


def _state_arguments(lib: Any, program: Any, state: list[Any], byte: Any, name: str) -> tuple[list[Any], Any, list[Any]]:
    """The program's arguments: the state tensors, then `byte` (the flag or predicate)
    unless it is one of them. Returns their handles, the handle of `byte`'s argument, and
    the extra tensors bound after the state (`byte` alone, or none)."""
    slot = next((i for i, t in enumerate(state) if t.data_ptr() == byte.data_ptr()), None)
    extra = [] if slot is not None else [byte]
    args = _arguments(lib, program, state + extra, [f"state{i}" for i in range(len(state))] + ([name] if extra else []))
    return args, args[slot if slot is not None else len(state)], extra


def _states(state: tuple[Any, ...]) -> list[Any]:
    """The state tensors of :func:`loop` and :func:`cond`, checked (CUDA, contiguous; one at least)."""
    if not state:
        raise ValueError("give at least one state tensor: it is what each call rebinds")
    for i, t in enumerate(state):
        _span(t, f"state {i}")
    return list(state)


_C = TypeVar("_C", bound=_Controlled)


def _around(state: list[Any], byte: Any, byte_name: str, fns: list[Callable[..., Any]], names: list[bytes],
            warmup: int, control: Callable[[Any, Any, Any], list[Any]], cls: type[_C]) -> _C:
    """What :func:`loop` and :func:`cond` share: each of `fns` captured on `state` (as
    :func:`graph` does), a program whose arguments are the state and `byte` (the flag or
    predicate, unless it is one of the state), `control(lib, program, byte's argument)`
    adding the while or if and returning the regions that get the captures, one graph
    command per capture there, and `cls` recorded around it. A failure closes what was
    made so far."""
    import torch

    graphed: list[Graphed] = []
    program = None
    with torch.cuda.device(state[0].device):
        try:
            for fn in fns:
                graphed.append(_graph(torch, fn, state, warmup, 1))
            lib = _lib.load()
            program = _build(lib)
            args, handle, extra = _state_arguments(lib, program, state, byte, byte_name)
            regions = control(lib, program, handle)
            ops = _operands(args[:len(state)], state)
            for region, gr, name in zip(regions, graphed, names):
                h = _lib.Handle()
                _lib.check(lib.crec_program_add_graph(program._handle, region, name, gr.exec._handle, ops, len(state),
                                                      ctypes.byref(h)))
            return cls(program, graphed, state, extra)
        except BaseException:
            if program is not None:
                program.close()
            for g in graphed:
                g.close()
            raise


def loop(step: Callable[..., Any], *state: Any, flag: Any, max_iterations: int | None = None,
         warmup: int = 1) -> Looped:
    """Captures ``step(*state)`` (CUDA tensors it updates in place, as :func:`graph`
    captures: three captures, the inputs rebound at each call) and returns a
    :class:`Looped` that runs ``while flag: step(*state)`` on the device, in one launch:
    a crec program whose while loop's body is the captured step (``crec_program_add_graph``).

    `flag` is a one-element ``torch.bool`` or ``torch.uint8`` CUDA tensor that `step`
    writes (for example ``flag.copy_(token != eos)``); the loop reads its first byte
    before each iteration, so set it before the call. It may be one of `state`, or a
    tensor of its own that the step closes over (then every call uses that tensor).
    The warm-up calls (`warmup`, on a side stream, before the captures) run `step` on the
    examples: give examples whose values you may lose. A state tensor crec cannot follow
    (:attr:`Looped.routes`) is copied into its example and back at each iteration, so
    calls on other tensors write the examples too.

    `max_iterations` stops the loop after that many steps: the call's loop ends there,
    and :meth:`Looped.check` (after a synchronization) or the next call raises
    :class:`crec.LoopLimitError` naming it. None: no limit."""
    state_l = _states(state)
    _one_byte(flag, "flag")
    if max_iterations is not None and max_iterations < 1:
        raise ValueError(f"max_iterations: {max_iterations}; give 1 or more, or None for no limit")

    def while_flag(lib: Any, program: Any, pred: Any) -> list[Any]:
        w, cond_r, body = _lib.Handle(), _lib.Handle(), _lib.Handle()
        root = lib.crec_program_body(program._handle)
        _lib.check(lib.crec_program_add_while(program._handle, root, b"while flag", _lib.Range(pred, 0, 1),
                                              ctypes.byref(w), ctypes.byref(cond_r), ctypes.byref(body)))
        if max_iterations is not None:
            _lib.check(lib.crec_program_set_loop_limit(program._handle, w, max_iterations))
        return [body]

    return _around(state_l, flag, "flag", [step], [b"step"], warmup, while_flag, Looped)


def cond(then_fn: Callable[..., Any], else_fn: Callable[..., Any], *state: Any, pred: Any,
         warmup: int = 1) -> Branched:
    """Captures ``then_fn(*state)`` and ``else_fn(*state)`` (as :func:`graph` does) and
    returns a :class:`Branched` that runs one of them per call, chosen on the device by the
    first byte of `pred` (a one-element ``torch.bool`` or ``torch.uint8`` CUDA tensor,
    one of `state` or a tensor of its own), in one launch. Both functions' warm-ups run on
    the examples."""
    state_l = _states(state)
    _one_byte(pred, "pred")

    def if_pred(lib: Any, program: Any, p: Any) -> list[Any]:
        c, then_r, else_r = _lib.Handle(), _lib.Handle(), _lib.Handle()
        root = lib.crec_program_body(program._handle)
        _lib.check(lib.crec_program_add_if(program._handle, root, b"if pred", _lib.Range(p, 0, 1),
                                           ctypes.byref(c), ctypes.byref(then_r), ctypes.byref(else_r)))
        return [then_r, else_r]

    return _around(state_l, pred, "pred", [then_fn, else_fn], [b"then", b"else"], warmup, if_pred, Branched)
