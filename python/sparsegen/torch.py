"""PyTorch layer: pruned ``nn.Linear`` weights run through tuned sparsegen kernels.

    import sparsegen.torch as sgt
    layer = sgt.SparseLinear.from_dense(linear, n_hint=(1, 8))   # tunes (or finds) N = 1 and 8
    y = layer(x)                                                 # x: [..., in_features] on CUDA
    swapped = sgt.sparsify(model, include=("*.mlp.*",))          # every prunable nn.Linear

A linear layer computes y = x W^T + b for T tokens (the product of x's leading dimensions). The
kernel computes C = A B with A = W (out x in, sparse), B = x^T (in x T) and C = y^T, so the token
count T is the kernel's N. Kernels are row-major in B and C, the layout ``sparsegen tune-model``
tunes, so a model tuned with tune-model finds its kernels in the database here.

Token counts the layer meets:
  - a tuned N (``n_hint``): that kernel, on torch's current stream;
  - any other T: ``other_n`` decides: "tile" covers the T tokens with launches of the tuned
    kernels (largest N first; e.g. T = 17 with N = {1, 8}: 8 + 8 + 1), "dense" runs F.linear on a
    dense copy of W, "auto" (the default) tiles when that takes at most ``max_tiles`` launches and
    goes dense otherwise (when the layer keeps a dense copy), "tune" tunes a kernel for T on first
    sight (a search: seconds);
  - CPU tensors, or a machine without a GPU (kernels compiled offline cannot run): dense.

The bias is the kernel's C0 (C = A B + 1 * C0 with C0 = b broadcast over tokens), so it is added
inside the kernel's own error bound rather than by a second rounding.

torch is an optional dependency of sparsegen: ``import sparsegen`` never imports it, and this
module raises ImportError with a clear message when torch is missing.
"""

from __future__ import annotations

import fnmatch
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover - exercised only without torch
    raise ImportError("sparsegen.torch needs PyTorch (pip install torch); the rest of sparsegen "
                      "works without it") from e

import numpy as np

import sparsegen as _sg

__all__ = ["SparseLinear", "sparsify", "tight_bound"]

_TORCH_DTYPES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}
_RUNTIMES: Dict[int, "_sg.Runtime"] = {}


def _runtime_for(device: "torch.device") -> "_sg.Runtime":
    """One sparsegen Runtime per CUDA device (offline when there is no GPU)."""
    idx = device.index if device.type == "cuda" and device.index is not None else 0
    if idx not in _RUNTIMES:
        if device.type == "cuda" and torch.cuda.is_available():
            _RUNTIMES[idx] = _sg.Runtime(idx)
        else:
            _RUNTIMES[idx] = _sg._runtime()
    return _RUNTIMES[idx]


def _csr_of(weight: "torch.Tensor", name: str) -> "_sg.Matrix":
    """The nonzeros of a 2-D weight as a sparsegen matrix (fp32 master values, exact for
    fp16/bf16 weights)."""
    if weight.dim() != 2:
        raise _sg.UserError(f"{name}: expected a 2-D weight (out_features x in_features), "
                            f"found shape {tuple(weight.shape)}")
    w = weight.detach().to("cpu", torch.float32).numpy()
    if not np.isfinite(w).all():
        r, c = np.argwhere(~np.isfinite(w))[0]
        raise _sg.UserError(f"{name}: weight ({r}, {c}) is {w[r, c]}; kernels need finite weights")
    mask = w != 0
    indptr = np.zeros(w.shape[0] + 1, dtype=np.int64)
    np.cumsum(mask.sum(axis=1), out=indptr[1:])
    rows, cols = np.nonzero(mask)
    return _sg.from_csr(indptr, cols.astype(np.int32), w[rows, cols], w.shape, source=name)


