"""Imported graphs (crec/capture.h) from Python: the checks made before any CUDA call run
everywhere; the captures themselves need a device (and PyTorch for crec.torch) and skip,
saying why, without one."""

from __future__ import annotations

import pytest

import crec


def test_import_checks_its_arguments_before_any_cuda_call() -> None:
    with pytest.raises(crec.InvalidArgumentError, match="arguments 0 and 1 overlap"):
        crec.import_graph(0x1000, [("x", (0x2000, 64)), ("y", (0x2010, 64))])
    with pytest.raises(crec.NullPointerError, match="'in->graph' is NULL"):
        crec.import_graph(0, [("x", (0x2000, 64))])
    with pytest.raises(ValueError, match="give its size"):
        crec.import_graph(0x1000, [("x", 0x2000)])
    with pytest.raises(ValueError, match="smaller than argument 'x'"):
        crec.import_graph(0x1000, [("x", (0x2000, 64))], second_graph=0x1000, second=[(0x4000, 32)])
    with pytest.raises(ValueError, match="1 given for 2 arguments"):
        crec.import_graph(0x1000, [("x", (0x2000, 64)), ("y", (0x3000, 64))], second_graph=0x1000,
                          second=[(0x4000, 64)])
    with pytest.raises(ValueError, match="together"):
        crec.import_graph(0x1000, [("x", (0x2000, 64))], second=[(0x4000, 64)])
    with pytest.raises(crec.InvalidArgumentError, match="the second capture's base is an earlier capture's"):
        crec.import_graph(0x1000, [("x", (0x2000, 64))], second_graph=0x1000, second=[(0x2000, 64)])
    with pytest.raises(TypeError, match="sequence of"):
        crec.import_graph(0x1000, "x")  # type: ignore[arg-type]


def test_the_legacy_stream_cannot_be_captured() -> None:
    with pytest.raises(crec.NullPointerError, match="the legacy stream cannot be captured"):
        crec.capture_import(lambda s, a: None, [("x", (0x2000, 64))], stream=None)
    with pytest.raises(crec.NullPointerError, match="the legacy stream cannot be captured"):
        crec.capture_begin(None)


def test_without_a_driver_an_import_says_so() -> None:
    if crec.device_available():
        pytest.skip("a CUDA device is present: this checks the path without one")
    with pytest.raises(crec.NoDeviceError, match="crec_import_graph"):
        crec.import_graph(0x1000, [("x", (0x2000, 64))])


def test_the_import_page_shows_each_relocation_and_escapes_names() -> None:
    # the JSON ImportedExec.dump("json") gives, for a kernel and a memcpy over two arguments
    report = {
        "nodes": 5,
        "relocated": 2,
        "arguments": ["x", "<b>y</b>"],
        "relocated_nodes": [
            {"node": 1, "type": "kernel", "kernel": "t_mix", "parameters": 4, "parameter_bytes": 32,
             "relocations": [{"byte": 0, "argument": "x", "offset": 2048}, {"byte": 8, "argument": "<b>y</b>", "offset": 0}]},
            {"node": 3, "type": "memcpy", "relocations": [{"end": "dst", "argument": "x", "offset": 0}]},
            # inside child graphs: named by its place
            {"node": 4, "path": "4.0.2", "type": "memset", "relocations": [{"end": "dst", "argument": "x", "offset": 0}]},
        ],
    }
    page = crec.import_page(report, "chain </title><script>")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "5 nodes in the captured graph; 2 are rewritten" in page
    assert "<code>t_mix</code><br>4 parameters, 32 bytes" in page
    assert 'byte +0 &rarr; <span class="arg">x</span>+2048' in page
    assert "dst &rarr;" in page
    # names from the capture are text, never markup
    assert "<b>y</b>" not in page and "&lt;b&gt;y&lt;/b&gt;" in page
    assert "<script>" not in page
    # per argument, the nodes that follow it
    assert "<tr><td>4.0.2</td><td>memset" in page
    assert '<td class="arg">x</td><td>1, 3, 4.0.2</td>' in page
    assert '<td class="arg">&lt;b&gt;y&lt;/b&gt;</td><td>1</td>' in page


