"""crec.jax: a crec exec inside jax.jit, as an XLA FFI custom call.

Without JAX, only the import is tested. With JAX and no GPU, XLA's CPU runtime drives
crec's handler through the same FFI (registered for the CPU platform, where it refuses
before asking for a stream): registration (the metadata query), the call frame, the
attributes, the buffers and the errors, against the real ABI. The GPU tests run a
crec program inside jax.jit and compare with numpy and with JAX itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import crec
import crec.jax  # needs no JAX

REPO = Path(__file__).resolve().parents[2]
CHAIN = REPO / "examples" / "chain.mlir"  # y = (2x + 1)^2 over 4096 f32; t and u are temporaries
N = 4096


def test_imports_without_jax() -> None:
    """`import crec.jax` works where JAX is missing (as in CI); calling it says what is missing."""
    code = (
        "import sys\n"
        "sys.modules['jax'] = None  # as if not installed, even where it is\n"
        "import crec.jax\n"
        "assert crec.jax.TARGET == 'crec_replay'\n"
        "try:\n"
        "    crec.jax.register()\n"
        "except ImportError as e:\n"
        "    print('refused:', e)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "python"), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "refused:" in out.stdout and "jax" in out.stdout


def _jax():
    return pytest.importorskip("jax", reason="JAX is not installed")


def _chain() -> crec.Program:
    try:
        return crec.lower_file(CHAIN)
    except crec.UnsupportedError as e:
        pytest.skip(f"no MLIR front end: {e}")


def test_call_checks_count_and_sizes_at_trace_time() -> None:
    jax = _jax()
    import jax.numpy as jnp

    program = _chain()
    out = jax.ShapeDtypeStruct((N,), jnp.float32)
    x = jnp.zeros(N, jnp.float32)
    with pytest.raises(ValueError, match=r"2 arrays and 1 outputs, but the program has 2 arguments \(x, y\)"):
        crec.jax.call(program, x, x, outputs=out)
    with pytest.raises(ValueError, match=r"output 0 \(float32\[4095\]\) binds argument 1 \('y'\): 16380 bytes, 16384"):
        jax.jit(lambda x: crec.jax.call(program, x, outputs=jax.ShapeDtypeStruct((N - 1,), jnp.float32)))(x)
    with pytest.raises(TypeError, match="crec.Exec or crec.Program"):
        crec.jax.call(object(), x, outputs=out)


def test_handler_under_xla_s_cpu_runtime() -> None:
    """The handler registered for XLA's CPU platform: registration asks for its metadata,
    and each call's frame, attributes and buffers reach it as the ABI lays them out (the
    refusal names the shapes XLA passed). On the CPU it refuses before any stream."""
    jax = _jax()
    import jax.numpy as jnp
    import numpy as np

    crec.jax.register("cpu")
    crec.jax.register("cpu")  # once is enough: a second call does nothing
    cpu = jax.devices("cpu")[0]
    x = jax.device_put(jnp.arange(8, dtype=jnp.float32), cpu)
    out = jax.ShapeDtypeStruct((2, 4), jnp.bfloat16)

    def run(**attrs):
        f = jax.jit(lambda x: jax.ffi.ffi_call(crec.jax.TARGET, out)(x, jnp.int8(3), **attrs))  # on the CPU: x is there
        with pytest.raises(Exception) as e:
            jax.block_until_ready(f(x))
        return str(e.value)

    msg = run(exec=np.uint64(0))
    assert "crec_xla_ffi_handler: attribute 'exec' is 0 (NULL)" in msg
    assert "2 arguments (f32[8], s8[]) and 1 result (bf16[2,4])" in msg
    assert "no attribute 'exec'" in run(other=np.int32(1))
    assert "'exec' is a scalar of f32" in run(exec=np.float32(1))


def _jax_gpu():
    jax = _jax()
    try:
        gpus = jax.devices("gpu")
    except RuntimeError as e:
        pytest.skip(f"JAX has no GPU backend: {e}")
    if not gpus:
        pytest.skip("JAX sees no GPU")
    return jax


@pytest.mark.gpu
def test_a_program_inside_jit_equals_numpy_and_jax() -> None:
    jax = _jax_gpu()
    import jax.numpy as jnp
    import numpy as np

    program = _chain()
    out = jax.ShapeDtypeStruct((N,), jnp.float32)

    @jax.jit
    def f(x):
        return crec.jax.call(program, x, outputs=out)

    @jax.jit
    def g(x):  # crec's call between JAX's own ops
        return crec.jax.call(program, x * 2.0, outputs=out) - 1.0

    rng = np.random.default_rng(7)
    for i in range(3):
        # integer-valued inputs: (2x + 1)^2 is exact in f32, with or without FMA
        xs = rng.integers(-100, 100, N).astype(np.float32)
        x = jnp.asarray(xs)
        y = np.asarray(f(x))
        assert np.array_equal(y, (2 * xs + 1) ** 2), f"call {i}"
        assert np.array_equal(y, np.asarray((2 * x + 1) ** 2)), f"call {i} against JAX"
        assert np.array_equal(np.asarray(g(x)), (4 * xs + 1) ** 2 - 1), f"call {i} between JAX ops"
    ex = crec.jax._recorded[id(program)]
    assert ex.stats.replays == 6  # every call replayed the one exec, recorded once


@pytest.mark.gpu
def test_an_exec_given_by_the_caller_replays_each_call() -> None:
    jax = _jax_gpu()
    import jax.numpy as jnp
    import numpy as np

    program = _chain()
    x0, y0 = crec.DeviceBuffer(4 * N), crec.DeviceBuffer(4 * N)
    ex = crec.record(program, [x0, y0])
    f = jax.jit(lambda x: crec.jax.call(ex, x, outputs=[jax.ShapeDtypeStruct((N,), jnp.float32)]))
    for k in range(3):
        xs = np.full(N, float(k - 1), np.float32)
        (y,) = f(jnp.asarray(xs))
        assert np.array_equal(np.asarray(y), (2 * xs + 1) ** 2), f"call {k}"
    jax.block_until_ready(y)
    assert ex.stats.replays == 3
    assert crec.jax._kept[ex._handle][0] is ex  # kept for the process: compiled programs hold its address


_COMMAND_BUFFER_RUN = """
import sys
import jax, jax.numpy as jnp, numpy as np
import crec, crec.jax
program = crec.lower_file(sys.argv[1])
out = jax.ShapeDtypeStruct((4096,), jnp.float32)

