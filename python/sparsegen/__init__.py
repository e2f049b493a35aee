"""sparsegen: sparse-kernel code generator and autotuner for NVIDIA GPUs.

    import sparsegen
    a = sparsegen.load("layer0.safetensors")            # or sparsegen.from_scipy(csr)
    k = sparsegen.tune(a, n=16, dtype="fp16", top_k=8)  # cached in the kernel database
    k(b, c)                                             # C = A @ B on device arrays
    g = sparsegen.capture(k, b, c); g.launch()          # the same call as one CUDA graph
    print(k.schedule, k.schedule_reason, k.measured_ms, k.cache_hit)

    f = sparsegen.gated_ffn(up, down, m=4096, gate=gate, calibration=x_host)  # activation-sparse
    f(x, y)                                             # y = (ReLU(x W_g) * (x W_u)) W_d

B and C are CUDA device arrays of any framework, in the kernel's dtype and layouts (row-major
K x N and M x N by default, contiguous), taken through ``__cuda_array_interface__`` (PyTorch CUDA
tensors, CuPy, Numba) or, for arrays without it, through DLPack (``__dlpack__`` and
``__dlpack_device__``: JAX, or any array API library). The call runs on the caller's stream:
PyTorch's current stream for torch tensors, else the stream given (an int handle or an object with
``cuda_stream`` / ``ptr``), else the legacy default stream. Errors are :class:`UserError` (a
ValueError) and :class:`CudaError` (a RuntimeError) with the C++ messages.

How arrays are read: ``__cuda_array_interface__`` first when present (zero-copy, no capsule; a
``stream`` entry (version 3) is honoured as the protocol asks: the kernel's stream waits on the
device for the work enqueued on it so far, with no host wait). Else DLPack: the
device from ``__dlpack_device__`` (CUDA or CUDA managed memory, else a UserError without
exporting), then ``x.__dlpack__(stream=s, max_version=(1, 0), copy=False)`` called here, in
Python, with ``s`` the stream the kernel runs on (1 for the legacy default stream, as the DLPack
spec numbers it), so that the producer makes that stream wait for its pending work on the array;
older producers get ``x.__dlpack__(stream=s)``. nanobind's ndarray import would call
``__dlpack__`` itself but passes no stream, so the capsule is made here and handed to the
extension (``_sparsegen._dlpack_describe``), which reads pointer, dtype, shape, strides, device
and the read-only flag; the checks (dtype, element count, C-contiguous strides, C writable) are the
same as for ``__cuda_array_interface__``. The imported tensor is released after the launch; the
memory stays the caller's array (``copy=False``), which, as with any asynchronous launch, must
outlive the kernel. Immutable arrays (JAX) should not be passed as C unless their producer marks
them read-only (then they are refused): the kernel writes C in place.
"""

from __future__ import annotations

import os
from typing import Any, Optional

import numpy as np

from ._sparsegen import CudaError, Kernel, Matrix, Runtime, UserError
from ._sparsegen import _dlpack_describe, _from_csr, _load

__all__ = ["CudaError", "Kernel", "Matrix", "Runtime", "UserError", "from_csr", "from_scipy",
           "load", "tune", "gated_ffn", "run", "capture", "Graph"]
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
         build_memory_gb: float = 0.0, runtime: Optional[Runtime] = None) -> Kernel:
    """The kernel for ``matrix`` times N dense columns: from the kernel database, or tuned (the
    cost model ranks the schedule space and the ``top_k`` best are measured on the GPU; default 8
    on a GPU, 0 without one, where kernels are compiled offline and cannot run). ``dtype`` is
    fp32, fp16, bf16, or int8 / fp8_e4m3 with B and C in ``io`` (fp16 or bf16; per-row and
    per-token scales, run by the slide family on (2N-2):2N weights). ``build_memory_gb`` bounds
    the host memory of the candidates packed at once while measuring (0: automatic; it matters
    for graph-sized matrices)."""
    rt = runtime if runtime is not None else _runtime()
    return rt.spmm(matrix, int(n), dtype, -1 if top_k is None else int(top_k), schedule,
                   cache_dir, use_cache, b_layout, c_layout, io, float(build_memory_gb))


