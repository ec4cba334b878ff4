#!/usr/bin/env python3
"""A census of real PyTorch work: each case captured with ``torch.cuda.graph`` and with
``crec.torch.graph``, checked against eager over rotated inputs, and timed.

Cases (about 40): torchvision models, Hugging Face transformers built from small configs
with random weights, timm models, and hand-written blocks (MLPs, an LSTM, attention with a
mask, flash attention, a KV cache written with ``index_copy_``, a ``torch.compile``'d
function), in fp32, fp16 and bf16, some channels-last. Nothing is downloaded. A case whose
library is missing is listed as unavailable and not counted.

For each case:
- torch: whether ``torch.cuda.graph`` captures it (what it cannot replay is out of scope);
- crec: whether ``crec.torch.graph`` imports it, how many inputs it copies rather
  than rebinds (``Graphed.routes``), and how many programmatic (PDL) edges its capture
  has (kept through import and rebinding);
- correct: 3 passes over 3 input sets, each crec call against eager (tolerance by dtype);
- microseconds per call (CUDA events, median over batches of 10): eager, the torch graph
  replayed on its static inputs, the torch graph with each input ``copy_()``'d in first,
  crec with the inputs rotating (one executable graph updated in place, the default),
  crec with four executable graphs (``variants=4``: each input set in its own, nothing
  to update), and crec called with the same inputs every time (its graph with nothing
  to update), the columns taking turns batch by batch; then host microseconds per call
  of the torch graph's ``replay()`` and of the two crec calls (enqueueing only).

The last line is ``census: C cases; torch captures T; crec imports K; correct M; copied
arguments A``; ``--json FILE`` writes every row.

    PYTHONPATH=python CREC_LIBRARY_PATH=build python3 tools/bench/torch_census.py \\
        [--iters N] [--only REGEX] [--json FILE] [--budget SECONDS]

Needs a CUDA device and PyTorch; torchvision, transformers, timm and Triton are used when
installed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_capture import host_us, medians_us  # noqa: E402

Case = tuple[Callable[..., Any], list[tuple[Any, ...]], float]  # fn, 4 input sets (the first is the example), tolerance


def _tol(torch: Any, dtype: Any) -> float:
    return 1e-3 if dtype == torch.float32 else 5e-2


# ---- the cases ------------------------------------------------------------------------------


def vision(name: str, dtype: str, channels_last: bool = False, size: int = 224) -> Callable[[Any], Case]:
    def build(torch: Any) -> Case:
        import torchvision

        dt = getattr(torch, dtype)
        model = getattr(torchvision.models, name)(weights=None).cuda().eval().to(dt)
        fmt = torch.channels_last if channels_last else torch.contiguous_format
        model = model.to(memory_format=fmt)
        sets = [(torch.randn(1, 3, size, size, device="cuda", dtype=dt).contiguous(),) for _ in range(4)]
        return model, sets, _tol(torch, dt) * 4
    return build


def timm_model(name: str, dtype: str, channels_last: bool = False) -> Callable[[Any], Case]:
    def build(torch: Any) -> Case:
        import timm

        dt = getattr(torch, dtype)
        model = timm.create_model(name, pretrained=False).cuda().eval().to(dt)
        if channels_last:
            model = model.to(memory_format=torch.channels_last)
        h, w = model.default_cfg.get("input_size", (3, 224, 224))[1:]
        sets = [(torch.randn(1, 3, h, w, device="cuda", dtype=dt).contiguous(),) for _ in range(4)]
        return model, sets, _tol(torch, dt) * 4
    return build


def hf(kind: str, dtype: str, batch: int = 1, seq: int = 32) -> Callable[[Any], Case]:
    """A Hugging Face model from a small config, random weights, SDPA attention."""
    def build(torch: Any) -> Case:
        import transformers as tf

        small = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256,
                     vocab_size=1000, max_position_embeddings=128)
        configs: dict[str, Callable[[], Any]] = {
            "gpt2": lambda: tf.GPT2Config(n_embd=128, n_layer=2, n_head=4, vocab_size=1000, n_positions=128),
            "bert": lambda: tf.BertConfig(**small),
            "distilbert": lambda: tf.DistilBertConfig(dim=128, n_layers=2, n_heads=4, hidden_dim=256, vocab_size=1000),
            "roberta": lambda: tf.RobertaConfig(**small),
            "llama": lambda: tf.LlamaConfig(**small, num_key_value_heads=2),
            "qwen2": lambda: tf.Qwen2Config(**small, num_key_value_heads=2),
            "mistral": lambda: tf.MistralConfig(**small, num_key_value_heads=2),
            "opt": lambda: tf.OPTConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, ffn_dim=256,
                                        vocab_size=1000, max_position_embeddings=128, word_embed_proj_dim=128),
            "gpt_neox": lambda: tf.GPTNeoXConfig(**small),
            "phi": lambda: tf.PhiConfig(**small),
            "t5": lambda: tf.T5Config(d_model=128, d_kv=32, d_ff=256, num_layers=2, num_heads=4, vocab_size=1000),
        }
        config = configs[kind]()
        config._attn_implementation = "sdpa"
        dt = getattr(torch, dtype)
        if kind == "t5":
            model = tf.T5EncoderModel(config)
        elif kind in ("bert", "distilbert", "roberta"):
            model = tf.AutoModel.from_config(config, attn_implementation="sdpa")
        else:
            model = tf.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa")
        model = model.cuda().eval().to(dt)

        def fn(ids: Any) -> Any:
            if kind in ("bert", "distilbert", "roberta", "t5"):
                return model(input_ids=ids).last_hidden_state
            return model(input_ids=ids, use_cache=False).logits

        sets = [(torch.randint(3, 1000, (batch, seq), device="cuda"),) for _ in range(4)]
        return fn, sets, _tol(torch, dt) * 4
    return build


def mlp(dtype: str, batch: int = 8) -> Callable[[Any], Case]:
    def build(torch: Any) -> Case:
        dt = getattr(torch, dtype)
        net = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 512))
        net = net.cuda().eval().to(dt)
        return net, [(torch.randn(batch, 512, device="cuda", dtype=dt),) for _ in range(4)], _tol(torch, dt)
    return build


def lstm(torch: Any) -> Case:
    net = torch.nn.LSTM(128, 256, num_layers=2, batch_first=True).cuda().eval()

    def fn(x: Any) -> Any:
        return net(x)[0]

    return fn, [(torch.randn(4, 16, 128, device="cuda"),) for _ in range(4)], 1e-3


def masked_attention(torch: Any) -> Case:
    attn = torch.nn.MultiheadAttention(256, 8, batch_first=True).cuda().eval()

    def fn(x: Any, mask: Any) -> Any:
        return attn(x, x, x, attn_mask=mask, need_weights=False)[0]

    def inputs() -> tuple[Any, ...]:
        mask = torch.rand(64, 64, device="cuda") < 0.2
        mask.fill_diagonal_(False)
        return torch.randn(2, 64, 256, device="cuda"), mask

    return fn, [inputs() for _ in range(4)], 1e-3


def flash_attention(torch: Any) -> Case:
    def fn(q: Any, k: Any, v: Any) -> Any:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    def inputs() -> tuple[Any, ...]:
        return tuple(torch.randn(2, 8, 128, 64, device="cuda", dtype=torch.float16) for _ in range(3))

    return fn, [inputs() for _ in range(4)], 2e-2


def kv_cache(torch: Any) -> Case:
    """One decode step: new keys and values written into a static cache at a position
    (index_copy_, in place), then attention over the cache."""
    def fn(cache_k: Any, cache_v: Any, k: Any, v: Any, q: Any, pos: Any) -> Any:
        cache_k.index_copy_(2, pos, k)
        cache_v.index_copy_(2, pos, v)
        return torch.nn.functional.scaled_dot_product_attention(q, cache_k, cache_v)

    def inputs() -> tuple[Any, ...]:
        ck, cv = (torch.randn(1, 4, 64, 32, device="cuda") for _ in range(2))
        k, v, q = (torch.randn(1, 4, 1, 32, device="cuda") for _ in range(3))
        return ck, cv, k, v, q, torch.tensor([7], device="cuda")

    return fn, [inputs() for _ in range(4)], 1e-3


def compiled(torch: Any) -> Case:
    w = torch.randn(512, 512, device="cuda") / 20
    ln = torch.nn.LayerNorm(512).cuda()

    @torch.compile
    def fn(x: Any) -> Any:
        return ln(torch.nn.functional.gelu(x @ w) + x)

    return fn, [(torch.randn(64, 512, device="cuda"),) for _ in range(4)], 1e-3


def encoder_layer(dtype: str) -> Callable[[Any], Case]:
    def build(torch: Any) -> Case:
        dt = getattr(torch, dtype)
        layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True).cuda().eval().to(dt)
        return layer, [(torch.randn(8, 32, 256, device="cuda", dtype=dt),) for _ in range(4)], _tol(torch, dt)
    return build


def embedding_norm(torch: Any) -> Case:
    emb = torch.nn.Embedding(5000, 256).cuda()
    norm = torch.nn.LayerNorm(256).cuda()

    def fn(ids: Any, pos: Any) -> Any:
        return norm(emb(ids) + emb(pos))

    return fn, [(torch.randint(0, 5000, (4, 64), device="cuda"), torch.arange(64, device="cuda").expand(4, 64).contiguous())
                for _ in range(4)], 1e-4


def cat_many(torch: Any) -> Case:
    """torch.cat of many inputs: the kernel reads a table of their addresses."""
    def fn(*xs: Any) -> Any:
        return torch.cat(xs, dim=1) * 2.0

    return fn, [tuple(torch.randn(64, 8 + i, device="cuda") for i in range(12)) for _ in range(4)], 1e-5


CASES: list[tuple[str, Callable[[Any], Case]]] = [
    ("mlp fp32", mlp("float32")),
    ("mlp fp16", mlp("float16")),
    ("mlp bf16", mlp("bfloat16", batch=64)),
    ("lstm fp32", lstm),
    ("attention with a mask fp32", masked_attention),
    ("flash attention fp16", flash_attention),
    ("kv cache index_copy_ fp32", kv_cache),
    ("torch.compile'd block fp32", compiled),
    ("encoder layer fp32", encoder_layer("float32")),
    ("encoder layer bf16", encoder_layer("bfloat16")),
    ("embedding + layernorm fp32", embedding_norm),
    ("cat of 12 tensors fp32", cat_many),
    ("torchvision resnet18 fp32", vision("resnet18", "float32")),
    ("torchvision resnet50 fp16 channels-last", vision("resnet50", "float16", channels_last=True)),
    ("torchvision mobilenet_v3_small fp32", vision("mobilenet_v3_small", "float32")),
    ("torchvision efficientnet_b0 bf16", vision("efficientnet_b0", "bfloat16")),
    ("torchvision vit_b_16 fp16", vision("vit_b_16", "float16")),
    ("torchvision convnext_tiny fp32", vision("convnext_tiny", "float32")),
    ("torchvision densenet121 fp32", vision("densenet121", "float32")),
    ("torchvision swin_t fp16", vision("swin_t", "float16")),
    ("torchvision regnet_y_400mf fp16 channels-last", vision("regnet_y_400mf", "float16", channels_last=True)),
    ("torchvision shufflenet_v2_x1_0 fp32", vision("shufflenet_v2_x1_0", "float32")),
    ("transformers gpt2 fp32", hf("gpt2", "float32")),
    ("transformers bert fp32", hf("bert", "float32", batch=4)),
    ("transformers distilbert fp16", hf("distilbert", "float16")),
    ("transformers roberta bf16", hf("roberta", "bfloat16")),
    ("transformers llama fp16", hf("llama", "float16")),
    ("transformers qwen2 bf16", hf("qwen2", "bfloat16")),
    ("transformers mistral fp32", hf("mistral", "float32")),
    ("transformers opt fp16", hf("opt", "float16")),
    ("transformers gpt_neox bf16", hf("gpt_neox", "bfloat16")),
    ("transformers phi fp32", hf("phi", "float32")),
    ("transformers t5 encoder fp32", hf("t5", "float32")),
    ("timm resnet18 bf16", timm_model("resnet18", "bfloat16")),
    ("timm vit_tiny_patch16_224 fp16", timm_model("vit_tiny_patch16_224", "float16")),
    ("timm convnext_atto fp32", timm_model("convnext_atto", "float32")),
    ("timm efficientnet_b0 fp16 channels-last", timm_model("efficientnet_b0", "float16", channels_last=True)),
    ("timm deit_tiny_patch16_224 fp32", timm_model("deit_tiny_patch16_224", "float32")),
    ("timm regnetx_002 fp32", timm_model("regnetx_002", "float32")),
]


# ---- one case -------------------------------------------------------------------------------


def _tensors(out: Any, torch: Any) -> list[Any]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _tensors(o, torch)]
    if isinstance(out, dict):
        return [t for o in out.values() for t in _tensors(o, torch)]
    return []


def _why(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:240]


def run_case(name: str, build: Callable[[Any], Case], torch: Any, ct: Any, iters: int) -> dict[str, Any]:
    row: dict[str, Any] = {"case": name, "torch": False, "crec": False, "correct": False, "copied": None}
    torch.manual_seed(0)
    try:
        fn, sets, tol = build(torch)
    except ImportError as e:
        row["unavailable"] = _why(e)
        return row
    with torch.no_grad():
        # torch.cuda.graph on static inputs, warmed up on a side stream as its documentation says
        static = [t.clone() for t in sets[0]]
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                fn(*static)
            torch.cuda.current_stream().wait_stream(side)
            tg = torch.cuda.CUDAGraph()
            with torch.cuda.graph(tg):
                static_out = fn(*static)
            row["torch"] = True
        except Exception as e:  # noqa: BLE001 - reported in the row
            row["torch_why"] = _why(e)
            torch.cuda.synchronize()
            return row
        try:
            g = ct.graph(fn, *sets[0])
            row["crec"] = True
            routes = g.routes
            row["copied"] = sum(r.route == "copied" for r in routes)
            row["copied_why"] = [r.why for r in routes if r.route == "copied"][:3]
            counts = g.exec.import_counts
            row["nodes"] = counts.nodes
            row["programmatic_edges"] = counts.programmatic_edges  # kernels that use PDL, kept as captured
        except Exception as e:  # noqa: BLE001
            row["crec_why"] = _why(e)
            if os.environ.get("CREC_CENSUS_TRACEBACK"):
                traceback.print_exc()
            return row
        rot = sets[1:]
        worst = 0.0
        try:
            for _ in range(3):
                for args in rot:
                    got = [t.float() for t in _tensors(g(*args), torch)]
                    want = [t.float() for t in _tensors(fn(*args), torch)]
                    if len(got) != len(want):
                        raise AssertionError(f"{len(got)} outputs, eager gives {len(want)}")
                    for a, b in zip(got, want):
                        err = ((a - b).abs() / (1 + b.abs())).max().item() if a.numel() else 0.0
                        worst = max(worst, err)
            row["worst"] = worst
            row["correct"] = worst <= tol
        except Exception as e:  # noqa: BLE001
            row["correct_why"] = _why(e)
        if not row["correct"] or not iters:
            g.close()
            return row

        def eager(i: int) -> None:
            fn(*rot[i % 3])

        def graph(i: int) -> None:
            tg.replay()

        def graph_copy(i: int) -> None:
            for s, t in zip(static, rot[i % 3]):
                s.copy_(t)
            tg.replay()

        def crec(i: int) -> None:
            g(*rot[i % 3])

        # four executable graphs, one per input set: nothing to update, a switch per call
        four = ct.graph(fn, *sets[0], variants=4)

        def crec_v4(i: int) -> None:
            four(*rot[i % 3])

        # the same inputs at every call: crec's graph with nothing to update, beside
        # torch's (what the imported graph itself costs the GPU)
        def crec_same(i: int) -> None:
            g(*rot[0])

        # the columns take turns, batch by batch (medians_us says why)
        t = medians_us({"eager": eager, "graph": graph, "graph_copy": graph_copy, "crec": crec, "crec_v4": crec_v4,
                        "crec_same": crec_same}, iters, torch)
        for k, v in t.items():
            row[f"{k}_us"] = v
        row["host_graph_us"] = host_us(graph, iters, torch)
        row["host_crec_us"] = host_us(crec, iters, torch)
        row["host_crec_v4_us"] = host_us(crec_v4, iters, torch)
        g.close()
        four.close()
        del static_out
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iters", type=int, default=100, help="calls timed per column (0: correctness only)")
    ap.add_argument("--only", help="a regular expression: run the cases whose name it finds")
    ap.add_argument("--json", help="write every row to this file")
    ap.add_argument("--budget", type=float, default=0, help="start no case after this many seconds (0: no limit)")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("torch_census: PyTorch is not installed", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("torch_census: PyTorch sees no CUDA device", file=sys.stderr)
        return 2
    import crec.torch as ct

    print(f"# {torch.cuda.get_device_name()}; torch {torch.__version__}", flush=True)
    rows = []
    t0 = time.time()
    for name, build in CASES:
        if args.only and not re.search(args.only, name):
            continue
        if args.budget and time.time() - t0 > args.budget:
            print(f"{name:48s} not run: past --budget {args.budget:.0f} s", flush=True)
            continue
        t1 = time.time()
        try:
            row = run_case(name, build, torch, ct, args.iters)
        except Exception as e:  # noqa: BLE001 - a broken case is a row, not the end of the census
            row = {"case": name, "torch": False, "crec": False, "correct": False, "copied": None, "error": _why(e)}
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        row["seconds"] = round(time.time() - t1, 1)
        rows.append(row)
        if "unavailable" in row:
            line = f"unavailable ({row['unavailable']})"
        elif not row["torch"]:
            line = f"torch.cuda.graph refuses it ({row.get('torch_why', row.get('error', ''))})"
        elif not row["crec"]:
            line = f"crec REFUSES: {row.get('crec_why')}"
        elif not row["correct"]:
            line = f"WRONG: worst {row.get('worst')} {row.get('correct_why', '')}; copied {row['copied']}"
        else:
            line = f"ok, copied {row['copied']}"
            if "crec_us" in row:
                line += (f"; us/call eager {row['eager_us']:.1f} graph {row['graph_us']:.1f} "
                         f"graph+copy_ {row['graph_copy_us']:.1f} crec {row['crec_us']:.1f} "
                         f"({row['crec_us'] / row['graph_us']:.3f}x graph); host graph {row['host_graph_us']:.1f} "
                         f"crec {row['host_crec_us']:.1f}; 4 graphs: {row['crec_v4_us']:.1f}, host "
                         f"{row['host_crec_v4_us']:.1f}; same inputs: {row['crec_same_us']:.1f}")
            if row.get("programmatic_edges"):
                line += f"; programmatic (PDL) edges: {row['programmatic_edges']}"
            if row["copied"]:
                line += f"; why: {row['copied_why'][0]}"
        print(f"{name:48s} {line}", flush=True)
    ran = [r for r in rows if "unavailable" not in r]
    torch_ok = [r for r in ran if r["torch"]]
    imported = [r for r in torch_ok if r["crec"]]
    correct = [r for r in imported if r["correct"]]
    copied = sum(r["copied"] or 0 for r in imported)
    no_copy = sum(1 for r in correct if not r["copied"])
    timed = [r for r in correct if "crec_us" in r]
    if timed:
        ratios = sorted(r["crec_us"] / r["graph_us"] for r in timed if not r["copied"])
        over = [r["case"] for r in timed if r["crec_us"] > r["graph_copy_us"]]
        if ratios:
            print(f"# crec / torch graph, median over {len(ratios)} cases with no copy: {statistics.median(ratios):.3f}x")
        print(f"# cases where crec is slower than graph + copy_: {len(over)} {over}")
    pdl = [f"{r['case']} ({r['programmatic_edges']})" for r in imported if r.get("programmatic_edges")]
    print(f"# captures with programmatic (PDL) edges, kept through import and rebinding: {len(pdl)} {pdl}")
    if torch_ok:
        print(f"# of {len(torch_ok)} captured by torch: {len(correct)} imported and correct "
              f"({100 * len(correct) / len(torch_ok):.0f}%), {no_copy} with no copy ({100 * no_copy / len(torch_ok):.0f}%)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    print(f"census: {len(ran)} cases; torch captures {len(torch_ok)}; crec imports {len(imported)}; "
          f"correct {len(correct)}; copied arguments {copied}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
