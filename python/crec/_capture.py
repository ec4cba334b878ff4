"""Imported graphs: ``crec/capture.h``. Work captured from a stream (PyTorch, cuBLAS,
Triton, your own kernels) becomes an :class:`~crec.Exec` whose arguments are rebound at
each replay (``docs/capture.md``)."""

from __future__ import annotations

import ctypes
import json
from collections.abc import Callable, Sequence
from ctypes import POINTER, byref, c_size_t, c_void_p
from dataclasses import dataclass
from typing import Any

from . import _lib
from ._buffers import pointer_of
from ._device import stream_handle
from ._errors import Status
from ._exec import Exec, _ArgSpec, _Signature


@dataclass(frozen=True)
class Route:
    """How an imported exec passes one argument to the work (``crec_exec_import_route``):
    ``"rebound"`` (its pointers rewritten at replays, zero-copy) or ``"copied"`` (copied
    into the capture's own buffer before each launch, and back after it when ``back``),
    with ``why``."""

    argument: str
    route: str  #: "rebound" or "copied"
    relocations: int  #: words rewritten for it (0 when copied)
    back: bool  #: copied back after each launch (the work may write it)
    why: str  #: copied: why, naming the node; "" when rebound


@dataclass(frozen=True)
class ImportCounts:
    """What an import found (``crec_exec_import_counts``, ``crec_exec_import_edges``)."""

    nodes: int  #: every node of the captured graph
    relocated: int  #: the nodes rewritten at replays
    relocations: int  #: the words rewritten
    edges: int = 0  #: the graph's edges (``crec_exec_import_edges``)
    programmatic_edges: int = 0  #: of those, programmatic (kernels that use PDL), kept as captured


def _arguments(arguments: Sequence[tuple[str, Any]]) -> tuple[Any, list[Any], list[_ArgSpec]]:
    """(name, buffer) pairs -> a crec_graph_argument array, what keeps its memory alive, specs."""
    if isinstance(arguments, (str, bytes)) or not isinstance(arguments, Sequence):
        raise TypeError("arguments must be a sequence of (name, buffer) pairs")
    arr = (_lib.GraphArgument * max(1, len(arguments)))()
    keep: list[Any] = [arr]
    specs = []
    for i, pair in enumerate(arguments):
        name, obj = pair
        if name is None:
            name = f"arg{i}"  # as crec names an unnamed one
        ptr, size, alive = pointer_of(obj, f"argument {i} ({name!r})")
        if size is None:
            raise ValueError(f"argument {i} ({name!r}): give its size, as (address, size) or an array")
        encoded = name.encode()
        keep.extend((encoded, alive))
        arr[i].name = encoded
        arr[i].base = ptr or None
        arr[i].size = size
        specs.append(_ArgSpec(name, size, False))
    return arr, keep, specs


def _bases(second: Sequence[Any] | None, specs: list[_ArgSpec], what: str) -> tuple[Any, list[Any]]:
    if second is None:
        return None, []
    n = len(specs)
    if len(second) != n:
        raise ValueError(f"{what}: {len(second)} given for {n} arguments")
    arr = (c_void_p * max(1, n))()
    keep: list[Any] = [arr]
    for i, obj in enumerate(second):
        ptr, size, alive = pointer_of(obj, f"{what} {i}")
        if size is not None and size < specs[i].size:
            raise ValueError(f"{what} {i}: {size} bytes, smaller than argument {specs[i].name!r} ({specs[i].size})")
        arr[i] = ptr or None
        keep.append(alive)
    return arr, keep


def _options(device: int, variants: int = 1) -> _lib.RecordOptions:
    opts = _lib.RecordOptions()
    opts.struct_size = ctypes.sizeof(opts)
    opts.device = device
    opts.schedule = 0
    opts.trace_cache_size = 16
    opts.variants = variants
    return opts