def test_the_import_page_says_which_arguments_are_copied_and_why() -> None:
    # an import that copies one argument and replays noise as captured (ImportedExec.dump("json"))
    report = {
        "nodes": 4, "relocated": 3, "copied": 1, "arguments": ["x", "table<"],
        "relocated_nodes": [
            {"node": 0, "path": "0", "type": "kernel", "kernel": "k", "parameters": 1, "parameter_bytes": 24,
             "relocations": [{"byte": 4, "argument": "x", "offset": 0}]},
            {"node": None, "path": "copy in table<", "type": "memcpy",
             "relocations": [{"end": "src", "argument": "table<", "offset": 0}]},
            {"node": None, "path": "copy back table<", "type": "memcpy",
             "relocations": [{"end": "dst", "argument": "table<", "offset": 0}]},
        ],
        "routes": [{"argument": "x", "route": "rebound", "relocations": 1},
                   {"argument": "table<", "route": "copied", "back": True,
                    "why": "node 2 (memcpy), byte 0 of the host memory it copies holds its address <here>"}],
        "as_captured": {"bytes": 3, "places": [{"node": "1.0", "parameter": 0, "byte": 1, "size": 3},
                                               {"node": "2", "parameter": None, "byte": 40, "size": 4}]},
    }
    page = crec.import_page(report)
    assert "from 2 arguments, 1 of them copied at each launch." in page
    assert '<td class="arg">x</td><td>0</td><td>rebound</td><td>1 words rewritten</td>' in page
    assert "<td>copied in and back</td><td>node 2 (memcpy), byte 0 of the host memory it copies holds its address " \
        "&lt;here&gt;</td>" in page
    assert "<tr><td>copy in table&lt;</td><td>memcpy" in page
    assert "<h2>Replayed as captured</h2>" in page and "<p>3 bytes differed" in page
    assert "<tr><td>1.0</td><td>parameter 0</td><td>byte 1, 3 bytes</td></tr>" in page
    assert "<td>extra buffer</td><td>byte 40, 4 bytes</td>" in page
    assert "<here>" not in page


def test_crec_torch_imports_without_pytorch() -> None:
    import sys

    had_torch = "torch" in sys.modules
    import crec.torch

    assert callable(crec.torch.graph)
    assert had_torch or "torch" not in sys.modules, "importing crec.torch imported PyTorch"


# ---- on a device --------------------------------------------------------------------------


@pytest.mark.gpu
def test_a_capture_of_crec_work_replays_on_new_buffers() -> None:
    """saxpy's eager run captured (with a = 2), replayed on new buffers, against the same
    eager run on twins of those buffers: equal bytes."""
    np = pytest.importorskip("numpy")
    from pathlib import Path

    saxpy = crec.lower_file(Path(__file__).resolve().parents[2] / "tests" / "mlir" / "saxpy.mlir")
    n = saxpy.arguments[0].size // 4
    rng = np.random.default_rng(1)
    host = [rng.standard_normal(n).astype(np.float32) for _ in range(2)]
    first = [crec.DeviceBuffer(n * 4) for _ in range(2)]
    second = [crec.DeviceBuffer(n * 4) for _ in range(2)]
    new = [crec.DeviceBuffer(n * 4) for _ in range(2)]
    twin = [crec.DeviceBuffer(n * 4) for _ in range(2)]
    for b in (first, second, new, twin):
        for buf, h in zip(b, host):
            buf.copy_from(h)
    stream = crec.Stream()
    crec.run_eager(saxpy, first, [2.0], stream=stream)  # loads the module outside a capture
    stream.synchronize()

    def issue(s: int, addrs: list[int]) -> None:
        crec.run_eager(saxpy, [(a, n * 4) for a in addrs], [2.0], stream=s)

    ex = crec.capture_import(issue, [("x", first[0]), ("y", first[1])], stream=stream, second=second)
    assert ex.import_counts.relocated >= 1
    d = ex.dump("json")
    assert d["arguments"] == ["x", "y"] and d["relocated"] == ex.import_counts.relocated
    assert "rewritten at replays" in ex.dump()
    page = ex.dump("html", title="saxpy")
    assert "<title>crec: saxpy</title>" in page and '<span class="arg">y</span>' in page
    ex.replay(new, stream=stream)
    crec.run_eager(saxpy, twin, [2.0], stream=stream)
    stream.synchronize()
    assert new[1].to_bytes() == twin[1].to_bytes()
    assert new[1].to_bytes() != host[1].tobytes(), "the replay wrote y"
    ex.close()


def _torch() -> object:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    return torch


