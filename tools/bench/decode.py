#!/usr/bin/env python3
"""Greedy decoding of a Llama-style model, a token per step, six ways side by side in one
run (issue 41's table):

- hf generate: Hugging Face ``generate`` with a static cache (``cache_implementation="static"``);
- compile, host loop: the step under ``torch.compile(mode="reduce-overhead")``, the flag
  read on the host after every step;
- torch graph, check every step / every 16: the step under ``torch.cuda.graph``, replayed
  by a host loop that reads the flag after every step, or after every 16 (steps past the
  end do nothing);
- crec graph per step: ``crec.torch.graph`` of the step, called by a host loop that reads
  the flag after every step;
- crec loop: ``crec.torch.loop``: ``while flag: step()`` on the device, one launch for
  the whole generation.

The model is ``transformers.LlamaForCausalLM`` with random weights from a
``LlamaConfig`` (small: host-bound; large: where the device loop's advantage ends). The
step rows run one decoder step written here on the model's own weights (RMSNorm, rotary
embeddings, attention over a static KV cache, SwiGLU), with every value a device tensor:
the token, its position, the output buffer, the count, each sequence's end and the flag
(the loop goes on while some sequence has not emitted the end token and fewer than
`--tokens` were generated). A finished sequence emits the end token, as ``generate``
pads with it. A step after the flag went down changes no token (it rewrites the cache
slot of the position it stopped at). The prompt is prefilled eagerly (not timed).

Each row runs once untimed (compilations, first launches), then is timed `--repeats`
times from the same prefilled state; the table gives the median: tokens per second
(generated tokens of every sequence per second of wall time), host CPU microseconds per
generated step (the generating thread's CPU time, ``time.thread_time``; every wait for
the GPU, a host loop's read of the flag included, is on a blocking event, which does not
spin), and the first step where the row's tokens differ from the reference's (the step
run eagerly, the flag read every step), or "same". The Hugging Face model runs with
``attn_implementation="eager"``, the attention this step computes.

    PYTHONPATH=python CREC_LIBRARY_PATH=build python3 tools/bench/decode.py [--tokens 256] [--batch 1 8]
        [--config small large] [--dtype float32] [--repeats 3] [--json FILE]

Needs a CUDA device, PyTorch and transformers.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

CONFIGS = {
    # host-bound: a step's GPU work is a few tens of microseconds
    "small": dict(hidden_size=256, intermediate_size=688, num_hidden_layers=4, num_attention_heads=4,
                  num_key_value_heads=2, vocab_size=2048),
    # GPU-bound at batch 8: the step's kernels outlast its launch
    "large": dict(hidden_size=2048, intermediate_size=5504, num_hidden_layers=16, num_attention_heads=16,
                  num_key_value_heads=16, vocab_size=32000),
}
PROMPT = 8


class Decoder:
    """One decoder step of a ``LlamaForCausalLM``'s weights over a static KV cache: every
    tensor it touches stays where it is, so that captures replay it."""

    def __init__(self, torch: Any, hf: Any, batch: int, max_len: int) -> None:
        cfg = hf.config
        self.torch = torch
        self.hf = hf
        self.h = cfg.num_attention_heads
        self.kv = cfg.num_key_value_heads
        self.hd = cfg.hidden_size // self.h
        self.eps = cfg.rms_norm_eps
        dev, dt = hf.model.embed_tokens.weight.device, hf.model.embed_tokens.weight.dtype
        layers = cfg.num_hidden_layers
        self.k = torch.zeros(layers, batch, self.kv, max_len, self.hd, device=dev, dtype=dt)
        self.v = torch.zeros_like(self.k)
        theta = getattr(cfg, "rope_theta", None) or (getattr(cfg, "rope_parameters", None) or {}).get("rope_theta", 10000.0)
        self.inv_freq = 1.0 / (theta ** (torch.arange(0, self.hd, 2, device=dev, dtype=torch.float32) / self.hd))
        self.slots = torch.arange(max_len, device=dev)

    def reset(self) -> None:
        self.k.zero_()
        self.v.zero_()

    def _norm(self, x: Any, w: Any) -> Any:
        t = self.torch
        xf = x.to(t.float32)
        xf = xf * t.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return w * xf.to(x.dtype)

    @staticmethod
    def _rotate(x: Any, cos: Any, sin: Any) -> Any:
        half = x.shape[-1] // 2
        rot = x.new_empty(x.shape)
        rot[..., :half] = -x[..., half:]
        rot[..., half:] = x[..., :half]
        return x * cos + rot * sin

    def logits(self, token: Any, pos: Any) -> Any:
        """The logits after `token` (batch, 1) at position `pos` (a one-element tensor),
        its keys and values written into the cache at `pos`."""
        t = self.torch
        F = t.nn.functional
        m = self.hf.model
        b = token.shape[0]
        x = m.embed_tokens(token)  # b, 1, d
        freqs = pos.to(t.float32)[:, None] * self.inv_freq[None, :]
        emb = t.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        visible = self.slots <= pos  # the cache's filled slots
        for i, layer in enumerate(m.layers):
            a = layer.self_attn
            r = self._norm(x, layer.input_layernorm.weight)
            q = F.linear(r, a.q_proj.weight).view(b, 1, self.h, self.hd).transpose(1, 2)
            k = F.linear(r, a.k_proj.weight).view(b, 1, self.kv, self.hd).transpose(1, 2)
            v = F.linear(r, a.v_proj.weight).view(b, 1, self.kv, self.hd).transpose(1, 2)
            q, k = self._rotate(q, cos, sin), self._rotate(k, cos, sin)
            self.k[i].index_copy_(2, pos, k)
            self.v[i].index_copy_(2, pos, v)
            keys, values = self.k[i], self.v[i]
            if self.kv != self.h:
                keys = keys.repeat_interleave(self.h // self.kv, dim=1)
                values = values.repeat_interleave(self.h // self.kv, dim=1)
            att = (q @ keys.transpose(-1, -2)) / math.sqrt(self.hd)
            att = att.masked_fill(~visible, float("-inf")).softmax(-1)
            o = (att @ values).transpose(1, 2).reshape(b, 1, self.h * self.hd)
            x = x + F.linear(o, a.o_proj.weight)
            r = self._norm(x, layer.post_attention_layernorm.weight)
            mlp = layer.mlp
            x = x + F.linear(F.silu(F.linear(r, mlp.gate_proj.weight)) * F.linear(r, mlp.up_proj.weight),
                             mlp.down_proj.weight)
        x = self._norm(x, m.norm.weight)
        return F.linear(x, self.hf.lm_head.weight)[:, -1]


class State:
    """The decode loop's state, all device tensors: the last token (batch, 1), its
    position, the generated tokens (batch, T), the count, each sequence's end, the flag."""

    def __init__(self, torch: Any, batch: int, tokens: int, dev: Any) -> None:
        i64 = torch.int64
        self.token = torch.zeros(batch, 1, dtype=i64, device=dev)
        self.pos = torch.zeros(1, dtype=i64, device=dev)
        self.out = torch.zeros(batch, tokens, dtype=i64, device=dev)
        self.count = torch.zeros(1, dtype=i64, device=dev)
        self.done = torch.zeros(batch, dtype=torch.bool, device=dev)
        self.flag = torch.ones(1, dtype=torch.bool, device=dev)

    def tensors(self) -> list[Any]:
        return [self.token, self.pos, self.out, self.count, self.done, self.flag]