class ImportedExec(Exec):
    """An :class:`~crec.Exec` made from a captured graph: :meth:`replay` and :meth:`bind`
    take the arguments in the order they were given to the import."""

    @property
    def import_counts(self) -> ImportCounts:
        n, r, w, e, pdl = c_size_t(), c_size_t(), c_size_t(), c_size_t(), c_size_t()
        lib = _lib.load()
        _lib.check(lib.crec_exec_import_counts(self._handle, byref(n), byref(r), byref(w)))
        _lib.check(lib.crec_exec_import_edges(self._handle, byref(e), byref(pdl)))
        return ImportCounts(n.value, r.value, w.value, e.value, pdl.value)


    @property
    def routes(self) -> list[Route]:
        """Per argument, in the import's order, how it reaches the work (:class:`Route`)."""
        lib = _lib.load()
        out = []
        for i, spec in enumerate(self._sig.args):
            r = _lib.ImportRoute()
            r.struct_size = ctypes.sizeof(r)
            _lib.check(lib.crec_exec_import_route(self._handle, i, byref(r)))
            out.append(Route(spec.name, "copied" if r.copied else "rebound", int(r.relocations), bool(r.copied_back),
                             (r.why or b"").decode(errors="replace")))
        return out

    def dump(self, format: str = "text", title: str = "imported graph") -> Any:
        """What the import rewrites at replays (``crec_exec_dump_import_string``): text; with
        ``format="json"`` the parsed JSON; with ``format="html"`` a self-contained page of it
        (:func:`import_page`), titled `title`."""
        if format not in ("text", "json", "html"):
            raise ValueError(f"format must be 'text', 'json' or 'html', not {format!r}")
        lib = _lib.load()
        out, size = c_void_p(), c_size_t()
        _lib.check(lib.crec_exec_dump_import_string(self._handle, int(format != "text"), byref(out), byref(size)))
        try:
            text = ctypes.string_at(out.value or 0, size.value).decode()
        finally:
            lib.crec_free(out)
        if format == "text":
            return text
        report = json.loads(text)
        return import_page(report, title) if format == "html" else report


_PAGE_STYLE = """
body { font: 14px system-ui, sans-serif; margin: 1.5em; color: #1d2330; }
h1 { font-size: 1.3em; } table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccd3dd; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #eef2f7; } code { font-size: 0.95em; } .arg { font-weight: 600; color: #1f5fa8; }
"""