def _host_matrix(x: Any, name: str) -> np.ndarray:
    """A 2-D array as C-contiguous float32 on the host (the weights' and tokens' master values);
    a torch tensor of any device and float type is copied to the host first."""
    if hasattr(x, "detach") and hasattr(x, "cpu") and hasattr(x, "float"):
        x = x.detach().cpu().float().numpy()
    a = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    if a.ndim != 2:
        raise UserError(f"{name}: expected a 2-D array, found shape {a.shape}")
    if not np.isfinite(a).all():
        r, c = np.argwhere(~np.isfinite(a))[0]
        raise UserError(f"{name}: element ({r}, {c}) is {a[r, c]}; the FFN needs finite values")
    return a


def gated_ffn(up: Any, down: Any, m: int, gate: Any = None, dtype: str = "bf16",
              schedule: str = "", calibration: Any = None, per_family: int = 3,
              cache_dir: str = "", use_cache: bool = True,
              runtime: Optional[Runtime] = None) -> Kernel:
    """The feed-forward block of an LLM for ``m`` tokens, as one kernel:
    y = (ReLU(x W_g) * (x W_u)) W_d, or y = ReLU(x W_u) W_d without ``gate``.

    ``up`` and ``gate`` are K x N (model width x hidden width, as in x @ W: a PyTorch
    ``gate_proj.weight`` is its transpose), ``down`` is N x K; host arrays of any float type
    (kept as fp32 master values, rounded to ``dtype``, fp16 or bf16, on the device). Where the
    gate activations are sparse (ReLU-gated models), the twell family runs only their nonzeros;
    elsewhere the dense FFN wins. Which one: ``calibration`` tokens (m x K host array) are
    measured on the GPU with every FFN family's best-ranked schedules (``per_family`` each) and
    the fastest is returned, its tuning kept in the kernel database for tokens of the same
    statistics; or ``schedule`` names one (``twell;...`` / ``dense_ffn;...``), which is how an
    offline Runtime builds. The kernel runs as ``k(x, y)`` on device arrays of m x K in
    ``dtype`` (``y = alpha * ffn(x) + beta * y``)."""
    rt = runtime if runtime is not None else _runtime()
    g = None if gate is None else _host_matrix(gate, "gate")
    u = _host_matrix(up, "up")
    d = _host_matrix(down, "down")
    c = None if calibration is None else _host_matrix(calibration, "calibration")
    if c is not None and c.shape[0] != int(m):
        raise UserError(f"calibration: expected m = {int(m)} tokens, found {c.shape[0]}")
    return rt.gated_ffn(g, u, d, int(m), dtype, schedule, c, int(per_family), cache_dir,
                        use_cache)


# DLPack device types (dlpack.h DLDeviceType) and dtype codes (DLDataTypeCode).
_DL_CUDA, _DL_CUDA_MANAGED = 2, 13
_DL_DEVICES = {1: "CPU", 2: "CUDA", 3: "CUDA pinned host", 4: "OpenCL", 7: "Vulkan", 8: "Metal",
               9: "VPI", 10: "ROCm", 11: "ROCm host", 12: "extension", 13: "CUDA managed",
               14: "oneAPI", 15: "WebGPU", 16: "Hexagon", 17: "MAIA"}
_DL_CODES = {0: "int", 1: "uint", 2: "float", 3: "opaque", 4: "bfloat", 5: "complex", 6: "bool"}
# The (code, bits) a kernel's B and C may have: bf16 also as raw 16-bit integers, as for
# __cuda_array_interface__, which has no bf16 typestr.
_DL_DTYPES = {"fp32": ((2, 32),), "fp16": ((2, 16),), "bf16": ((4, 16), (1, 16), (0, 16))}
_DL_NAMES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def _expected_array(name: str) -> str:
    return f"{name}: expected a CUDA device array (__cuda_array_interface__ or DLPack __dlpack__)"