@pytest.mark.gpu
@pytest.mark.parametrize("batch,variants", [(1, 1), (8, 1), (64, 1), (8, 4)])
def test_a_transformer_block_replays_like_eager_for_new_inputs(batch: int, variants: int) -> None:
    torch = _torch()
    import crec.torch as ct

    torch.manual_seed(0)  # type: ignore[attr-defined]
    block = torch.nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True).cuda().eval()  # type: ignore[attr-defined]
    inputs = [torch.randn(batch, 32, 256, device="cuda") for _ in range(4)]  # type: ignore[attr-defined]
    with torch.no_grad():  # type: ignore[attr-defined]
        g = ct.graph(block, inputs[0], variants=variants)
        for it in range(1000):
            x = inputs[it % 4]
            got = g(x)
            want = block(x)
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)  # type: ignore[attr-defined]
    stats = g.exec.stats
    assert stats.replays == 1000
    assert stats.variants == variants
    if variants > 1:
        # four inputs, four graphs: after each graph's first launch, every call finds its own
        assert stats.variant_hits >= 1000 - 2 * variants, (stats.variant_switches, stats.variant_hits)
    g.close()


@pytest.mark.gpu
def test_a_chain_of_triton_kernels_replays_like_eager_for_new_inputs() -> None:
    torch = _torch()
    triton = pytest.importorskip("triton", reason="Triton is not installed")
    import triton.language as tl

    import crec.torch as ct

    @triton.jit  # type: ignore[misc]
    def axpb(x_ptr, y_ptr, n, a, b, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = i < n
        tl.store(y_ptr + i, tl.load(x_ptr + i, mask=m) * a + b, mask=m)

    def chain(x: object) -> object:
        n = x.numel()  # type: ignore[attr-defined]
        cur = x
        for k in range(6):
            out = torch.empty_like(cur)  # type: ignore[attr-defined]
            axpb[(triton.cdiv(n, 1024),)](cur, out, n, 1.0 + k, 0.5, BLOCK=1024)
            cur = out
        return cur

    inputs = [torch.randn(100_000, device="cuda") for _ in range(3)]  # type: ignore[attr-defined]
    g = ct.graph(chain, inputs[0])
    assert g.exec.import_counts.relocated == 1, "only the first kernel reads the input"
    for it in range(1000):
        x = inputs[it % 3]
        torch.testing.assert_close(g(x), chain(x))  # type: ignore[attr-defined]
    g.close()


@pytest.mark.gpu
@pytest.mark.parametrize("path", ["compiled", "ctypes"])
def test_a_call_with_the_wrong_tensor_is_refused_and_the_graph_stays_usable(path: str) -> None:
    torch = _torch()
    import crec.torch as ct
    from crec import _lib

    if path == "compiled" and _lib.fast() is None:
        pytest.skip(f"no compiled call path here: {_lib.fast_why()}")

    def affine(x: object) -> object:
        return x * 2.0 + 1.0  # type: ignore[operator]

    example = torch.randn(4096, device="cuda")  # type: ignore[attr-defined]
    g = ct.graph(affine, example)
    if path == "ctypes":
        g._fast = None
    else:
        assert g._fast is not None
    with pytest.raises(ValueError, match=r"input 0: \(4095,\) torch.float32 on cuda:0, but the capture took \(4096,\)"):
        g(torch.randn(4095, device="cuda"))  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="input 0: .* torch.float64 on cuda:0"):
        g(torch.randn(4096, device="cuda", dtype=torch.float64))  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="not contiguous"):
        g(torch.randn(4096, 2, device="cuda")[:, 0])  # type: ignore[attr-defined]
    base = torch.randn(4097, device="cuda")  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="4-byte aligned, the example's 256"):
        g(base[1:])
    with pytest.raises(TypeError, match="a torch.Tensor is needed"):
        g([1.0] * 4096)
    with pytest.raises(TypeError, match="2 tensors given, 1 expected"):
        g(example, example)
    x = torch.randn(4096, device="cuda")  # type: ignore[attr-defined]
    torch.testing.assert_close(g(x), affine(x))  # type: ignore[attr-defined]
    g.close()
    with pytest.raises(ValueError, match="the crec exec is closed"):
        g(x)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["global", "relaxed"])
