"""sparsegen: sparse-kernel code generator and autotuner for NVIDIA GPUs.

    import sparsegen
    a = sparsegen.load("layer0.safetensors")            # or sparsegen.from_scipy(csr)
    k = sparsegen.tune(a, n=16, dtype="fp16", top_k=8)  # cached in the kernel database
    k(b, c)                                             # C = A @ B on device arrays
    print(k.schedule, k.schedule_reason, k.measured_ms, k.cache_hit)

B and C are device arrays of any framework that exposes ``__cuda_array_interface__`` (PyTorch
CUDA tensors, CuPy, Numba) in the kernel's dtype and layouts (row-major K x N and M x N by
default). The call runs on the caller's stream: PyTorch's current stream for torch tensors, else
the stream given (an int handle or an object with ``cuda_stream`` / ``ptr``), else the legacy
default stream. Errors are :class:`UserError` (a ValueError) and :class:`CudaError` (a
RuntimeError) with the C++ messages.
"""

from __future__ import annotations

import os
from typing import Any, Optional

import numpy as np

from ._sparsegen import CudaError, Kernel, Matrix, Runtime, UserError
from ._sparsegen import _from_csr, _load

__all__ = ["CudaError", "Kernel", "Matrix", "Runtime", "UserError", "from_csr", "from_scipy",
           "load", "tune", "run"]
__version__ = "0.1.0"

_DTYPES = {"fp32": ("<f4", 4), "fp16": ("<f2", 2), "bf16": ("<V2", 2)}


def load(path: "os.PathLike[str] | str", tensor: str = "") -> Matrix:
    """Loads a matrix file (.mtx, .smtx, .safetensors, .npy); ``tensor`` names a safetensors tensor."""
    return _load(os.fspath(path), tensor)


def from_csr(indptr: Any, indices: Any, data: Any, shape: "tuple[int, int]",
             source: str = "") -> Matrix:
    """A matrix from CSR arrays (sorted column indices, no duplicates). Copies them."""
    return _from_csr(np.ascontiguousarray(indptr, dtype=np.int64),
                     np.ascontiguousarray(indices, dtype=np.int32),
                     np.ascontiguousarray(data, dtype=np.float32),
                     int(shape[0]), int(shape[1]), source)


def from_scipy(m: Any, source: str = "scipy") -> Matrix:
    """A matrix from any SciPy sparse matrix or array (converted to CSR with sorted indices,
    duplicates summed)."""
    csr = m.tocsr(copy=True)
    csr.sum_duplicates()
    csr.sort_indices()
    return from_csr(csr.indptr, csr.indices, csr.data, csr.shape, source)


_default_runtime: Optional[Runtime] = None


def _runtime() -> Runtime:
    global _default_runtime
    if _default_runtime is None:
        try:
            _default_runtime = Runtime(0)
        except CudaError:
            _default_runtime = Runtime.offline("compute_90")
    return _default_runtime


def tune(matrix: Matrix, n: int, dtype: str = "fp16", top_k: Optional[int] = None,
         schedule: str = "", cache_dir: str = "", use_cache: bool = True,
         b_layout: str = "row", c_layout: str = "row", io: str = "fp16",
         runtime: Optional[Runtime] = None) -> Kernel:
    """The kernel for ``matrix`` times N dense columns: from the kernel database, or tuned (the
    cost model ranks the schedule space and the ``top_k`` best are measured on the GPU; default 8
    on a GPU, 0 without one, where kernels are compiled offline and cannot run). ``dtype`` is
    fp32, fp16, bf16, or int8 / fp8_e4m3 with B and C in ``io`` (fp16 or bf16; per-row and
    per-token scales, run by the slide family on (2N-2):2N weights)."""
    rt = runtime if runtime is not None else _runtime()
    return rt.spmm(matrix, int(n), dtype, -1 if top_k is None else int(top_k), schedule,
                   cache_dir, use_cache, b_layout, c_layout, io)


def _device_array(x: Any, name: str, count: int, typestr: str, writable: bool) -> int:
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is None:
        raise UserError(f"{name}: expected a CUDA device array (__cuda_array_interface__), "
                        f"found {type(x).__name__}")
    shape = tuple(cai["shape"])
    size = int(np.prod(shape)) if shape else 1
    if size != count:
        raise UserError(f"{name}: expected {count} elements, found {size} (shape {shape})")
    itemsize = int(typestr[-1])
    if cai["typestr"][-1] != typestr[-1] or (typestr[1] in "f" and cai["typestr"][1] not in "f"):
        if not (typestr == "<V2" and cai["typestr"] in ("<V2", "|V2", "<u2", "<i2")):
            raise UserError(f"{name}: expected {typestr} elements, found {cai['typestr']}")
    strides = cai.get("strides")
    if strides is not None:
        expect, acc = [], itemsize
        for dim in reversed(shape):
            expect.insert(0, acc)
            acc *= dim
        if tuple(strides) != tuple(expect):
            raise UserError(f"{name}: expected a contiguous array, found strides {strides}")
    ptr, readonly = cai["data"]
    if writable and readonly:
        raise UserError(f"{name}: the array is read-only")
    return int(ptr)


def _stream_of(stream: Any, arrays: "tuple[Any, ...]") -> int:
    if stream is None:
        for x in arrays:  # PyTorch: the current stream of the tensor's device
            if type(x).__module__.startswith("torch"):
                import torch  # optional dependency, present when a tensor is
                return int(torch.cuda.current_stream(x.device).cuda_stream)
        return 0
    if isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr", "handle"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    raise UserError(f"stream: expected an int handle or a stream object, found {type(stream).__name__}")


def run(kernel: Kernel, b: Any, c: Any, alpha: float = 1.0, beta: float = 0.0,
        stream: Any = None) -> None:
    """C = alpha * A @ B + beta * C on device arrays (see the module docstring)."""
    typestr, _ = _DTYPES[kernel.io_dtype]
    pb = _device_array(b, "b", kernel.k * kernel.n, typestr, False)
    pc = _device_array(c, "c", kernel.m * kernel.n, typestr, True)
    kernel._run(pb, pc, float(alpha), float(beta), _stream_of(stream, (b, c)))


Kernel.__call__ = run  # type: ignore[attr-defined]
