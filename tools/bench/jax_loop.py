#!/usr/bin/env python3
"""The Jacobi solve of examples/jacobi.mlir under ``jax.jit`` two ways, side by side in one run:

- crec: ``crec.jax.call`` of the program, whose loop is a CUDA conditional WHILE node (the
  condition computed on the device, the whole solve one graph launch);
- JAX: the same iteration written as a ``jax.lax.while_loop`` (XLA's own loop: a condition
  copied to the host, or a command buffer's conditional node, as XLA chooses).

Both solve A x = b for the 256 x 256 tridiagonal A (4 on the diagonal, -1 beside it) from
x = 0, sweeping until the largest residual is below `tol` or 1000 sweeps ran. An XLA custom
call binds buffers alone, so the program's scalar `tol` becomes a constant of the MLIR (the
text is rewritten here, checked). Both results are checked against each other (the sweeps
equal, x within 1e-5) before anything is timed, then each jitted function is timed: wall
microseconds per call, each call waited for (``block_until_ready``), median over `--iters`
calls after a warm-up, the two taking turns in batches of 10 so that the GPU's drift falls on
both. `--tol` sets the tolerance: 1e-4 takes 14 sweeps, 1e-30 the whole 1000.

    PYTHONPATH=python CREC_LIBRARY_PATH=build python3 tools/bench/jax_loop.py [--tol T] [--iters N] [--json FILE]

Needs a CUDA device, JAX with CUDA and crec's MLIR front end.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

N = 256
MAX_SWEEPS = 1000
JACOBI = Path(__file__).resolve().parents[2] / "examples" / "jacobi.mlir"


def jacobi_with_constant_tol(text: str, tol: float) -> str:
    """examples/jacobi.mlir with its scalar argument `tol` made a constant of @main."""
    text, n = re.subn(r',\s*%tol: f32 \{crec\.name = "tol"\}\)', ")", text)
    if n != 1:
        raise ValueError(f"{JACOBI}: @main's last argument is not written as '%tol: f32 {{crec.name = \"tol\"}}'")
    main = text.find("func.func @main(")
    at = text.find(") {\n", main)
    if main < 0 or at < 0:
        raise ValueError(f"{JACOBI}: no func.func @main body found")
    at += len(") {\n")
    return text[:at] + f"    %tol = arith.constant {tol:.9e} : f32\n" + text[at:]


def jax_solve(jnp: Any, lax: Any, tol: float) -> Callable[[Any], Any]:
    """The iteration of jacobi.mlir in JAX: residual first, then sweeps while it is too big."""

    def residual(x: Any, b: Any) -> Any:
        left = jnp.concatenate([jnp.zeros(1, x.dtype), x[:-1]])
        right = jnp.concatenate([x[1:], jnp.zeros(1, x.dtype)])
        return jnp.max(jnp.abs(b - (4 * x - left - right)))

    def solve(b: Any) -> Any:
        def cond(s: Any) -> Any:
            _, k, r = s
            return (r >= tol) & (k < MAX_SWEEPS)

        def body(s: Any) -> Any:
            x, k, _ = s
            left = jnp.concatenate([jnp.zeros(1, x.dtype), x[:-1]])
            right = jnp.concatenate([x[1:], jnp.zeros(1, x.dtype)])
            xn = (b + left + right) * 0.25
            return xn, k + 1, residual(xn, b)

        x0 = jnp.zeros(N, jnp.float32)
        return lax.while_loop(cond, body, (x0, jnp.int32(0), residual(x0, b)))

    return solve


def medians_us(steps: dict[str, Callable[[], Any]], iters: int) -> dict[str, float]:
    """Median wall us per call of each step (each call waited for), the steps taking turns in batches of 10."""
    for step in steps.values():
        for _ in range(10):
            step().block_until_ready()
    times: dict[str, list[float]] = {k: [] for k in steps}
    for _ in range(max(1, iters // 10)):
        for k, step in steps.items():
            for _ in range(10):
                t0 = time.perf_counter()
                step().block_until_ready()
                times[k].append((time.perf_counter() - t0) * 1e6)
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tol", type=float, default=1e-4, help="the residual to stop at (default 1e-4: 14 sweeps)")
    ap.add_argument("--iters", type=int, default=200, help="calls timed per column")
    ap.add_argument("--json", help="write the row to this file")
    args = ap.parse_args()
    try:
        import jax
        import jax.numpy as jnp
        from jax import lax
    except ImportError as e:
        print(f"jax_loop.py: JAX is not installed ({e})", file=sys.stderr)
        return 2
    if not any(d.platform == "gpu" for d in jax.devices()):
        print(f"jax_loop.py: JAX sees no GPU ({jax.devices()})", file=sys.stderr)
        return 2
    import numpy as np

    import crec
    import crec.jax

    program = crec.lower_string(jacobi_with_constant_tol(JACOBI.read_text(), args.tol), filename="jacobi.mlir, tol a constant")
    names = [a.name for a in program.arguments]
    if names != ["b", "x", "sweeps", "residual"]:
        raise SystemExit(f"jax_loop.py: jacobi's arguments are {names}, not b, x, sweeps, residual")
    outs = (jax.ShapeDtypeStruct((N,), jnp.float32), jax.ShapeDtypeStruct((), jnp.int32),
            jax.ShapeDtypeStruct((), jnp.float32))
    via_crec = jax.jit(lambda b: crec.jax.call(program, b, outputs=outs))
    via_jax = jax.jit(jax_solve(jnp, lax, args.tol))
    b = jnp.ones(N, jnp.float32)

    x_c, k_c, r_c = via_crec(b)
    x_j, k_j, r_j = via_jax(b)
    k_c, k_j = int(k_c), int(k_j)
    worst = float(np.max(np.abs(np.asarray(x_c) - np.asarray(x_j))))
    if k_c != k_j or worst > 1e-5:
        print(f"jax_loop.py: crec and JAX disagree: {k_c} against {k_j} sweeps, x differs by up to {worst:g}",
              file=sys.stderr)
        return 1
    t = medians_us({"crec": lambda: via_crec(b)[0], "jax": lambda: via_jax(b)[0]}, args.iters)
    row = {"tol": args.tol, "sweeps": k_c, "residual": float(r_c), "crec_us": t["crec"], "jax_while_loop_us": t["jax"],
           "device": str(jax.devices()[0]), "jax": jax.__version__}
    print(f"jacobi, 256 unknowns, tol {args.tol:g}: {k_c} sweeps (residual {float(r_c):.3g}); both agree "
          f"(x within {worst:.2g})")
    print(f"us per call (wall, waited for, median of {max(1, args.iters // 10) * 10}): crec.jax.call {t['crec']:.1f}, "
          f"jax.lax.while_loop {t['jax']:.1f}; crec / JAX {t['crec'] / t['jax']:.3f}; "
          f"per sweep {t['crec'] / max(1, k_c):.2f} against {t['jax'] / max(1, k_j):.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(row, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