def test_a_call_inside_a_torch_capture_becomes_part_of_the_outer_graph(mode: str) -> None:
    """A crec.torch call made while torch.cuda.graph captures adds crec's graph to the
    capture (it used to invalidate it); torch work after it reads what crec wrote, at
    each replay of the outer graph, and the crec graph keeps working on its own."""
    torch = _torch()
    import crec.torch as ct

    def affine(x: object) -> object:
        return x * 2.0 + 1.0  # type: ignore[operator]

    g = ct.graph(affine, torch.randn(4096, device="cuda"))  # type: ignore[attr-defined]
    static_in = torch.randn(4096, device="cuda")  # type: ignore[attr-defined]
    replays = g.exec.stats.replays
    outer = torch.cuda.CUDAGraph()  # type: ignore[attr-defined]
    with torch.cuda.graph(outer, capture_error_mode=mode):  # type: ignore[attr-defined]
        z = g(static_in) * 3.0  # type: ignore[operator]
    assert g.exec.stats.captured_replays == 1
    assert g.exec.stats.replays == replays, "a call inside a capture launches nothing itself"
    for _ in range(3):
        static_in.copy_(torch.randn(4096, device="cuda"))  # type: ignore[attr-defined]
        outer.replay()
        torch.testing.assert_close(z, affine(static_in) * 3.0)  # type: ignore[attr-defined, operator]
    x = torch.randn(4096, device="cuda")  # type: ignore[attr-defined]
    torch.testing.assert_close(g(x), affine(x))  # type: ignore[attr-defined]
    g.close()


def _rotate_against_eager(torch: object, g: object, fn: object, sets: list[tuple[object, ...]], passes: int = 3,
                          tol: float = 1e-4) -> None:
    """`passes` passes over `sets`: each call of the graph equals `fn` run eagerly."""
    for _ in range(passes):
        for args in sets:
            got = g(*args)  # type: ignore[operator]
            want = fn(*args)  # type: ignore[operator]
            torch.testing.assert_close(got, want, rtol=tol, atol=tol)  # type: ignore[attr-defined]


@pytest.mark.gpu
def test_an_fp16_mlp_on_cublaslt_extra_buffers_rebinds_its_input_with_no_copy() -> None:
    """fp16 GEMMs run on cuBLASLt's nvjet kernels on Hopper, which take their parameters
    as one `extra` buffer: the input is rebound there, not copied."""
    torch = _torch()
    import crec.torch as ct

    torch.manual_seed(0)  # type: ignore[attr-defined]
    mlp = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 512))  # type: ignore[attr-defined]
    mlp = mlp.cuda().half().eval()
    sets = [(torch.randn(8, 512, device="cuda", dtype=torch.float16),) for _ in range(3)]  # type: ignore[attr-defined]
    with torch.no_grad():  # type: ignore[attr-defined]
        g = ct.graph(mlp, *sets[0])
        assert [r.route for r in g.routes] == ["rebound"], g.routes
        _rotate_against_eager(torch, g, mlp, sets, tol=2e-2)
    g.close()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,channels_last", [("float32", False), ("float16", True), ("bfloat16", False)])
def test_convolutions_through_cudnn_replay_like_eager(dtype: str, channels_last: bool) -> None:
    """cuDNN's layout kernels pass pointers at 4-byte offsets; PyTorch's copy kernels pass
    1-byte empty functors whose byte differs from capture to capture."""
    torch = _torch()
    import crec.torch as ct

    torch.manual_seed(0)  # type: ignore[attr-defined]
    dt = getattr(torch, dtype)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),  # type: ignore[attr-defined]
                              torch.nn.Conv2d(16, 8, 3, stride=2), torch.nn.AdaptiveAvgPool2d(1))  # type: ignore[attr-defined]
    net = net.cuda().to(dt).eval()
    fmt = torch.channels_last if channels_last else torch.contiguous_format  # type: ignore[attr-defined]
    if channels_last:
        net = net.to(memory_format=fmt)
    sets = [(torch.randn(4, 3, 32, 32, device="cuda", dtype=dt).contiguous(),) for _ in range(3)]  # type: ignore[attr-defined]
    with torch.no_grad():  # type: ignore[attr-defined]
        g = ct.graph(net, *sets[0])
        assert all(r.route in ("rebound", "copied") for r in g.routes)
        _rotate_against_eager(torch, g, net, sets, tol=1e-4 if dtype == "float32" else 3e-2)
    g.close()


@pytest.mark.gpu
def test_index_kernels_with_padding_in_their_functors_replay_like_eager() -> None:
    """arange, gather and scatter pass functors whose padding holds host addresses that
    differ between captures: replayed as captured, the inputs rebound."""
    torch = _torch()
    import crec.torch as ct

    def fn(x: object, idx: object) -> object:
        pos = torch.arange(x.shape[1], device=x.device).expand_as(x)  # type: ignore[attr-defined]
        g = x.gather(1, idx)  # type: ignore[attr-defined]
        return torch.zeros_like(x).scatter_add_(1, idx, g) + pos  # type: ignore[attr-defined]

    sets = [(torch.randn(16, 64, device="cuda"), torch.randint(0, 64, (16, 64), device="cuda")) for _ in range(3)]  # type: ignore[attr-defined]
    g = ct.graph(fn, *sets[0])
    assert [r.route for r in g.routes] == ["rebound", "rebound"], g.routes
    _rotate_against_eager(torch, g, fn, sets)
    g.close()