def import_page(report: dict[str, Any], title: str = "imported graph") -> str:
    """A self-contained HTML page of an import's JSON dump (``ImportedExec.dump("json")``):
    the counts, a table of the nodes rewritten at replays with each relocation (the byte of
    the kernel's parameters, or the copy's or fill's end, and the argument and offset it
    points to), and per argument the nodes that follow it. Every name is escaped."""
    from html import escape

    args = [str(a) for a in report.get("arguments", [])]
    nodes = report.get("relocated_nodes", [])
    uses: dict[str, list[str]] = {a: [] for a in args}

    def place(n: dict[str, Any]) -> str:
        # "path" names a node inside child graphs ("1.0.3"); older dumps have the index alone
        return str(n["path"]) if "path" in n else str(int(n.get("node", -1)))

    def order(label: str) -> tuple[int, ...]:
        return tuple(int(p) if p.lstrip("-").isdigit() else -1 for p in label.split("."))

    rows = []
    for n in nodes:
        what = escape(str(n.get("type", "?")))
        if n.get("type") == "kernel":
            name = n.get("kernel")
            what += f" <code>{escape(str(name))}</code>" if name else " (name unknown)"
            what += f"<br>{int(n.get('parameters', 0))} parameters, {int(n.get('parameter_bytes', 0))} bytes"
        cells = []
        for r in n.get("relocations", []):
            arg = str(r.get("argument", "?"))
            uses.setdefault(arg, []).append(place(n))
            where = f"byte +{int(r['byte'])}" if "byte" in r else escape(str(r.get("end", "?")))
            cells.append(f"{where} &rarr; <span class=\"arg\">{escape(arg)}</span>+{int(r.get('offset', 0))}")
        rows.append(f"<tr><td>{escape(place(n))}</td><td>{what}</td><td>{'<br>'.join(cells)}</td></tr>")
    routes = {str(r.get("argument")): r for r in report.get("routes", [])}
    copied = int(report.get("copied", 0))
    copied_note = f", {copied} of them copied at each launch" if copied else ""

    def route(a: str) -> str:
        r = routes.get(a)
        if r is None:
            return ""
        if r.get("route") == "copied":
            how = "copied in and back" if r.get("back") else "copied in"
            return f"<td>{how}</td><td>{escape(str(r.get('why', '')))}</td>"
        return f"<td>rebound</td><td>{int(r.get('relocations', 0))} words rewritten</td>"

    arg_rows = [f"<tr><td class=\"arg\">{escape(a)}</td><td>{', '.join(escape(i) for i in sorted(set(uses[a]), key=order)) or 'none'}"
                f"</td>{route(a)}</tr>" for a in uses]
    as_captured = report.get("as_captured", {})
    noise = int(as_captured.get("bytes", 0)) if isinstance(as_captured, dict) else 0
    places = as_captured.get("places", []) if isinstance(as_captured, dict) else []
    noise_rows = [f"<tr><td>{escape(str(p.get('node', '?')))}</td><td>"
                  f"{'extra buffer' if p.get('parameter') is None else 'parameter ' + str(int(p['parameter']))}</td>"
                  f"<td>byte {int(p.get('byte', 0))}, {int(p.get('size', 0))} bytes</td></tr>" for p in places]
    pdl = int(report.get("programmatic_edges", 0))
    pdl_note = (f" {pdl} of its {int(report.get('edges', 0))} edges are programmatic (kernels that use PDL), "
                "kept as captured." if pdl else "")
    return (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
        f"<title>crec: {escape(title)}</title><style>{_PAGE_STYLE}</style></head><body>\n"
        f"<h1>crec: {escape(title)}</h1>\n"
        f"<p>{int(report.get('nodes', 0))} nodes in the captured graph; {int(report.get('relocated', 0))} are rewritten "
        f"at each replay whose bindings moved, from {len(args)} arguments"
        f"{copied_note}.{pdl_note}</p>\n"
        "<h2>Nodes rewritten at replays</h2>\n<table><tr><th>node</th><th>what</th><th>relocations</th></tr>\n"
        + "\n".join(rows)
        + "\n</table>\n<h2>Arguments</h2>\n<table><tr><th>argument</th><th>nodes that follow it</th>"
        + ("<th>route</th><th>why</th>" if routes else "")
        + "</tr>\n"
        + "\n".join(arg_rows)
        + "\n</table>\n"
        + (f"<h2>Replayed as captured</h2>\n<p>{noise} bytes differed between the captures for no reason an argument "
           "explains (padding, empty structs, host addresses); each replay passes the first capture's.</p>\n"
           "<table><tr><th>node</th><th>where</th><th>bytes</th></tr>\n" + "\n".join(noise_rows) + "\n</table>\n"
           if noise else "")
        + "</body></html>\n"
    )


def _exec_of(ptr: int, specs: list[_ArgSpec]) -> ImportedExec:
    return ImportedExec(ptr, _Signature.of_arguments(specs))