def make_step(torch: Any, dec: Decoder, tokens: int, eos: int) -> Callable[..., None]:
    """One step on (token, pos, out, count, done, flag): the next token of every sequence
    (the end token once it has ended), written at `count`; nothing changes once the flag is
    down, so that a host loop may run steps past the end."""

    def step(token: Any, pos: Any, out: Any, count: Any, done: Any, flag: Any) -> None:
        act = flag.clone()
        nxt = dec.logits(token, pos).argmax(-1, keepdim=True)
        nxt = torch.where(done[:, None], torch.full_like(nxt, eos), nxt)
        idx = count.clamp(max=tokens - 1)
        out.index_copy_(1, idx, torch.where(act, nxt, out.index_select(1, idx)))
        done.logical_or_(act & (nxt[:, 0] == eos))
        token.copy_(torch.where(act, nxt, token))
        pos.add_(act.to(pos.dtype))
        count.add_(act.to(count.dtype))
        flag.copy_(act & ~done.all().reshape(1) & (count < tokens))

    return step


def wait(torch: Any) -> None:
    """Waits for the current stream's work on a blocking event (a wait that sleeps, not
    one that spins: its CPU time is not the host's cost of the step)."""
    done = torch.cuda.Event(blocking=True)
    done.record()
    done.synchronize()


