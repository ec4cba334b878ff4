"""``crec.torch``: PyTorch work captured with PyTorch's own machinery, replayed with new
input tensors and no copies.

``torch.cuda.graph`` bakes the addresses of its inputs into the graph: its documentation
has users keep "static" input tensors and ``copy_()`` each new input into them before
``replay()``. :func:`graph` captures `fn` twice (with the example inputs and with copies of
them, in one private memory pool), imports the first capture into crec
(:func:`crec.import_graph`, the second telling pointers from numbers), and returns a
callable that rebinds the inputs at each call: a replay rewrites only the graph nodes that
read a moved input.

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
- an output that is an input, or a view of one: refused (a call would return the example's
  storage, not the new input's);
- a new input whose address is less aligned than its example's: refused (kernels chose
  their vector widths from the example's alignment at capture).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

from . import _lib
from ._capture import ImportedExec, import_graph


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


class Graphed:
    """What :func:`graph` returns: call it with tensors like the examples; it returns the
    outputs of the first capture, overwritten by each call. ``exec`` is the crec exec
    (its ``stats`` and ``import_counts``)."""

    def __init__(self, exec: ImportedExec, outputs: Any, examples: list[Any], keep: list[Any]) -> None:
        import torch

        self.exec = exec
        self._outputs = outputs
        self._shapes = [(tuple(t.shape), t.dtype, t.device) for t in examples]
        self._align = [_alignment(t.data_ptr()) for t in examples]
        self._nbytes = [t.numel() * t.element_size() for t in examples]
        self._device = examples[0].device
        self._keep = keep  # fn, the graphs (and so their pool), the second capture's tensors
        # A call is the hot path, often longer on the host than the graph on the GPU: it
        # fills the exec's own crec_bindings and calls crec_exec_replay directly (what
        # Exec.replay does, less its general conversions).
        self._torch = torch
        self._bindings = exec._sig.binding_array
        self._struct = exec._sig.struct
        self._ref = ctypes.byref(self._struct)
        self._replay = _lib.load().crec_exec_replay

    def _refuse(self, args: tuple[Any, ...]) -> None:
        """Raises what is wrong with `args` (the checks of __call__, with their messages)."""
        torch = self._torch
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

    def __call__(self, *args: Any) -> Any:
        torch = self._torch
        shapes = self._shapes
        if len(args) != len(shapes):
            self._refuse(args)
        barr = self._bindings
        for i, t in enumerate(args):
            shape, dtype, device = shapes[i]
            if (not isinstance(t, torch.Tensor) or t.shape != shape or t.dtype != dtype or t.device != device
                    or not t.is_contiguous()):
                self._refuse(args)
            ptr = t.data_ptr()
            if ptr & (self._align[i] - 1):
                self._refuse(args)
            barr[i].ptr = ptr or None
            barr[i].size = self._nbytes[i]
        self._struct.num_buffers = len(args)
        self._struct.num_scalars = 0
        _lib.check(self._replay(self.exec._handle, self._ref, torch.cuda.current_stream(self._device).cuda_stream))
        self.exec._bound.clear()  # as Exec.replay: a replay binds every slot anew
        return self._outputs

    def close(self) -> None:
        """Destroys the exec (after synchronizing its stream)."""
        import torch

        torch.cuda.synchronize(self._device)
        self.exec.close()
        self._keep.clear()


def graph(fn: Callable[..., Any], *example_args: Any, warmup: int = 1) -> Graphed:
    """Captures ``fn(*example_args)`` (CUDA tensors, contiguous) with ``torch.cuda.graph``
    twice, after `warmup` eager calls on a side stream (as PyTorch advises, so that library
    handles and workspaces exist before the capture), and imports it into crec. Returns a
    :class:`Graphed` that replays it for new tensors of the same shapes and dtypes."""
    import torch

    spans = [_span(t, f"example {i}") for i, t in enumerate(example_args)]
    if not spans:
        raise ValueError("give at least one example tensor: it is what each call rebinds")
    devices = {t.device for t in example_args}
    if len(devices) > 1:
        raise ValueError(f"the examples are on several devices ({sorted(str(d) for d in devices)}): one graph runs on one")
    with torch.cuda.device(example_args[0].device):
        return _graph(torch, fn, example_args, spans, warmup)


def _graph(torch: Any, fn: Callable[..., Any], example_args: tuple[Any, ...], spans: list[tuple[int, int]],
           warmup: int) -> Graphed:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            fn(*example_args)
    torch.cuda.current_stream().wait_stream(side)
    twins = [torch.empty_like(t).copy_(t) for t in example_args]
    torch.cuda.synchronize()
    pool = torch.cuda.graph_pool_handle()
    g1 = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(g1, pool=pool):
        outputs = fn(*example_args)
    g2 = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(g2, pool=pool):
        twin_outputs = fn(*twins)
    for k, o in enumerate(_outputs(outputs)):
        for i, (base, size) in enumerate(spans):
            if base <= o.data_ptr() < base + size:
                raise ValueError(f"output {k} is example {i} or a view of it: a call would return the example's "
                                 "storage, not the new input's (return a copy, e.g. x.clone())")
    device = example_args[0].device.index or 0
    exec = import_graph(
        g1.raw_cuda_graph(),
        [(f"input{i}", span) for i, span in enumerate(spans)],
        second_graph=g2.raw_cuda_graph(),
        second=[_span(t, f"twin {i}") for i, t in enumerate(twins)],
        device=device,
    )
    return Graphed(exec, outputs, list(example_args), [fn, g1, g2, twins, twin_outputs])