class SparseLinear(torch.nn.Module):
    """y = x W^T + b with W sparse, through tuned sparsegen kernels (see the module docstring).

    Build it with :meth:`from_dense` (from an ``nn.Linear`` whose weight is already pruned) or
    :meth:`from_weight` (from a pruned weight tensor)."""

    def __init__(self, weight: "torch.Tensor", bias: Optional["torch.Tensor"] = None,
                 n_hint: Sequence[int] = (1, 8), dtype: Optional[str] = None,
                 top_k: Optional[int] = None, cache_dir: str = "", other_n: str = "auto",
                 max_tiles: int = 4, keep_dense: bool = True, name: str = "weight",
                 device: Optional["torch.device"] = None) -> None:
        super().__init__()
        if other_n not in ("auto", "tile", "dense", "tune"):
            raise _sg.UserError(f"other_n: expected auto, tile, dense or tune, found {other_n!r}")
        dtype = dtype or _TORCH_DTYPES.get(weight.dtype, "fp16")
        inv = {v: k for k, v in _TORCH_DTYPES.items()}
        if dtype not in inv:
            raise _sg.UserError(f"dtype: expected fp32, fp16 or bf16, found {dtype!r}")
        ns = sorted({int(n) for n in n_hint})
        if not ns or ns[0] < 1:
            raise _sg.UserError(f"n_hint: expected token counts of 1 or more, found {n_hint!r}")
        self.out_features, self.in_features = int(weight.shape[0]), int(weight.shape[1])
        self.dtype_name = dtype
        self.torch_dtype = inv[dtype]
        self.other_n = other_n
        self.max_tiles = int(max_tiles)
        self.top_k = top_k
        self.cache_dir = cache_dir
        self.name = name
        dev = torch.device(device) if device is not None else weight.device
        if dev.type != "cuda" and torch.cuda.is_available():
            dev = torch.device("cuda", torch.cuda.current_device())
        self._device = dev
        self._matrix = _csr_of(weight, name)
        self.nnz = self._matrix.nnz
        self._runtime = _runtime_for(dev)
        self.kernels: Dict[int, "_sg.Kernel"] = {}
        for n in ns:
            self._tune(n)
        # Parameters as buffers: the layer is for inference (the sparse structure is fixed).
        w = weight.detach().to(self.torch_dtype)
        self.register_buffer("weight", w.to(dev) if keep_dense else None, persistent=False)
        b = None if bias is None else bias.detach().to(dev, self.torch_dtype)
        self.register_buffer("bias", b, persistent=False)

    # ---- construction ------------------------------------------------------------------------
    @classmethod
    def from_dense(cls, linear: "torch.nn.Linear", n_hint: Sequence[int] = (1, 8),
                   dtype: Optional[str] = None, **kw) -> "SparseLinear":
        """From an ``nn.Linear`` whose weight is pruned (its zeros are the structure)."""
        if not isinstance(linear, torch.nn.Linear):
            raise _sg.UserError(f"from_dense: expected a torch.nn.Linear, found "
                                f"{type(linear).__name__}")
        return cls(linear.weight, linear.bias, n_hint=n_hint, dtype=dtype, **kw)

    @classmethod
    def from_weight(cls, weight: "torch.Tensor", bias: Optional["torch.Tensor"] = None,
                    n_hint: Sequence[int] = (1, 8), dtype: Optional[str] = None,
                    **kw) -> "SparseLinear":
        """From a pruned weight tensor (out_features x in_features) and an optional bias."""
        return cls(weight, bias, n_hint=n_hint, dtype=dtype, **kw)

    def _tune(self, n: int) -> "_sg.Kernel":
        k = _sg.tune(self._matrix, n, dtype=self.dtype_name, top_k=self.top_k,
                     cache_dir=self.cache_dir, runtime=self._runtime)
        self.kernels[n] = k
        return k

    # ---- running -----------------------------------------------------------------------------
    @property
    def runnable(self) -> bool:
        """Whether the kernels can run here (False without a GPU: forward goes dense)."""
        return bool(self.kernels) and all(k.runnable for k in self.kernels.values())

    def plan(self, tokens: int) -> List[int]:
        """The kernel N of each launch for ``tokens`` tokens; [] means dense (F.linear)."""
        if tokens in self.kernels:
            return [tokens]
        if self.other_n == "dense" or tokens == 0:
            return []
        if self.other_n == "tune":
            self._tune(tokens)
            return [tokens]
        tiles, left = [], tokens
        for n in sorted(self.kernels, reverse=True):
            while left >= n:
                tiles.append(n)
                left -= n
        if left:  # no N = 1 kernel: the rest cannot be covered
            return []
        if self.other_n == "auto" and len(tiles) > self.max_tiles and self.weight is not None:
            return []
        return tiles

    def forward(self, x: "torch.Tensor") -> "torch.Tensor":
        if x.shape[-1] != self.in_features:
            raise _sg.UserError(f"{self.name}: input has {x.shape[-1]} features, the weight "
                                f"{self.in_features}")
        lead = x.shape[:-1]
        x2 = x.reshape(-1, self.in_features)
        tokens = x2.shape[0]
        tiles = self.plan(tokens) if (x.is_cuda and self.runnable) else []
        if not tiles:
            if self.weight is None:
                raise _sg.UserError(f"{self.name}: no kernel covers {tokens} tokens here and the "
                                    f"layer keeps no dense weight (keep_dense=False)")
            w = self.weight.to(x.device)
            b = None if self.bias is None else self.bias.to(x.device)
            return F.linear(x2.to(w.dtype), w, b).reshape(*lead, self.out_features)
        if x.device != self._device:
            raise _sg.UserError(f"{self.name}: input on {x.device}, kernels for {self._device}")
        x2 = x2.to(self.torch_dtype).contiguous()
        stream = int(torch.cuda.current_stream(x.device).cuda_stream)
        out = torch.empty(tokens, self.out_features, device=x.device, dtype=self.torch_dtype)
        start = 0
        for n in tiles:
            xs = x2[start:start + n]
            # B = x^T (in x n) and C = y^T (out x n), both row-major; for n = 1 these are the
            # rows themselves, no copy.
            b = xs.reshape(self.in_features) if n == 1 else xs.t().contiguous()
            c = torch.empty(self.out_features, n, device=x.device, dtype=self.torch_dtype)
            beta = 0.0
            if self.bias is not None:
                # A fresh C holding the bias (beta = 1): for n = 1 a contiguous() of the expanded
                # bias is the bias buffer itself, which is the Linear's own bias tensor, and the
                # kernel writes C.
                c.copy_(self.bias.reshape(-1, 1).expand(self.out_features, n))
                beta = 1.0
            self.kernels[n]._run(b.data_ptr(), c.data_ptr(), 1.0, beta, stream)
            out[start:start + n] = c.t()
            start += n
        return out.reshape(*lead, self.out_features)

    def extra_repr(self) -> str:
        density = self.nnz / max(1, self.out_features * self.in_features)
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"density={density:.3f}, dtype={self.dtype_name}, "
                f"tuned_n={sorted(self.kernels)}, bias={self.bias is not None}")