@pytest.mark.gpu
def test_an_input_written_in_place_is_written_in_the_new_tensor() -> None:
    torch = _torch()
    import crec.torch as ct

    def fn(x: object, y: object) -> object:
        x.add_(y)  # type: ignore[attr-defined]
        return x * 2.0  # type: ignore[operator]

    ex, ey = torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda")  # type: ignore[attr-defined]
    g = ct.graph(fn, ex, ey)
    for _ in range(3):
        x, y = torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda")  # type: ignore[attr-defined]
        want_x = x + y
        out = g(x, y)
        torch.cuda.synchronize()  # type: ignore[attr-defined]
        torch.testing.assert_close(x, want_x)  # type: ignore[attr-defined]
        torch.testing.assert_close(out, want_x * 2.0)  # type: ignore[attr-defined]
    g.close()


@pytest.mark.gpu
def test_a_pointer_table_copied_from_pinned_memory_sends_its_input_through_a_copy() -> None:
    """A kernel that reads its input through a table of pointers the work copies from
    page-locked memory (as torch.cat of many tensors does): crec cannot rewrite the table,
    so that input is copied into its example at each call, and the results are right."""
    torch = _torch()
    triton = pytest.importorskip("triton", reason="Triton is not installed")
    import triton.language as tl

    import crec.torch as ct

    @triton.jit  # type: ignore[misc]
    def through(table_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = i < n
        x_ptr = tl.load(table_ptr).to(tl.pointer_type(tl.float32))
        tl.store(out_ptr + i, tl.load(x_ptr + i, mask=m) * 2.0 + tl.load(y_ptr + i, mask=m), mask=m)

    def fn(x: object, y: object) -> object:
        table = torch.tensor([x.data_ptr()], dtype=torch.int64).pin_memory().to(x.device, non_blocking=True)  # type: ignore[attr-defined]
        out = torch.empty_like(y)  # type: ignore[attr-defined]
        n = y.numel()  # type: ignore[attr-defined]
        through[(triton.cdiv(n, 1024),)](table, y, out, n, BLOCK=1024)
        return out

    sets = [(torch.randn(5000, device="cuda"), torch.randn(5000, device="cuda")) for _ in range(3)]  # type: ignore[attr-defined]
    fn(*sets[0])
    try:  # what torch.cuda.graph cannot replay is not crec's to import
        with torch.cuda.graph(torch.cuda.CUDAGraph()):  # type: ignore[attr-defined]
            fn(*sets[0])
    except RuntimeError as e:
        pytest.skip(f"torch.cuda.graph does not capture a copy from pinned memory here: {e}")
    g = ct.graph(fn, *sets[0])
    routes = g.routes
    assert routes[0].route == "copied" and "table" in routes[0].why, routes
    assert routes[1].route == "rebound", routes
    for _ in range(3):
        for x, y in sets:
            torch.testing.assert_close(g(x, y), x * 2.0 + y)  # type: ignore[attr-defined]
    assert g.exec.stats.copied_arguments == 1
    g.close()


@pytest.mark.gpu
def test_the_evidence_captures_memory_is_released() -> None:
    torch = _torch()
    import gc

    import crec.torch as ct

    x = torch.randn(16 << 20, device="cuda")  # 64 MiB  # type: ignore[attr-defined]
    gc.collect()
    torch.cuda.synchronize()  # type: ignore[attr-defined]
    before = torch.cuda.memory_allocated()  # type: ignore[attr-defined]
    g = ct.graph(lambda t: t * 2.0, x)
    gc.collect()
    torch.cuda.synchronize()  # type: ignore[attr-defined]
    held = torch.cuda.memory_allocated() - before  # type: ignore[attr-defined]
    # the graph's own output (64 MiB) stays; the two displaced copies of x and their outputs do not
    assert held < 96 << 20, f"{held >> 20} MiB still allocated after the import"
    torch.testing.assert_close(g(x + 1), (x + 1) * 2.0)  # type: ignore[attr-defined]
    g.close()


def _decode_like_step(torch: object, w: object, eos: int) -> object:
    """A greedy step of a toy model: token = argmax(h @ w); h = tanh(h + w[token]);
    count += 1; flag = token != eos. The state (h, token, count, flag) changes in place."""

    def step(h: object, token: object, count: object, flag: object) -> None:
        logits = h @ w  # type: ignore[operator]
        token.copy_(logits.argmax(-1, keepdim=True).to(token.dtype))  # type: ignore[attr-defined]
        h.copy_(torch.tanh(h + w.t()[token.long().squeeze(-1)]))  # type: ignore[attr-defined]
        count.add_(1)  # type: ignore[attr-defined]
        flag.copy_((token != eos).all().reshape(1))  # type: ignore[attr-defined]

    return step


@pytest.mark.gpu
def test_a_loop_runs_the_captured_step_until_it_clears_its_flag_like_a_host_loop() -> None:
    """crec.torch.loop: while flag: step(*state), on the device in one launch, on rotated
    state tensors, equal to the same step run by a host loop that reads the flag."""
    torch = _torch()
    import crec.torch as ct

    torch.manual_seed(0)  # type: ignore[attr-defined]
    d, eos = 64, 3
    w = torch.randn(d, d, device="cuda")  # type: ignore[attr-defined]
    step = _decode_like_step(torch, w, eos)

    def fresh(seed: int) -> tuple[object, ...]:
        g = torch.Generator(device="cuda").manual_seed(seed)  # type: ignore[attr-defined]
        return (torch.randn(1, d, device="cuda", generator=g), torch.zeros(1, 1, dtype=torch.int32, device="cuda"),  # type: ignore[attr-defined]
                torch.zeros(1, dtype=torch.int32, device="cuda"), torch.ones(1, dtype=torch.bool, device="cuda"))  # type: ignore[attr-defined]

    ex = fresh(100)
    looped = ct.loop(step, *ex, flag=ex[3], max_iterations=200)
    for seed in range(6):
        mine, twin = fresh(seed), fresh(seed)
        looped(*mine)
        steps = 0
        while bool(twin[3]) and steps < 200:  # type: ignore[arg-type]
            step(*twin)
            steps += 1
        torch.cuda.synchronize()  # type: ignore[attr-defined]
        looped.check()
        for got, want in zip(mine, twin):
            torch.testing.assert_close(got, want)  # type: ignore[attr-defined]
        assert int(mine[2]) == steps  # type: ignore[call-overload]
    looped.close()


@pytest.mark.gpu
def test_a_loop_that_never_clears_its_flag_stops_at_its_limit_and_says_so() -> None:
    torch = _torch()
    import crec.torch as ct

    def step(x: object, flag: object) -> None:
        x.add_(1.0)  # type: ignore[attr-defined]

    x = torch.zeros(256, device="cuda")  # type: ignore[attr-defined]
    flag = torch.ones(1, dtype=torch.uint8, device="cuda")  # type: ignore[attr-defined]
    looped = ct.loop(step, x, flag, flag=flag, max_iterations=7)
    y = torch.zeros(256, device="cuda")  # type: ignore[attr-defined]
    looped(y, flag)
    torch.cuda.synchronize()  # type: ignore[attr-defined]
    torch.testing.assert_close(y, torch.full_like(y, 7.0))  # type: ignore[attr-defined]
    with pytest.raises(crec.LoopLimitError, match="while flag"):
        looped.check()
    looped.close()


@pytest.mark.gpu
def test_cond_runs_one_captured_branch_chosen_on_the_device() -> None:
    torch = _torch()
    import crec.torch as ct

    def double(x: object, p: object) -> None:
        x.mul_(2.0)  # type: ignore[attr-defined]

    def negate(x: object, p: object) -> None:
        x.neg_()  # type: ignore[attr-defined]

    x = torch.randn(1000, device="cuda")  # type: ignore[attr-defined]
    p = torch.ones(1, dtype=torch.bool, device="cuda")  # type: ignore[attr-defined]
    branched = ct.cond(double, negate, x, p, pred=p)
    for it in range(6):
        y = torch.randn(1000, device="cuda")  # type: ignore[attr-defined]
        q = torch.tensor([it % 2 == 0], device="cuda")  # type: ignore[attr-defined]
        want = y * 2.0 if it % 2 == 0 else -y  # type: ignore[operator]
        branched(y, q)
        torch.testing.assert_close(y, want)  # type: ignore[attr-defined]
    branched.close()


def test_loop_checks_its_flag_before_any_capture() -> None:
    torch = _torch()
    import crec.torch as ct

    x = torch.zeros(4, device="cuda")  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="reads one byte"):
        ct.loop(lambda x: None, x, flag=torch.ones(1, dtype=torch.int32, device="cuda"))  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="one-element"):
        ct.loop(lambda x: None, x, flag=torch.ones(2, dtype=torch.bool, device="cuda"))  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="max_iterations"):
        ct.loop(lambda x: None, x, flag=torch.ones(1, dtype=torch.bool, device="cuda"), max_iterations=0)  # type: ignore[attr-defined]


