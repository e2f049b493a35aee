"""One Llama decoder block, pruned, run end to end through sparsegen kernels and checked against
the dense block.

    sparsegen gen-model --like llama-2-7b --layers 1 -o /tmp/l7      # or --like tiny-llama
    python python/examples/llama_block.py --checkpoint /tmp/l7 --json out.json

The block (RMSNorm, grouped-query attention with rotary embeddings, SiLU-gated MLP) is built
from layer ``--layer`` of a Hugging Face-named checkpoint (a shard index or a .safetensors file;
without --checkpoint, a small random pruned block). ``sparsegen.torch.sparsify`` swaps its seven
linear layers for SparseLinear (kernels tuned for N = 1 and 8 tokens, or found in the kernel
database), and the block runs for several token counts (8: a prefill, 1: a decode step, 5 and 13:
counts without a tuned kernel).

Checks, each reported in the JSON:
  - every SparseLinear call against float64 of the same input, within the tight bound (the one
    error bound of the kernels: sparsegen.torch.tight_bound);
  - the block's output against the dense block computed in float32 from the same weights: the
    sparse block's relative error must stay within 2x that of the dense fp16 block (+1e-3), i.e.
    the kernels add no error beyond fp16 arithmetic.
Exit code 0 when every check passes (or, without a GPU, after the dense-path run, reported as
skipped), 1 otherwise.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import struct
import sys
import time

import torch
import torch.nn.functional as F

import sparsegen
import sparsegen.torch as sgt

_ST_DTYPES = {"F16": torch.float16, "BF16": torch.bfloat16, "F32": torch.float32}


def read_safetensors(path: str, names: "set[str]") -> "dict[str, torch.Tensor]":
    """The named tensors of one safetensors file (header JSON + raw little-endian data)."""
    out = {}
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        base = 8 + n
        for name, meta in header.items():
            if name == "__metadata__" or name not in names:
                continue
            if meta["dtype"] not in _ST_DTYPES:
                raise ValueError(f"{path}: tensor {name}: dtype {meta['dtype']} not supported")
            b, e = meta["data_offsets"]
            f.seek(base + b)
            buf = bytearray(f.read(e - b))
            out[name] = torch.frombuffer(buf, dtype=_ST_DTYPES[meta["dtype"]]).reshape(
                meta["shape"]).clone()
    return out


def load_layer(checkpoint: str, layer: int) -> "tuple[dict, dict]":
    """(config, {short name: tensor}) of decoder layer ``layer``."""
    folder = checkpoint if os.path.isdir(checkpoint) else os.path.dirname(checkpoint)
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    prefix = f"model.layers.{layer}."
    index = os.path.join(folder, "model.safetensors.index.json")
    if checkpoint.endswith(".safetensors"):
        files = {checkpoint}
        wanted = None
    else:
        with open(index) as f:
            weight_map = json.load(f)["weight_map"]
        wanted = {k for k in weight_map if k.startswith(prefix)}
        if not wanted:
            raise ValueError(f"{index}: no tensors of layer {layer}")
        files = {os.path.join(folder, weight_map[k]) for k in wanted}
    tensors = {}
    for p in sorted(files):
        with open(p, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            names = {k for k in json.loads(f.read(n)) if k.startswith(prefix)}
        tensors.update(read_safetensors(p, names if wanted is None else names & wanted))
    return config, {k[len(prefix):]: v for k, v in tensors.items()}


def random_layer(hidden=256, inter=688, heads=8, kv_heads=4, sparsity=0.5, seed=0):
    """A small pruned layer (per-tensor magnitude) with the checkpoint's names."""
    g = torch.Generator().manual_seed(seed)
    hd = hidden // heads
    shapes = {"self_attn.q_proj.weight": (hidden, hidden),
              "self_attn.k_proj.weight": (kv_heads * hd, hidden),
              "self_attn.v_proj.weight": (kv_heads * hd, hidden),
              "self_attn.o_proj.weight": (hidden, hidden),
              "mlp.gate_proj.weight": (inter, hidden), "mlp.up_proj.weight": (inter, hidden),
              "mlp.down_proj.weight": (hidden, inter)}
    t = {}
    for name, shape in shapes.items():
        w = torch.randn(*shape, generator=g) * 0.02
        thr = w.abs().flatten().kthvalue(int(w.numel() * sparsity)).values
        w[w.abs() <= thr] = 0
        t[name] = w.half()
    for name in ("input_layernorm.weight", "post_attention_layernorm.weight"):
        t[name] = (1 + 0.05 * (torch.rand(hidden, generator=g) * 2 - 1)).half()
    config = {"hidden_size": hidden, "intermediate_size": inter, "num_attention_heads": heads,
              "num_key_value_heads": kv_heads, "rms_norm_eps": 1e-5}
    return config, t


