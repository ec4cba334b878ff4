"""Record, replay and eager runs on a device (each test skips, saying why, without one).

Replays are checked against numpy math and against the eager executor, byte for
byte, over many replays with rotated buffers."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

import crec

pytestmark = pytest.mark.gpu
np = pytest.importorskip("numpy")

REPO = Path(__file__).resolve().parents[2]
SAXPY = REPO / "tests" / "mlir" / "saxpy.mlir"
N = 1024


def upload(a: "np.ndarray") -> crec.DeviceBuffer:
    buf = crec.DeviceBuffer(a.nbytes)
    buf.copy_from(np.ascontiguousarray(a))
    return buf


def download(buf: crec.DeviceBuffer, dtype: str = "float32") -> "np.ndarray":
    return np.frombuffer(buf.to_bytes(), dtype=dtype).copy()


def test_devices() -> None:
    assert crec.device_count() >= 1
    info = crec.describe_device(0)
    assert info.name and info.major >= 3
    assert crec.driver_version() >= 12000
    assert crec.device_unavailable_reason() == ""


def test_memory_and_copies() -> None:
    data = np.arange(256, dtype=np.float32)
    with crec.DeviceBuffer(data.nbytes) as d, crec.HostBuffer(data.nbytes) as h:
        d.copy_from(data)
        assert np.array_equal(download(d), data)
        crec.copy(h, d, data.nbytes)
        assert np.array_equal(np.frombuffer(h.view(), dtype=np.float32), data)
        d.copy_from(b"\x00" * 16, offset=16)
        assert np.array_equal(download(d)[4:8], np.zeros(4, np.float32))
        with pytest.raises(ValueError):
            d.copy_from(data, offset=4)
    assert d.closed and h.closed


def test_saxpy_replays_with_rotated_buffers_equal_numpy_and_eager() -> None:
    rng = np.random.default_rng(1)
    # integer-valued inputs and power-of-two scales: exact in f32, with or without FMA
    xs = [rng.integers(-100, 100, N).astype(np.float32) for _ in range(3)]
    ys = [rng.integers(-100, 100, N).astype(np.float32) for _ in range(3)]
    dx = [upload(x) for x in xs]
    dy = [upload(y) for y in ys]
    expected = [y.copy() for y in ys]
    gc.collect()
    baseline = crec.live_objects()
    with crec.lower_file(SAXPY) as program, crec.Stream() as stream:
        exec_ = program.record([dx[0], dy[0]], [2.0])
        with exec_:
            replays = 30
            for i in range(replays):
                k = i % 3
                a = (2.0, 0.5, -1.0, 4.0)[i % 4]
                exec_.replay({"x": dx[k], "y": dy[k]}, {"a": a}, stream=stream)
                stream.synchronize()
                expected[k] = np.float32(a) * xs[k] + expected[k]
                assert np.array_equal(download(dy[k]), expected[k]), f"replay {i}"
            s = exec_.stats
            assert s.replays == replays and s.nodes == 1
            assert s.nodes_updated >= replays - 1 and s.last_nodes_updated == 1
            exec_.replay([dx[0], dy[0]], [2.0], stream=stream)  # same bindings as last time but one
            exec_.replay([dx[0], dy[0]], [2.0], stream=stream)  # nothing changed: no update
            stream.synchronize()
            assert exec_.stats.last_nodes_updated == 0 and exec_.stats.updates_skipped >= 1
            expected[0] = np.float32(2.0) * xs[0] + (np.float32(2.0) * xs[0] + expected[0])
            assert np.array_equal(download(dy[0]), expected[0])

            # the eager executor on copies of the same inputs gives the same bytes
            ey = upload(expected[1])
            replay_y = upload(expected[1])
            program.run_eager([dx[1], ey], [0.5], stream=stream)
            exec_.replay([dx[1], replay_y], [0.5], stream=stream)
            stream.synchronize(timeout=30)  # the same wait, with a deadline it does not reach
            assert ey.to_bytes() == replay_y.to_bytes()
            assert np.array_equal(download(ey), np.float32(0.5) * xs[1] + expected[1])
            ey.close()
            replay_y.close()
    gc.collect()
    assert crec.live_objects() == baseline
    for b in dx + dy:
        b.close()


def test_binding_errors_name_the_binding_and_leave_the_exec_usable() -> None:
    x, y = upload(np.ones(N, np.float32)), upload(np.zeros(N, np.float32))
    with crec.lower_file(SAXPY) as program, program.record([x, y], [1.0]) as e:
        with pytest.raises(crec.BindingError) as info:
            e.replay([(x.ptr, 100), y], [1.0])
        assert "'x'" in info.value.message and "100" in info.value.message
        with pytest.raises(crec.BindingError):
            e.replay([x], [1.0])  # one binding short
        e.replay([x, y], [3.0])
        crec.synchronize()
        assert np.array_equal(download(y), np.full(N, 3.0, np.float32))
    x.close()
    y.close()


def test_dynamic_sizes_through_the_buffers_own_size() -> None:
    with crec.lower_file(REPO / "examples" / "dynamic.mlir") as program:
        first = upload(np.arange(1000, dtype=np.float32))
        with program.record([first]) as e:
            for n in (1000, 100_000, 12345):
                x = np.arange(n, dtype=np.float32)
                buf = upload(x)
                e.replay([buf])
                crec.synchronize()
                assert np.array_equal(download(buf), 2 * x + 1), n
                buf.close()
            with pytest.raises(ValueError, match="dynamic size"):
                e.replay([first.ptr])
        first.close()


def test_cuda_dot(tmp_path: Path) -> None:
    x, y = crec.DeviceBuffer(4 * N), crec.DeviceBuffer(4 * N)
    with crec.lower_file(SAXPY) as program, program.record([x, y], [1.0]) as e:
        e.dump_cuda_dot(tmp_path / "g.dot")
        assert "digraph" in (tmp_path / "g.dot").read_text()
    x.close()
    y.close()


def test_cupy_arrays_by_cuda_array_interface() -> None:
    cp = pytest.importorskip("cupy")
    xs = [cp.arange(N, dtype=cp.float32) * (k + 1) for k in range(2)]
    ys = [cp.ones(N, dtype=cp.float32) * k for k in range(2)]
    stream = cp.cuda.Stream(non_blocking=True)
    with crec.lower_file(SAXPY) as program, program.record([xs[0], ys[0]], [2.0]) as e:
        for i in range(10):
            k = i % 2
            want = 2.0 * xs[k] + ys[k]
            e.replay([xs[k], ys[k]], [2.0], stream=stream)
            stream.synchronize()
            assert bool(cp.all(ys[k] == want)), i


def test_torch_tensors_by_dlpack_and_torch_streams() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    xs = [torch.arange(N, dtype=torch.float32, device="cuda") + k for k in range(3)]
    ys = [torch.full((N,), float(k), device="cuda") for k in range(3)]
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    with crec.lower_file(SAXPY) as program:
        with program.record([torch.utils.dlpack.to_dlpack(xs[0]), ys[0]], [0.5]) as e:
            for i in range(12):
                k = i % 3
                want = 0.5 * xs[k] + ys[k]
                torch.cuda.synchronize()
                # a tensor (its __dlpack__) and a raw capsule both bind
                e.replay([xs[k], torch.utils.dlpack.to_dlpack(ys[k])], [0.5], stream=stream)
                stream.synchronize()
                assert torch.equal(ys[k], want), i
        with pytest.raises(ValueError, match="CPU memory"):
            program.record([torch.zeros(N), ys[0]], [1.0])


@pytest.mark.parametrize("device_updates,variants", [(False, 1), (True, 1), (False, 3)])
def test_bind_as_you_go_equals_numpy(device_updates: bool, variants: int) -> None:
    rng = np.random.default_rng(2)
    xs = [rng.integers(-100, 100, N).astype(np.float32) for _ in range(3)]
    ys = [rng.integers(-100, 100, N).astype(np.float32) for _ in range(3)]
    dx, dy = [upload(x) for x in xs], [upload(y) for y in ys]
    expected = [y.copy() for y in ys]
    with crec.lower_file(SAXPY) as program, crec.Stream() as stream:
        # "device": the updater takes every change (the cost model would leave one node to the host)
        strategy = "device" if device_updates else "auto"
        with program.record(
            [dx[0], dy[0]], [1.0], device_updates=device_updates, update_strategy=strategy, variants=variants
        ) as e:
            a = 1.0
            for i in range(24):
                kx, ky = i % 3, (i // 3) % 3
                e.bind("x", dx[kx])
                if i % 2:
                    e.bind(1, dy[ky])  # by index
                else:
                    e.bind("y", dy[ky])
                if i % 4 == 0:
                    a = (2.0, 0.5, -1.0)[(i // 4) % 3]
                    e.bind_scalar("a", a)
                e.launch(stream)
                stream.synchronize()
                expected[ky] = np.float32(a) * xs[kx] + expected[ky]
                assert np.array_equal(download(dy[ky]), expected[ky]), f"launch {i}"
            s = e.stats
            assert s.launches == 24 and s.replays == 24
            if device_updates and crec.describe_device(0).major >= 8:
                assert s.device_nodes == 1 and s.device_node_updates > 0
            assert s.variants == variants
            if variants > 1:
                assert s.variant_switches > 0
            with pytest.raises(crec.BindingError):
                e.bind("x", (dx[0].ptr, 100))
            with pytest.raises(ValueError, match="no argument 'z'"):
                e.bind("z", dx[0])
            e.bind("y", dy[2])
            e.clear_bindings()  # y stays where the last launch had it
            e.launch(stream)
            stream.synchronize()
            expected[ky] = np.float32(a) * xs[kx] + expected[ky]
            assert np.array_equal(download(dy[ky]), expected[ky])
    for b in dx + dy:
        b.close()


def test_profile_exec_gives_the_kernel_its_device_time() -> None:
    x, y = upload(np.ones(N, np.float32)), upload(np.zeros(N, np.float32))
    with crec.lower_file(SAXPY) as program, crec.Stream() as stream:
        with program.record([x, y], [2.0]) as exec_:
            try:
                prof = crec.profile_exec(exec_, [x, y], [2.0], stream=stream, iters=5, name="saxpy")
            except crec.UnsupportedError as e:
                pytest.skip(f"no CUPTI: {e}")
            t = prof.command(0)
            assert t.ran and t.device_us.p50 > 0, t
            assert prof.summary.replays == 5
            report = prof.dump_json()
            assert report["commands"], report
            # the warm-up, 5 plain and 5 profiled replays all ran: y = 11 * 2x
            assert np.array_equal(download(y), np.full(N, 22.0, np.float32))
            prof.close()
    with pytest.raises(TypeError, match="a crec.Exec from crec.record"):
        crec.profile_exec(object())
    x.close()
    y.close()