@pytest.mark.gpu
def test_a_loop_called_inside_a_torch_capture_adds_its_loop_to_the_outer_graph() -> None:
    """A crec.torch.loop call made while torch.cuda.graph captures: a child graph cannot
    hold the loop's conditional node, so crec builds its nodes into the graph being
    captured; each replay of the outer graph runs the loop on the device."""
    torch = _torch()
    import crec.torch as ct

    def step(x: object, flag: object) -> None:
        x.add_(1.0)  # type: ignore[attr-defined]
        flag.copy_(x[:1] < 10.0)  # type: ignore[index, attr-defined]

    x = torch.zeros(4096, device="cuda")  # type: ignore[attr-defined]
    flag = torch.ones(1, dtype=torch.bool, device="cuda")  # type: ignore[attr-defined]
    looped = ct.loop(step, x, flag, flag=flag, max_iterations=100)
    y = torch.zeros(4096, device="cuda")  # type: ignore[attr-defined]
    f = torch.ones(1, dtype=torch.bool, device="cuda")  # type: ignore[attr-defined]
    outer = torch.cuda.CUDAGraph()  # type: ignore[attr-defined]
    with torch.cuda.graph(outer):  # type: ignore[attr-defined]
        f.fill_(True)
        looped(y, f)
        z = y * 2.0  # type: ignore[operator]
    assert looped.exec.stats.captured_replays == 1
    for start in (0.0, 3.0, 9.5):
        y.fill_(start)
        outer.replay()
        torch.cuda.synchronize()  # type: ignore[attr-defined]
        want = max(10.0, start + 1.0)  # the step runs at least once: the flag was set
        torch.testing.assert_close(y, torch.full_like(y, want))  # type: ignore[attr-defined]
        torch.testing.assert_close(z, y * 2.0)  # type: ignore[attr-defined, operator]
    looped.close()