def flag_up(torch: Any, st: State) -> bool:
    """The flag, read on the host once the step that wrote it is done."""
    wait(torch)
    return bool(st.flag)


def prefill(torch: Any, dec: Decoder, st: State, prompt: Any, eos: int) -> None:
    """The prompt into the cache, a token at a time (teacher forcing); the state then
    holds its last token at its position, and the output is all end tokens, as
    ``generate`` pads a sequence that ended."""
    dec.reset()
    st.pos.zero_()
    st.out.fill_(eos)
    st.count.zero_()
    st.done.zero_()
    st.flag.fill_(True)
    for i in range(prompt.shape[1] - 1):
        dec.logits(prompt[:, i:i + 1], st.pos)
        st.pos.add_(1)
    st.token.copy_(prompt[:, -1:])


def timed(torch: Any, run: Callable[[], int], reset: Callable[[], None], repeats: int) -> dict[str, Any]:
    """Median wall seconds and thread CPU seconds of run() (which returns the steps it
    generated) over `repeats` runs, each from reset(), after one untimed run; the end
    waited for on a blocking event."""
    walls, cpus, steps = [], [], 0
    reset()
    run()
    for _ in range(repeats):
        reset()
        torch.cuda.synchronize()
        w0, c0 = time.perf_counter(), time.thread_time()
        steps = run()
        wait(torch)
        c1 = time.thread_time()
        w1 = time.perf_counter()
        walls.append(w1 - w0)
        cpus.append(c1 - c0)
    return {"wall": statistics.median(walls), "cpu": statistics.median(cpus), "steps": steps}