def _cai_array(cai: Any, name: str, count: int, typestr: str, writable: bool,
               waits: "list[int]") -> int:
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
    producer = cai.get("stream")  # v3: None or absent = nothing to wait for; 1, 2: default streams
    if producer is not None:
        if not isinstance(producer, int) or producer == 0:
            raise UserError(f"{name}: __cuda_array_interface__ stream must be None or a nonzero "
                            f"int handle, found {producer!r}")
        waits.append(producer)
    return int(ptr)


def _dl_device_name(dev_type: int) -> str:
    return _DL_DEVICES.get(dev_type, f"device type {dev_type}")


def _dlpack_array(x: Any, name: str, count: int, io_dtype: str, writable: bool, stream: int,
                  keep: "list[Any]") -> int:
    what = type(x).__name__
    device = getattr(x, "__dlpack_device__", None)
    if device is None:
        raise UserError(f"{_expected_array(name)}: {what} has __dlpack__ but no "
                        f"__dlpack_device__")
    dev_type, dev_id = (int(v) for v in device())
    if dev_type not in (_DL_CUDA, _DL_CUDA_MANAGED):
        raise UserError(f"{_expected_array(name)}, found a {_dl_device_name(dev_type)} array "
                        f"through DLPack ({what}, device {dev_id})")
    # DLPack numbers the legacy default stream 1 (0 is not allowed for CUDA); 2 (per-thread) and
    # the handles of created streams are the same numbers as the cudaStream_t values.
    s = 1 if stream == 0 else stream
    try:
        try:
            capsule = x.__dlpack__(stream=s, max_version=(1, 0), copy=False)
        except TypeError:  # a producer before the 2023.12 array API (no max_version / copy)
            capsule = x.__dlpack__(stream=s)
    except (BufferError, TypeError, ValueError) as e:
        raise UserError(f"{name}: {what}.__dlpack__(stream={s}) failed: {e}") from e
    try:
        d = _dlpack_describe(capsule)
    except UserError as e:
        raise UserError(f"{name}: {what}.__dlpack__(stream={s}) gave no usable tensor: {e}") from e
    keep.append(d["owner"])
    dev_type, dev_id = d["device"]
    if dev_type not in (_DL_CUDA, _DL_CUDA_MANAGED):  # the capsule has the last word
        raise UserError(f"{_expected_array(name)}, found a {_dl_device_name(dev_type)} array "
                        f"through DLPack ({what}, device {dev_id})")
    shape = tuple(d["shape"])
    size = int(np.prod(shape)) if shape else 1
    if size != count:
        raise UserError(f"{name}: expected {count} elements, found {size} (shape {shape})")
    code, bits, lanes = d["dtype"]
    if lanes != 1 or (code, bits) not in _DL_DTYPES[io_dtype]:
        found = _DL_CODES.get(code, f"code {code} ") + str(bits)
        found += f"x{lanes}" if lanes != 1 else ""
        raise UserError(f"{name}: expected {_DL_NAMES[io_dtype]} elements, found {found} "
                        f"(DLPack)")
    # C order; dimensions of extent 1 may have any stride (the layout is the same).
    acc = 1
    for dim, stride in zip(reversed(shape), reversed(d["strides"])):
        if dim != 1 and stride != acc:
            raise UserError(f"{name}: expected a contiguous array, found strides "
                            f"{tuple(d['strides'])} (elements) for shape {shape}")
        acc *= dim
    if writable and d["readonly"]:
        raise UserError(f"{name}: the array is read-only (DLPack)")
    return int(d["data"])


def _device_array(x: Any, name: str, count: int, io_dtype: str, writable: bool, stream: int,
                  keep: "list[Any]", waits: "Optional[list[int]]" = None) -> int:
    """The device pointer of ``x``, checked: ``__cuda_array_interface__`` when present, else
    DLPack (see the module docstring); ``keep`` collects what must live until the launch,
    ``waits`` the producer streams the launch must be ordered after."""
    has_dlpack = hasattr(x, "__dlpack__")
    try:
        cai = getattr(x, "__cuda_array_interface__", None)
    except Exception:  # e.g. a property that refuses (a CPU JAX array): DLPack says why
        if not has_dlpack:
            raise
        cai = None
    if cai is not None:
        return _cai_array(cai, name, count, _DTYPES[io_dtype][0], writable,
                          waits if waits is not None else [])
    if has_dlpack:
        return _dlpack_array(x, name, count, io_dtype, writable, stream, keep)
    raise UserError(f"{_expected_array(name)}, found {type(x).__name__}")