_MIX = """
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @halve(%x: memref<1024xf32>) kernel {
      %i = gpu.global_id x
      %v = memref.load %x[%i] : memref<1024xf32>
      %half = arith.constant 0.5 : f32
      %one = arith.constant 1.0 : f32
      %h = arith.mulf %v, %half : f32
      %r = arith.addf %h, %one : f32
      memref.store %r, %x[%i] : memref<1024xf32>
      gpu.return
    }
    gpu.func @under(%n: memref<i32>, %more: memref<i8>) kernel {
      %k = memref.load %n[] : memref<i32>
      %five = arith.constant 5 : i32
      %go = arith.cmpi slt, %k, %five : i32
      %f = arith.extui %go : i1 to i8
      memref.store %f, %more[] : memref<i8>
      gpu.return
    }
  }
  func.func @main(%x: memref<1024xf32> {crec.name = "x"}, %y: memref<1024xf32> {crec.name = "y"},
                  %n: memref<i32> {crec.name = "n"}) {
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %c8 = arith.constant 8 : index
    %z8 = arith.constant 0 : i8
    %more = memref.alloc() {crec.name = "more"} : memref<i8>
    scf.while : () -> () {
      gpu.launch_func @k::@under blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
          args(%n : memref<i32>, %more : memref<i8>) {crec.name = "more = n < 5"}
      %f = memref.load %more[] : memref<i8>
      %go = arith.cmpi ne, %f, %z8 : i8
      scf.condition(%go)
    } do {
      gpu.launch_func @k::@halve blocks in (%c8, %c1, %c1) threads in (%c128, %c1, %c1)
          args(%x : memref<1024xf32>) {crec.name = "x = x / 2 + 1"}
      scf.yield
    } attributes {crec.name = "while n < 5"}
    memref.dealloc %more : memref<i8>
    return
  }
}
"""