def import_graph(
    graph: int,
    arguments: Sequence[tuple[str, Any]],
    *,
    second_graph: int | None = None,
    second: Sequence[Any] | None = None,
    third_graph: int | None = None,
    third: Sequence[Any] | None = None,
    written: Sequence[bool] | None = None,
    device: int = 0,
    variants: int = 1,
) -> ImportedExec:
    """``crec_import_graph``: imports `graph` (a ``CUgraph``/``cudaGraph_t`` as an int, e.g.
    ``torch.cuda.CUDAGraph(keep_graph=True).raw_cuda_graph()``), made with `arguments`:
    (name, buffer) pairs, a buffer being an ``(address, size)`` pair, a
    :class:`crec.DeviceBuffer`, an object with ``__cuda_array_interface__`` or DLPack.
    `second_graph` is the same work made with the buffers `second` (one per argument), and
    `third_graph` with `third`: the evidence that tells pointers from numbers (displace
    each argument by a multiple of 2 MiB). `written` says per argument whether the work
    writes it (default: all), so that an argument crec copies is copied back only then.
    The caller keeps the graphs. :attr:`ImportedExec.routes` says which arguments are
    rebound and which copied, and why. `variants` > 1 keeps that many executable graphs
    (``crec_record_options.variants``), for bindings that rotate among that many sets."""
    arr, keep, specs = _arguments(arguments)
    bases, keep2 = _bases(second, specs, "second")
    bases3, keep3 = _bases(third, specs, "third")
    if (second_graph is None) != (second is None):
        raise ValueError("give second_graph and second together, or neither")
    if (third_graph is None) != (third is None):
        raise ValueError("give third_graph and third together, or neither")
    if third_graph is not None and second_graph is None:
        raise ValueError("third_graph needs second_graph")
    access = None
    if written is not None:
        if len(written) != len(specs):
            raise ValueError(f"written: {len(written)} given for {len(specs)} arguments")
        access = (ctypes.c_int * max(1, len(specs)))(*[3 if w else 1 for w in written])
    imp = _lib.GraphImport()
    imp.struct_size = ctypes.sizeof(imp)
    imp.graph = graph or None
    imp.arguments = ctypes.cast(arr, POINTER(_lib.GraphArgument))
    imp.num_arguments = len(specs)
    imp.second = second_graph or None
    imp.second_bases = ctypes.cast(bases, POINTER(c_void_p)) if bases is not None else None
    imp.third = third_graph or None
    imp.third_bases = ctypes.cast(bases3, POINTER(c_void_p)) if bases3 is not None else None
    imp.access = ctypes.cast(access, POINTER(ctypes.c_int)) if access is not None else None
    out = c_void_p()
    opts = _options(device, variants)
    _lib.check(_lib.load().crec_import_graph(byref(imp), byref(opts), byref(out)))
    del keep, keep2, keep3
    return _exec_of(out.value or 0, specs)


def capture_import(
    fn: Callable[[int, list[int]], None],
    arguments: Sequence[tuple[str, Any]],
    *,
    stream: Any,
    second: Sequence[Any] | None = None,
    device: int = 0,
) -> ImportedExec:
    """``crec_capture_import``: calls ``fn(stream_handle, addresses)`` inside a capture of
    `stream`, once with the arguments' addresses and, when `second` is given (buffers of the
    same sizes), once with those; then imports the first capture. `fn` must only issue work
    on the stream (no synchronization). An exception in `fn` ends the capture and is raised
    again."""
    arr, keep, specs = _arguments(arguments)
    bases, keep2 = _bases(second, specs, "second")
    raised: list[BaseException] = []

    def call(user: Any, s: Any, addrs: Any) -> int:
        try:
            fn(int(s or 0), [int(addrs[i] or 0) for i in range(len(specs))])
            return 0
        except BaseException as e:  # noqa: BLE001 - reported after the capture ends
            raised.append(e)
            return int(Status.ERR_HOST_FUNCTION)

    cb = _lib.CAPTURE_FN(call)
    out = c_void_p()
    opts = _options(device)
    status = _lib.load().crec_capture_import(
        cb, None, stream_handle(stream), ctypes.cast(arr, POINTER(_lib.GraphArgument)), len(specs),
        ctypes.cast(bases, POINTER(c_void_p)) if bases is not None else None, byref(opts), byref(out))
    del keep, keep2
    if raised:
        raise raised[0]
    _lib.check(status)
    return _exec_of(out.value or 0, specs)


def capture_begin(stream: Any) -> None:
    """``crec_capture_begin``: starts capturing the work issued to `stream`."""
    _lib.check(_lib.load().crec_capture_begin(stream_handle(stream)))


def capture_end(stream: Any) -> int:
    """``crec_capture_end``: ends the capture; returns the graph (an int), which the caller
    destroys with :func:`graph_destroy` once imported."""
    out = c_void_p()
    _lib.check(_lib.load().crec_capture_end(stream_handle(stream), byref(out)))
    return out.value or 0


def graph_destroy(graph: int) -> None:
    """``crec_graph_destroy``: destroys a graph from :func:`capture_end`."""
    _lib.load().crec_graph_destroy(graph or None)


