#!/usr/bin/env python3
"""Captured PyTorch work replayed four ways, side by side in one run (issue 15's table):

- eager: the module called as it is;
- torch graph: ``torch.cuda.graph`` replayed on its static input;
- torch graph + copy_: each new input copied into the static one, then replayed (what
  PyTorch's documentation has users do);
- crec: ``crec.torch.graph``, each new input rebound in place (no copy).

Rows: a ``torch.nn.TransformerEncoderLayer`` (d_model 256, 4 heads, 32 tokens) at batch
1, 8 and 64, a ``torch.compile``'d block (a GEMM, GELU, the residual and LayerNorm) and a
chain of 8 Triton kernels. crec keeps one executable graph, updated in place for each
new input (the default). A second table says where a crec call's host time goes: with
one input every call, through the call written in Python over ctypes instead of the
compiled one (and that path's Python side alone), and with four executable graphs
(``variants=4``, inputs rotating among them with nothing to update) instead of one,
with the GPU time of those four and of crec called on one input every call (no
update), timed in turns with the first table's columns. Inputs rotate among 3 tensors. Each cell is
the median wall time per call in microseconds, measured with CUDA events over `--iters`
calls after a warm-up; then crec's ratios to the two graph columns. The "host" columns
are what one call costs the CPU (enqueueing only, timed with perf_counter), for the
torch graph's replay() and for crec: where the GPU's work is shorter than that, the call's
host cost is its time.

    PYTHONPATH=python CREC_LIBRARY_PATH=build python3 tools/bench/torch_capture.py [--iters N] [--json FILE]

Needs a CUDA device and PyTorch (Triton for the last row, which is skipped without it).
Every crec output is checked against eager before anything is timed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import sys
from collections.abc import Callable
from typing import Any


def medians_us(steps: dict[str, Callable[[int], Any]], iters: int, torch: Any) -> dict[str, float]:
    """Median per-call GPU time of each step(i) over `iters` calls, timed with CUDA events in
    batches of 10 calls. The steps take turns, one batch each per round, so that the GPU's
    clock and temperature drifting over the run weigh on every column alike (timed one
    after another, a 900 us model's columns drifted 2% apart)."""
    for step in steps.values():
        for i in range(20):
            step(i)
    torch.cuda.synchronize()
    times: dict[str, list[float]] = {k: [] for k in steps}
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for b in range(max(1, iters // 10)):
        for k, step in steps.items():
            start.record()
            for i in range(10):
                step(b * 10 + i)
            end.record()
            end.synchronize()
            times[k].append(start.elapsed_time(end) * 1000.0 / 10)
    return {k: statistics.median(v) for k, v in times.items()}


def median_us(step: Callable[[int], Any], iters: int, torch: Any) -> float:
    """Median per-call GPU time of step(i) over `iters` calls (medians_us of one step)."""
    return medians_us({"step": step}, iters, torch)["step"]


def host_us(step: Callable[[int], Any], iters: int, torch: Any) -> float:
    """Median host time of one call of step(i), in batches of 10 calls that only enqueue
    (synchronized between batches): what a call costs the CPU, whatever the GPU's time."""
    for i in range(20):
        step(i)
    times = []
    for b in range(max(1, iters // 10)):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(10):
            step(b * 10 + i)
        times.append((time.perf_counter() - t0) * 1e6 / 10)
    torch.cuda.synchronize()
    return statistics.median(times)


def triton_chain(torch: Any) -> Callable[[Any], Any] | None:
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None

    @triton.jit
    def axpb(x_ptr, y_ptr, n, a, b, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = i < n
        tl.store(y_ptr + i, tl.load(x_ptr + i, mask=m) * a + b, mask=m)

    def chain(x: Any) -> Any:
        n = x.numel()
        cur = x
        for k in range(8):
            out = torch.empty_like(cur)
            axpb[(triton.cdiv(n, 1024),)](cur, out, n, 1.0 + k * 0.01, 0.5, BLOCK=1024)
            cur = out
        return cur

    return chain


def row(name: str, fn: Callable[[Any], Any], make: Callable[[], Any], iters: int, torch: Any) -> dict[str, Any]:
    import crec.torch as ct

    inputs = [make() for _ in range(3)]
    with torch.no_grad():
        graphed = ct.graph(fn, inputs[0])
        for x in inputs:  # correctness first: crec against eager, for each input
            torch.testing.assert_close(graphed(x), fn(x), rtol=1e-4, atol=1e-4)
        static = inputs[0].clone()
        for _ in range(2):
            fn(static)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn(static)
        # four executable graphs, one per input set (nothing to update, a switch per call)
        four = ct.graph(fn, inputs[0], variants=4)
        cells = medians_us({
            "eager": lambda i: fn(inputs[i % 3]),
            "torch_graph": lambda i: g.replay(),
            "torch_graph_copy": lambda i: (static.copy_(inputs[i % 3]), g.replay()),
            "crec": lambda i: graphed(inputs[i % 3]),
            "crec_v4": lambda i: four(inputs[i % 3]),
            "crec_same": lambda i: graphed(inputs[0]),
        }, iters, torch)
        cells.update({
            "torch_graph_host": host_us(lambda i: g.replay(), iters, torch),
            "crec_host": host_us(lambda i: graphed(inputs[i % 3]), iters, torch),
        })
        # where a crec call's host time goes: the same input each call (no update, no
        # graph switch); the call written in Python over ctypes instead of the compiled
        # one (crec/_crec_fast, where the package has it), and that path's Python side
        # alone (the C call replaced by one that returns at once); four executable graphs
        cells["crec_host_same"] = host_us(lambda i: graphed(inputs[0]), iters, torch)
        fast, replay = graphed._fast, graphed._replay
        graphed._fast = None
        cells["ctypes_host"] = host_us(lambda i: graphed(inputs[i % 3]), iters, torch)
        graphed._replay = lambda *a: 0
        cells["python_host"] = host_us(lambda i: graphed(inputs[i % 3]), iters, torch)
        graphed._fast, graphed._replay = fast, replay
        cells["crec_v4_host"] = host_us(lambda i: four(inputs[i % 3]), iters, torch)
        four.close()
    counts = graphed.exec.import_counts
    graphed.close()
    cells["name"] = name
    cells["nodes"] = counts.nodes
    cells["relocated"] = counts.relocated
    return cells


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iters", type=int, default=1000, help="timed calls per cell (default 1000)")
    ap.add_argument("--json", help="also write the rows to this file")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("torch_capture.py: PyTorch is not installed", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("torch_capture.py: PyTorch sees no CUDA device", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    block = torch.nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True).cuda().eval()
    rows = []
    for batch in (1, 8, 64):
        rows.append(row(f"transformer block, batch {batch}", block,
                        lambda b=batch: torch.randn(b, 32, 256, device="cuda"), args.iters, torch))
    # a torch.compile'd block: a GEMM, GELU, the residual and LayerNorm (64 x 512, f32)
    w = torch.randn(512, 512, device="cuda") / 20
    ln = torch.nn.LayerNorm(512).cuda()
    compiled = torch.compile(lambda x: ln(torch.nn.functional.gelu(x @ w) + x))
    rows.append(row("torch.compile'd block", compiled, lambda: torch.randn(64, 512, device="cuda"), args.iters, torch))
    chain = triton_chain(torch)
    if chain is None:
        print("(no Triton: the Triton chain row is skipped)")
    else:
        rows.append(row("Triton chain of 8 kernels", chain, lambda: torch.randn(1 << 20, device="cuda"),
                        args.iters, torch))
    print(f"{'work':34} {'eager':>9} {'graph':>9} {'g+copy_':>9} {'crec':>9} {'crec/graph':>11} "
          f"{'crec/g+copy_':>13} {'nodes':>6} {'rebound':>8} | {'host: graph':>11} {'crec':>7}"
          "   (us per call, median)")
    for r in rows:
        print(f"{r['name']:34} {r['eager']:9.1f} {r['torch_graph']:9.1f} {r['torch_graph_copy']:9.1f} "
              f"{r['crec']:9.1f} {r['crec'] / r['torch_graph']:11.3f} {r['crec'] / r['torch_graph_copy']:13.3f} "
              f"{r['nodes']:6d} {r['relocated']:8d} | {r['torch_graph_host']:11.1f} {r['crec_host']:7.1f}")
    print("host: what one call costs the CPU (enqueue only); the other columns are GPU stream time per call")
    from crec import _lib

    path = "compiled (crec/_crec_fast)" if _lib.fast() is not None else f"ctypes ({_lib.fast_why()})"
    print(f"\n{'where crec host time goes':34} {'rotating':>9} {'same in':>9} {'ctypes':>9} {'python':>9} "
          f"{'C+driver':>9} {'4 graphs':>9} {'4 graphs GPU':>13} {'same in GPU':>12}")
    for r in rows:
        print(f"{r['name']:34} {r['crec_host']:9.1f} {r['crec_host_same']:9.1f} {r['ctypes_host']:9.1f} "
              f"{r['python_host']:9.1f} {r['ctypes_host'] - r['python_host']:9.1f} {r['crec_v4_host']:9.1f} "
              f"{r['crec_v4']:13.1f} {r['crec_same']:12.1f}")
    print(f"rotating: 3 inputs in turn, one executable graph updated in place (the default), through the call path "
          f"the package uses, here {path}; same in: one input every call; ctypes: the call written in Python over "
          "ctypes; python: its Python side alone; C+driver: ctypes less python; 4 graphs: variants=4, each input "
          "set in its own graph, nothing updated (host, then GPU time); the GPU columns took turns with the first "
          "table's")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"iters": args.iters, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