def _ulp(v: "torch.Tensor", dtype: "torch.dtype") -> "torch.Tensor":
    """The spacing of ``dtype`` values at |v| (its subnormal spacing below the normal range)."""
    info = torch.finfo(dtype)
    mant = {torch.float16: 10, torch.bfloat16: 7, torch.float32: 23}[dtype]
    a = v.abs().clamp_min(info.tiny)
    return torch.exp2(torch.floor(torch.log2(a)) - mant)


def tight_bound(weight: "torch.Tensor", x: "torch.Tensor", bias: Optional["torch.Tensor"],
                out_dtype: "torch.dtype") -> "Tuple[torch.Tensor, torch.Tensor]":
    """The exact y = x W^T + b (float64) and sparsegen's error bound for a kernel's result:
    |y - exact| <= (L + 4) 2^-23 sum|w x| + 2 * 2^-24 |b| + 1/2 ulp of ``out_dtype`` at y, with
    L = twice the row's nonzeros (its nonzeros plus at most as many fp32 adds of partial rows).
    ``x``: [tokens, in_features] as the kernel saw it (already in its dtype)."""
    w = weight.detach().to(torch.float64)
    xd = x.detach().to(w.device, torch.float64)
    exact = xd @ w.t()
    mag = xd.abs() @ w.abs().t()
    row_nnz = (w != 0).sum(dim=1).to(torch.float64)
    bound = (2 * row_nnz + 4) * 2.0**-23 * mag
    if bias is not None:
        b = bias.detach().to(w.device, torch.float64)
        exact = exact + b
        bound = bound + 2 * 2.0**-24 * b.abs()
    bound = bound + 0.5 * _ulp(exact, out_dtype).to(torch.float64)
    return exact, bound


def _sparsity(w: "torch.Tensor") -> float:
    return float((w == 0).sum().item()) / max(1, w.numel())


def sparsify(model: "torch.nn.Module", include: Iterable[str] = ("*",),
             exclude: Iterable[str] = (), min_sparsity: float = 0.3,
             n_hint: Sequence[int] = (1, 8), dtype: Optional[str] = None,
             **kw) -> List[Tuple[str, "SparseLinear"]]:
    """Replaces every prunable ``nn.Linear`` of ``model`` in place by a :class:`SparseLinear`.

    A linear is prunable when its qualified name (``model.named_modules()``) matches an
    ``include`` glob and no ``exclude`` glob, and at least ``min_sparsity`` of its weight is
    exactly zero (so a dense lm_head or an unpruned layer stays as it is). Returns the
    (name, layer) pairs swapped, in module order; ``kw`` goes to SparseLinear (top_k, cache_dir,
    other_n, ...)."""
    include, exclude = list(include), list(exclude)
    swaps = []
    for name, mod in list(model.named_modules()):
        if not isinstance(mod, torch.nn.Linear):
            continue
        if not any(fnmatch.fnmatchcase(name, p) for p in include):
            continue
        if any(fnmatch.fnmatchcase(name, p) for p in exclude):
            continue
        if _sparsity(mod.weight) < min_sparsity:
            continue
        swaps.append((name, mod))
    done = []
    for name, mod in swaps:
        layer = SparseLinear.from_dense(mod, n_hint=n_hint, dtype=dtype, name=name, **kw)
        parent_name, _, attr = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, attr, layer)
        done.append((name, layer))
    return done