class RMSNorm(torch.nn.Module):
    def __init__(self, weight: torch.Tensor, eps: float):
        super().__init__()
        self.weight = torch.nn.Parameter(weight, requires_grad=False)
        self.eps = eps

    def forward(self, x):
        v = x.float()
        v = v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + self.eps)
        return (v * self.weight.float()).to(x.dtype)


def _linear(w: torch.Tensor) -> torch.nn.Linear:
    lin = torch.nn.Linear(w.shape[1], w.shape[0], bias=False, dtype=w.dtype)
    with torch.no_grad():
        lin.weight.copy_(w)
    return lin


class Attention(torch.nn.Module):
    def __init__(self, t, heads, kv_heads):
        super().__init__()
        self.q_proj = _linear(t["self_attn.q_proj.weight"])
        self.k_proj = _linear(t["self_attn.k_proj.weight"])
        self.v_proj = _linear(t["self_attn.v_proj.weight"])
        self.o_proj = _linear(t["self_attn.o_proj.weight"])
        self.heads, self.kv_heads = heads, kv_heads
        self.hd = t["self_attn.q_proj.weight"].shape[0] // heads

    def rope(self, x, pos):  # x: [B, H, T, hd]
        half = self.hd // 2
        inv = 1.0 / (10000.0 ** (torch.arange(half, device=x.device, dtype=torch.float32) / half))
        ang = pos.float()[:, None] * inv[None, :]
        cos, sin = ang.cos(), ang.sin()
        x1, x2 = x[..., :half].float(), x[..., half:].float()
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).to(x.dtype)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        pos = torch.arange(t, device=x.device)
        q, k = self.rope(q, pos), self.rope(k, pos)
        rep = self.heads // self.kv_heads
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        att = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(self.hd)
        att = att.masked_fill(torch.ones(t, t, device=x.device, dtype=torch.bool).triu(1),
                              float("-inf")).softmax(-1)
        o = (att @ v.float()).to(x.dtype).transpose(1, 2).reshape(b, t, -1)
        return self.o_proj(o)