def bench(torch: Any, transformers: Any, config: str, batch: int, tokens: int, dtype: Any, repeats: int,
          seed: int) -> list[dict[str, Any]]:
    import crec.torch as ct

    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(max_position_embeddings=PROMPT + tokens + 8, **CONFIGS[config])
    cfg._attn_implementation = "eager"  # the attention the step computes (not SDPA's kernels)
    hf = transformers.LlamaForCausalLM(cfg).to(device="cuda", dtype=dtype).eval()
    eos = cfg.vocab_size - 1
    prompt = torch.randint(0, cfg.vocab_size - 1, (batch, PROMPT), device="cuda")
    dec = Decoder(torch, hf, batch, PROMPT + tokens + 1)
    st = State(torch, batch, tokens, "cuda")
    step = make_step(torch, dec, tokens, eos)
    args = st.tensors()
    rows: list[dict[str, Any]] = []

    def reset() -> None:
        prefill(torch, dec, st, prompt, eos)

    def add(name: str, run: Callable[[], int], result: Callable[[], Any]) -> None:
        try:
            t = timed(torch, run, reset, repeats)
            got = result()
        except Exception as e:  # a row that cannot run says why; the others go on
            rows.append({"row": name, "error": f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"})
            print(f"  {name}: {rows[-1]['error']}", file=sys.stderr)
            return
        generated = t["steps"]
        differ = (got != reference).any(dim=0).nonzero()
        rows.append({"row": name, "steps": generated, "tokens_per_s": batch * generated / t["wall"],
                     "host_us_per_step": t["cpu"] * 1e6 / max(1, generated), "wall_ms": t["wall"] * 1e3,
                     "first_difference": int(differ[0]) if differ.numel() else None})
        print(f"  {name}: {rows[-1]['tokens_per_s']:.0f} tokens/s", file=sys.stderr)

    with torch.no_grad():
        # the reference: the step run eagerly, the flag read after each step
        def eager_loop() -> int:
            n = 0
            while flag_up(torch, st):
                step(*args)
                n += 1
            return n

        reset()
        eager_loop()
        reference = st.out.clone()
        add("eager, host loop", eager_loop, lambda: st.out.clone())

        # Hugging Face generate, static cache: its tokens after the prompt, padded with the end token
        def hf_run() -> int:
            hf_run.out = hf.generate(prompt, max_new_tokens=tokens, do_sample=False,  # type: ignore[attr-defined]
                                     cache_implementation="static", eos_token_id=eos, pad_token_id=eos)
            return int(hf_run.out.shape[1] - PROMPT)  # type: ignore[attr-defined]

        def hf_tokens() -> Any:
            gen = hf_run.out[:, PROMPT:]  # type: ignore[attr-defined]
            pad = torch.full((batch, tokens - gen.shape[1]), eos, dtype=gen.dtype, device=gen.device)
            return torch.cat((gen, pad), dim=1)

        add("hf generate (static cache)", hf_run, hf_tokens)

        # torch.compile, reduce-overhead: its CUDA graphs, the host reading the flag each step
        for t in args + [dec.k, dec.v, dec.inv_freq, dec.slots]:
            torch._dynamo.mark_static_address(t)
        compiled = torch.compile(step, mode="reduce-overhead", fullgraph=True)

        def compiled_loop() -> int:
            n = 0
            while flag_up(torch, st):
                compiled(*args)
                n += 1
            return n

        reset()
        for _ in range(3):  # compiles and records its graphs, outside the timing
            compiled(*args)
        add("compile reduce-overhead, host loop", compiled_loop, lambda: st.out.clone())

        # torch.cuda.graph of the step, on the state's own tensors
        reset()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            step(*args)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step(*args)

        def graph_loop(every: int) -> Callable[[], int]:
            def run() -> int:
                n = 0
                while flag_up(torch, st):
                    for _ in range(every):
                        graph.replay()
                    n += every
                return int(st.count)

            return run

        add("torch graph, check every step", graph_loop(1), lambda: st.out.clone())
        add("torch graph, check every 16", graph_loop(16), lambda: st.out.clone())

        # crec: the step captured and imported, called per step; then the whole loop on the device
        reset()
        graphed = ct.graph(step, *args)

        def crec_loop_host() -> int:
            n = 0
            while flag_up(torch, st):
                graphed(*args)
                n += 1
            return n

        add("crec graph per step", crec_loop_host, lambda: st.out.clone())
        reset()
        looped = ct.loop(step, *args, flag=st.flag, max_iterations=tokens + 1)

        def crec_device_loop() -> int:
            looped(*args)
            wait(torch)  # then the steps the device ran
            return int(st.count)

        def crec_result() -> Any:
            looped.check()
            return st.out.clone()

        add("crec loop (device)", crec_device_loop, crec_result)
        looped.close()
        graphed.close()
    for r in rows:
        r.update(config=config, batch=batch, dtype=str(dtype).replace("torch.", ""))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=256, help="tokens to generate per sequence (default 256)")
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 8], help="batch sizes (default 1 8)")
    ap.add_argument("--config", nargs="+", default=["small", "large"], choices=sorted(CONFIGS))
    ap.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per row; the median is reported")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write the rows to this file")
    a = ap.parse_args()
    try:
        import torch
        import transformers
    except ImportError as e:
        print(f"decode.py: needs PyTorch and transformers ({e})", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("decode.py: no CUDA device", file=sys.stderr)
        return 2
    dtype = getattr(torch, a.dtype)
    rows = []
    for config in a.config:
        for batch in a.batch:
            print(f"{config}, batch {batch}:", file=sys.stderr)
            rows += bench(torch, transformers, config, batch, a.tokens, dtype, a.repeats, a.seed)
    print(f"greedy decoding, {a.tokens} tokens, {a.dtype}, {torch.cuda.get_device_name()}; median of {a.repeats}")
    print(f"{'config':<7} {'batch':>5} {'row':<36} {'steps':>5} {'tokens/s':>10} {'host us/step':>12} tokens")
    for r in rows:
        if "error" in r:
            print(f"{r['config']:<7} {r['batch']:>5} {r['row']:<36} error: {r['error']}")
            continue
        print(f"{r['config']:<7} {r['batch']:>5} {r['row']:<36} {r['steps']:>5} {r['tokens_per_s']:>10.0f} "
              f"{r['host_us_per_step']:>12.2f} "
              f"{'same' if r['first_difference'] is None else 'differ from step ' + str(r['first_difference'])}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