def _stream_of(stream: Any, arrays: "tuple[Any, ...]") -> int:
    if stream is None:
        for x in arrays:  # PyTorch: the current stream of the CUDA tensor's device
            if type(x).__module__.startswith("torch") and getattr(x, "is_cuda", False):
                import torch  # optional dependency, present when a tensor is
                return int(torch.cuda.current_stream(x.device).cuda_stream)
        return 0
    if isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr", "handle"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    raise UserError(f"stream: expected an int handle or a stream object, found {type(stream).__name__}")


def _operands(kernel: Kernel, b: Any, c: Any, s: int, keep: "list[Any]",
              waits: "list[int]") -> "tuple[int, int]":
    """The device pointers of a kernel's two operands (B and C, or x and y of a gated FFN),
    checked against its shapes and dtype (see _device_array)."""
    if kernel.op == "gated_ffn":
        names, counts = ("x", "y"), (kernel.m * kernel.k, kernel.m * kernel.k)
    else:
        names, counts = ("b", "c"), (kernel.k * kernel.n, kernel.m * kernel.n)
    return (_device_array(b, names[0], counts[0], kernel.io_dtype, False, s, keep, waits),
            _device_array(c, names[1], counts[1], kernel.io_dtype, True, s, keep, waits))


def run(kernel: Kernel, b: Any, c: Any, alpha: float = 1.0, beta: float = 0.0,
        stream: Any = None) -> None:
    """C = alpha * A @ B + beta * C on device arrays (see the module docstring); for a gated FFN
    kernel (``kernel.op == "gated_ffn"``), y = alpha * ffn(x) + beta * y with b = x and c = y,
    both m x K."""
    s = _stream_of(stream, (b, c))  # first: DLPack producers order their work before it
    keep: "list[Any]" = []  # DLPack imports, released after the launch
    waits: "list[int]" = []  # __cuda_array_interface__ producer streams
    pb, pc = _operands(kernel, b, c, s, keep, waits)
    for producer in sorted(set(waits)):
        if producer != s:
            kernel._order_after(producer, s)
    kernel._run(pb, pc, float(alpha), float(beta), s)
    del keep


Kernel.__call__ = run  # type: ignore[attr-defined]


class Graph:
    """A kernel's run recorded as a CUDA graph for fixed arrays and scalars (:func:`capture`):
    :meth:`launch` replays the whole launch sequence (prologue, kernel, epilogue, library steps)
    with one graph launch. It holds the arrays and the kernel, so they live as long as it does."""

    def __init__(self, native: Any, arrays: "tuple[Any, ...]", keep: "list[Any]") -> None:
        self._native, self._arrays, self._keep = native, arrays, keep

    def launch(self, stream: Any = None) -> None:
        """Replays the run on ``stream``, chosen as for :func:`run` (PyTorch's current stream for
        torch tensors); the arrays are read and written in that stream's order."""
        self._native._launch(_stream_of(stream, self._arrays))


def capture(kernel: Kernel, b: Any, c: Any, alpha: float = 1.0, beta: float = 0.0) -> Graph:
    """``run(kernel, b, c, alpha, beta)`` recorded once as a CUDA graph (the arrays are checked as
    for :func:`run`; nothing runs now). Inside a ``torch.cuda.graph`` capture, plain calls are
    recorded as they are, so this is for callers without graphs of their own."""
    s = _stream_of(None, (b, c))
    keep: "list[Any]" = []
    waits: "list[int]" = []  # producer streams: the caller orders the launches after them
    pb, pc = _operands(kernel, b, c, s, keep, waits)
    return Graph(kernel._capture(pb, pc, float(alpha), float(beta)), (b, c), keep)