@jax.jit
def f(x):  # crec's call twice, around JAX's own ops
    y = crec.jax.call(program, x * 2.0, outputs=out)
    return crec.jax.call(program, y - 1.0, outputs=out) + 3.0

rng = np.random.default_rng(11)
for i in range(5):  # XLA may run a program directly a few times before it makes its command buffer
    xs = rng.integers(-8, 8, 4096).astype(np.float32)  # exact in f32 through both calls
    want = (2 * ((4 * xs + 1) ** 2 - 1) + 1) ** 2 + 3
    got = np.asarray(f(jnp.asarray(xs)))
    assert np.array_equal(got, want), f"call {i}: {got[:4]} against {want[:4]}"
ex = crec.jax._recorded[id(program)]
print("replays", ex.stats.replays, "captured", ex.stats.captured_replays)
"""


@pytest.mark.gpu
@pytest.mark.parametrize("command_buffers", ["off", "on"])
def test_two_calls_around_jax_ops_with_command_buffers_on_and_off(command_buffers: str) -> None:
    """jax.jit of a function that calls crec twice around JAX ops equals the program's
    arithmetic, with XLA's command buffers off (XLA calls the handler at each run) and on
    for custom calls (XLA captures the graphable handler's replay into its own graph, and
    the replay joins that capture: captured_replays counts it). XLA_FLAGS is read when
    JAX starts, hence a process of its own."""
    _jax_gpu()
    _chain()
    flags = ("--xla_gpu_enable_command_buffer=" if command_buffers == "off" else
             "--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL --xla_gpu_graph_min_graph_size=1")
    env = dict(os.environ, XLA_FLAGS=flags, XLA_PYTHON_CLIENT_PREALLOCATE="false",
               PYTHONPATH=os.pathsep.join([str(REPO / "python"), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", _COMMAND_BUFFER_RUN, str(CHAIN)], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-4000:]
    counts = out.stdout.split()
    replays, captured = int(counts[counts.index("replays") + 1]), int(counts[counts.index("captured") + 1])
    if command_buffers == "off":
        assert (replays, captured) == (10, 0), out.stdout
    else:
        assert captured >= 2, f"XLA did not capture crec's calls into its command buffer: {out.stdout}"