class MLP(torch.nn.Module):
    def __init__(self, t):
        super().__init__()
        self.gate_proj = _linear(t["mlp.gate_proj.weight"])
        self.up_proj = _linear(t["mlp.up_proj.weight"])
        self.down_proj = _linear(t["mlp.down_proj.weight"])

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaBlock(torch.nn.Module):
    def __init__(self, config, t):
        super().__init__()
        eps = config.get("rms_norm_eps", 1e-5)
        self.input_layernorm = RMSNorm(t["input_layernorm.weight"], eps)
        self.self_attn = Attention(t, config["num_attention_heads"], config["num_key_value_heads"])
        self.post_attention_layernorm = RMSNorm(t["post_attention_layernorm.weight"], eps)
        self.mlp = MLP(t)

    def forward(self, x):
        h = x + self.self_attn(self.input_layernorm(x))
        return h + self.mlp(self.post_attention_layernorm(h))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", help="generated checkpoint (folder, index or .safetensors)")
    ap.add_argument("--layer", type=int, default=0)
    ap.add_argument("--tokens", default="8,1,5,13", help="token counts to run, comma-separated")
    ap.add_argument("--n-hint", default="1,8", help="token counts to tune kernels for")
    ap.add_argument("--top-k", type=int, default=None, help="candidates measured per kernel")
    ap.add_argument("--cache-dir", default="", help="kernel database folder")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)

    gpu = torch.cuda.is_available()
    dev = torch.device("cuda" if gpu else "cpu")
    config, t = load_layer(args.checkpoint, args.layer) if args.checkpoint else random_layer()
    dense = LlamaBlock(config, {k: v.half() for k, v in t.items()}).to(dev).eval()
    ref32 = copy.deepcopy(dense).float()  # the dense block in float32 (same fp16 weights)
    sparse = copy.deepcopy(dense)
    t0 = time.time()
    # other_n="tile": token counts without a kernel of their own run as launches of the tuned
    # ones (13 = 8 + 5 x 1), so every call below goes through sparsegen kernels.
    swapped = sgt.sparsify(sparse, n_hint=[int(n) for n in args.n_hint.split(",")],
                           top_k=args.top_k, cache_dir=args.cache_dir, other_n="tile")
    tune_s = time.time() - t0

    # Per-layer checks: every SparseLinear call against float64 of its own input.
    layer_checks = {}

    def hook(name):
        def f(mod, inputs, output):
            x = inputs[0].reshape(-1, mod.in_features).to(mod.torch_dtype)
            exact, bound = sgt.tight_bound(mod.weight, x, mod.bias, mod.torch_dtype)
            err = (output.reshape(-1, mod.out_features).double() - exact).abs()
            worst = float((err / bound).max())
            c = layer_checks.setdefault(name, {"calls": 0, "worst_bound_ratio": 0.0,
                                               "tokens": [], "plans": []})
            c["calls"] += 1
            c["tokens"].append(x.shape[0])
            kernels = x.is_cuda and mod.runnable and bool(mod.plan(x.shape[0]))
            c["plans"].append(mod.plan(x.shape[0]) if kernels else "dense")
            # The bound is the kernels'; a dense fallback (cuBLAS may reduce in fp16) is not held
            # to it.
            if kernels or not x.is_cuda:
                c["worst_bound_ratio"] = max(c["worst_bound_ratio"], worst)
        return f

    for name, mod in swapped:
        mod.register_forward_hook(hook(name))

    runs = []
    g = torch.Generator(device="cpu").manual_seed(1)
    with torch.no_grad():
        for tokens in [int(x) for x in args.tokens.split(",")]:
            x = (torch.randn(1, tokens, config["hidden_size"], generator=g) * 0.5).half().to(dev)
            y_ref = ref32(x.float()).double()
            y_dense = dense(x).double()
            y_sparse = sparse(x).double()
            if gpu:
                torch.cuda.synchronize()
            norm = y_ref.norm().item()
            e_dense = (y_dense - y_ref).norm().item() / norm
            e_sparse = (y_sparse - y_ref).norm().item() / norm
            runs.append({"tokens": tokens, "dense_fp16_rel_err": e_dense,
                         "sparse_rel_err": e_sparse,
                         "max_abs_diff_sparse_vs_dense": (y_sparse - y_dense).abs().max().item(),
                         "ok": e_sparse <= 2 * e_dense + 1e-3})

    layers_ok = all(c["worst_bound_ratio"] <= 1.0 for c in layer_checks.values())
    ok = layers_ok and all(r["ok"] for r in runs) and len(swapped) == 7
    result = {
        "device": torch.cuda.get_device_name(0) if gpu else "cpu (no GPU: dense path only)",
        "status": ("pass" if ok else "fail") if gpu else "skipped: no GPU",
        "checkpoint": args.checkpoint or "random",
        "hidden": config["hidden_size"], "intermediate": config["intermediate_size"],
        "swapped": [{"name": n, "shape": [m.out_features, m.in_features], "nnz": m.nnz,
                     "kernels": {str(k): {"schedule": v.schedule, "cache_hit": v.cache_hit,
                                          "measured_ms": v.measured_ms}
                                 for k, v in m.kernels.items()}} for n, m in swapped],
        "tune_s": tune_s, "layer_checks": layer_checks, "runs": runs,
    }
    text = json.dumps(result, indent=2)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    for r in runs:
        print(f"tokens {r['tokens']:3d}: sparse rel err {r['sparse_rel_err']:.2e} "
              f"(dense fp16 {r['dense_fp16_rel_err']:.2e}) {'ok' if r['ok'] else 'FAIL'}")
    for name, c in layer_checks.items():
        print(f"{name:24s} worst error / tight bound {c['worst_bound_ratio']:.3f} "
              f"over {c['calls']} calls")
    print(f"{len(swapped)} linears swapped, tuned in {tune_s:.1f} s; {result['status']}")
    return 0 if (ok or not gpu) else 1


if __name__ == "__main__":
    sys.exit(main())