def test_add_graph_checks_its_arguments_before_any_cuda_call() -> None:
    program = crec.lower_string(_MIX)

    class NotAnExec:
        pass

    with pytest.raises(TypeError, match="an imported exec is needed"):
        program.add_graph(NotAnExec(), ["x"])
    with pytest.raises(TypeError, match="one buffer per argument"):
        program.add_graph(program, "x")
    with pytest.raises(ValueError, match="access 'sideways'"):
        program.add_graph(program, [("x", "sideways")])
    with pytest.raises(IndexError, match="region 9"):
        program.add_graph(program, ["x"], region=9)
    assert len(program.commands) == 3, "nothing was added"


@pytest.mark.gpu
def test_a_captured_torch_step_in_an_mlir_programs_loop_orders_both_ways() -> None:
    """An MLIR program's while loop (its condition an MLIR kernel reading n, its body an
    MLIR kernel writing x) with a captured PyTorch step appended to the body (y += x;
    n += 1): the step waits for the MLIR kernel that writes x, and the condition's kernel
    waits for the step that writes n. Replayed on rotated tensors, equal to the same
    computed by PyTorch."""
    torch = _torch()
    import crec.torch as ct

    def step(x: object, y: object, n: object) -> None:
        y.add_(x)  # type: ignore[attr-defined]
        n.add_(1)  # type: ignore[attr-defined]

    def tensors(seed: int) -> tuple[object, object, object]:
        g = torch.Generator(device="cuda").manual_seed(seed)  # type: ignore[attr-defined]
        return (torch.randn(1024, device="cuda", generator=g), torch.randn(1024, device="cuda", generator=g),  # type: ignore[attr-defined]
                torch.zeros((), dtype=torch.int32, device="cuda"))  # type: ignore[attr-defined]

    program = crec.lower_string(_MIX)
    graphed = ct.graph(step, *tensors(99))
    body = next(r.index for r in program.regions if r.role == "body")
    program.add_graph(graphed.exec, [("x", "read"), "y", "n"], region=body, name="y += x; n += 1")
    assert "graph 'y += x; n += 1'" in program.dump()
    sets = [tensors(s) for s in range(3)]
    ex = program.record(list(sets[0]))
    for it in range(9):
        mine = sets[it % 3]
        x, y, n = (t.clone() for t in mine)  # type: ignore[attr-defined]
        ex.replay(list(mine), stream=torch.cuda.current_stream())  # type: ignore[attr-defined]
        while int(n) < 5:  # type: ignore[call-overload]
            x = x * 0.5 + 1.0  # type: ignore[operator]
            y += x  # type: ignore[operator]
            n += 1  # type: ignore[operator]
        torch.cuda.synchronize()  # type: ignore[attr-defined]
        torch.testing.assert_close(mine[0], x)  # type: ignore[attr-defined]
        torch.testing.assert_close(mine[1], y)  # type: ignore[attr-defined]
        assert int(mine[2]) == int(n)  # type: ignore[call-overload]
    ex.close()
    program.close()
    graphed.close()


@pytest.mark.gpu
def test_a_crec_call_inside_torch_compile_reduce_overhead_joins_its_cuda_graph() -> None:
    """Graphed.op, a custom operator, stays in torch.compile's graph; under
    mode="reduce-overhead" PyTorch captures its CUDA graph with the crec call inside
    (crec adds its graph to that capture), and each call equals eager."""
    torch = _torch()
    import crec.torch as ct

    def affine(x: object) -> object:
        return x * 2.0 + 1.0  # type: ignore[operator]

    g = ct.graph(affine, torch.randn(4096, device="cuda"))  # type: ignore[attr-defined]
    op = g.op

    @torch.compile(mode="reduce-overhead")  # type: ignore[attr-defined, misc]
    def f(x: object) -> object:
        return torch.relu(op([x])[0]) * 3.0  # type: ignore[attr-defined, operator]

    for _ in range(6):
        x = torch.randn(4096, device="cuda")  # type: ignore[attr-defined]
        torch.testing.assert_close(f(x), torch.relu(affine(x)) * 3.0)  # type: ignore[attr-defined, operator]
    assert g.exec.stats.captured_replays >= 1, "PyTorch's CUDA graph did not capture the crec call"
    g.close()


@pytest.mark.gpu
def test_op_refuses_work_that_writes_its_inputs() -> None:
    torch = _torch()
    import crec.torch as ct

    def inplace(x: object) -> object:
        x.mul_(2.0)  # type: ignore[attr-defined]
        return x + 1.0  # type: ignore[operator]

    g = ct.graph(inplace, torch.randn(256, device="cuda"))  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=r"writes its inputs \[0\] in place"):
        g.op
    g.close()
