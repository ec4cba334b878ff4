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
    with pytest.raises(crec.InvalidArgumentError, match="the second capture's base is the first's"):
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
@pytest.mark.parametrize("batch", [1, 8, 64])
def test_a_transformer_block_replays_like_eager_for_new_inputs(batch: int) -> None:
    torch = _torch()
    import crec.torch as ct

    torch.manual_seed(0)  # type: ignore[attr-defined]
    block = torch.nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True).cuda().eval()  # type: ignore[attr-defined]
    inputs = [torch.randn(batch, 32, 256, device="cuda") for _ in range(4)]  # type: ignore[attr-defined]
    with torch.no_grad():  # type: ignore[attr-defined]
        g = ct.graph(block, inputs[0])
        for it in range(1000):
            x = inputs[it % 4]
            got = g(x)
            want = block(x)
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)  # type: ignore[attr-defined]
    assert g.exec.stats.replays == 1000
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
def test_a_call_with_the_wrong_tensor_is_refused_and_the_graph_stays_usable() -> None:
    torch = _torch()
    import crec.torch as ct

    def affine(x: object) -> object:
        return x * 2.0 + 1.0  # type: ignore[operator]

    example = torch.randn(4096, device="cuda")  # type: ignore[attr-defined]
    g = ct.graph(affine, example)
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
