"""Arrays through DLPack (``__dlpack__`` / ``__dlpack_device__``) for arrays without
``__cuda_array_interface__``. Without a GPU: the extension's DLPack import on CPU arrays, the
refusals (device, dtype, shape, strides, read-only) and the stream handed to ``__dlpack__``. With
one: torch tensors seen only through DLPack, and JAX arrays, against the
``__cuda_array_interface__`` path and the tight bound (these skip without a GPU, saying so)."""

import numpy as np
import pytest

import sparsegen
from sparsegen._sparsegen import _dlpack_describe

DL_CPU, DL_CUDA = 1, 2


class DLPackOnly:
    """Exposes an array through DLPack only (hides ``__cuda_array_interface__``), recording the
    keyword arguments of each ``__dlpack__`` call. ``device`` overrides what
    ``__dlpack_device__`` says (a producer that lies: the capsule has the last word)."""

    def __init__(self, array, device=None, old_producer=False):
        self.array = array
        self.device = device
        self.old_producer = old_producer
        self.calls = []

    def __dlpack__(self, **kwargs):
        self.calls.append(dict(kwargs))
        if self.old_producer and set(kwargs) - {"stream"}:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        if self.device is not None:  # the array is really on the CPU: no stream there
            kwargs.pop("stream", None)
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.device if self.device is not None else self.array.__dlpack_device__()


def _offline_kernel(io="fp32"):
    rt = sparsegen.Runtime.offline("compute_90")
    a = sparsegen.from_csr([0, 1, 2], [0, 1], [1.5, 2.5], (2, 2))
    return sparsegen.tune(a, 3, dtype=io, top_k=0, use_cache=False, runtime=rt)  # M=K=2, N=3


@pytest.fixture
def cpu_as_cuda(monkeypatch):
    """The Python checks past the device check, on CPU arrays: the extension's description with
    the device rewritten to CUDA 0 (no kernel is launched on these pointers)."""
    def describe(capsule):
        d = _dlpack_describe(capsule)
        assert d["device"][0] == DL_CPU
        d["device"] = (DL_CUDA, 0)
        return d
    monkeypatch.setattr(sparsegen, "_dlpack_describe", describe)


def test_describe_reads_numpy_through_dlpack():
    a = np.arange(24, dtype=np.float16).reshape(2, 3, 4)
    d = _dlpack_describe(a)
    assert d["data"] == a.ctypes.data
    assert d["dtype"] == (2, 16, 1)  # kDLFloat, 16 bits, 1 lane
    assert d["shape"] == (2, 3, 4) and d["strides"] == (12, 4, 1)  # in elements
    assert d["device"] == (DL_CPU, 0) and not d["readonly"]
    v = a[:, 1:, ::2]
    d = _dlpack_describe(v.__dlpack__())  # a capsule, as the call path hands over
    assert d["data"] == v.ctypes.data  # byte offset included
    assert d["shape"] == (2, 2, 2) and d["strides"] == (12, 4, 2)
    assert _dlpack_describe(np.zeros(3, np.int16))["dtype"] == (0, 16, 1)
    assert _dlpack_describe(np.zeros(3, np.uint8))["dtype"] == (1, 8, 1)


def test_describe_flags_read_only_and_refuses_what_it_cannot_import():
    r = np.zeros((2, 2), np.float32)
    r.flags.writeable = False
    assert _dlpack_describe(r.__dlpack__(max_version=(1, 0)))["readonly"]
    cap = np.zeros(2, np.float32).__dlpack__()
    _dlpack_describe(cap)
    with pytest.raises(sparsegen.UserError, match="capsule could not be imported"):
        _dlpack_describe(cap)  # consumed
    with pytest.raises(sparsegen.UserError, match="cannot import an object of type int"):
        _dlpack_describe(5)


def test_cpu_dlpack_arrays_are_refused():
    k = _offline_kernel()
    b, c = np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32)
    fake_b = DLPackOnly(b)  # says CPU: refused before any export
    with pytest.raises(sparsegen.UserError,
                       match=r"b: expected a CUDA device array .*DLPack.*found a CPU array "
                             r"through DLPack \(DLPackOnly, device 0\)"):
        k(fake_b, c)
    assert fake_b.calls == []
    liar = DLPackOnly(b, device=(DL_CUDA, 0))  # says CUDA, exports a CPU capsule
    with pytest.raises(sparsegen.UserError, match="b: expected a CUDA device array.*found a CPU"):
        k(liar, c)
    assert len(liar.calls) == 1

    class NoDevice:
        def __dlpack__(self, **kwargs):
            return b.__dlpack__()
    with pytest.raises(sparsegen.UserError, match="c: .*NoDevice has __dlpack__ but no "
                                                  "__dlpack_device__"):
        sparsegen._device_array(NoDevice(), "c", 6, "fp32", True, 0, [])
    rocm = DLPackOnly(b, device=(10, 1))
    with pytest.raises(sparsegen.UserError, match="found a ROCm array through DLPack"):
        k(rocm, c)


def test_dlpack_gets_the_call_stream(cpu_as_cuda):
    b = np.zeros((2, 3), np.float32)
    fake = DLPackOnly(b, device=(DL_CUDA, 0))
    keep = []
    ptr = sparsegen._device_array(fake, "b", 6, "fp32", False, 0, keep)
    assert ptr == b.ctypes.data and len(keep) == 1
    # The legacy default stream is 1 in DLPack; copies are refused; versioned capsules asked for.
    assert fake.calls == [{"stream": 1, "max_version": (1, 0), "copy": False}]
    sparsegen._device_array(fake, "b", 6, "fp32", False, 0x7F00DEAD, [])
    assert fake.calls[-1]["stream"] == 0x7F00DEAD
    old = DLPackOnly(b, device=(DL_CUDA, 0), old_producer=True)
    assert sparsegen._device_array(old, "b", 6, "fp32", False, 5, []) == b.ctypes.data
    assert old.calls == [{"stream": 5, "max_version": (1, 0), "copy": False}, {"stream": 5}]


def test_dlpack_checks_dtype_shape_layout_and_writability(cpu_as_cuda):
    def dev(x):
        return DLPackOnly(x, device=(DL_CUDA, 0))

    ok = np.zeros((2, 3), np.float32)
    chk = sparsegen._device_array
    assert chk(dev(ok), "c", 6, "fp32", True, 0, []) == ok.ctypes.data
    with pytest.raises(sparsegen.UserError, match="c: expected 6 elements, found 8"):
        chk(dev(np.zeros((2, 4), np.float32)), "c", 6, "fp32", True, 0, [])
    with pytest.raises(sparsegen.UserError, match="b: expected float32 elements, found float16"):
        chk(dev(np.zeros((2, 3), np.float16)), "b", 6, "fp32", False, 0, [])
    with pytest.raises(sparsegen.UserError, match="b: expected float16 elements, found int16"):
        chk(dev(np.zeros((2, 3), np.int16)), "b", 6, "fp16", False, 0, [])
    # bf16: DLPack bfloat16, or raw 16-bit integers (as through __cuda_array_interface__).
    assert chk(dev(np.zeros(6, np.uint16)), "b", 6, "bf16", False, 0, [])
    with pytest.raises(sparsegen.UserError, match="expected bfloat16 elements, found float16"):
        chk(dev(np.zeros(6, np.float16)), "b", 6, "bf16", False, 0, [])
    with pytest.raises(sparsegen.UserError, match=r"b: expected a contiguous array, found strides "
                                                  r"\(1, 2\) \(elements\) for shape \(2, 3\)"):
        chk(dev(np.zeros((3, 2), np.float32).T), "b", 6, "fp32", False, 0, [])
    with pytest.raises(sparsegen.UserError, match="contiguous"):
        chk(dev(np.zeros((2, 6), np.float32)[:, ::2]), "b", 6, "fp32", False, 0, [])
    # Extent-1 dimensions may have any stride: the layout is the same.
    padded = np.zeros((2, 1, 3), np.float32)
    assert chk(dev(np.lib.stride_tricks.as_strided(padded, strides=(12, 999 * 4, 4))),
               "b", 6, "fp32", False, 0, []) == padded.ctypes.data
    ro = np.zeros((2, 3), np.float32)
    ro.flags.writeable = False
    assert chk(dev(ro), "b", 6, "fp32", False, 0, []) == ro.ctypes.data  # B is only read
    with pytest.raises(sparsegen.UserError, match="c: the array is read-only"):
        chk(dev(ro), "c", 6, "fp32", True, 0, [])


def test_dlpack_export_errors_are_user_errors(cpu_as_cuda):
    class Refuses(DLPackOnly):
        def __dlpack__(self, **kwargs):
            raise BufferError("Can't export tensors that require gradient")
    with pytest.raises(sparsegen.UserError, match=r"b: Refuses.__dlpack__\(stream=1\) failed: "
                                                  "Can't export"):
        sparsegen._device_array(Refuses(None, device=(DL_CUDA, 0)), "b", 6, "fp32", False, 0, [])

    class NotACapsule(DLPackOnly):
        def __dlpack__(self, **kwargs):
            return 5
    with pytest.raises(sparsegen.UserError, match=r"c: NotACapsule.__dlpack__\(stream=9\) gave no "
                                                  "usable tensor: DLPack: cannot import"):
        sparsegen._device_array(NotACapsule(None, device=(DL_CUDA, 0)), "c", 6, "fp32", True, 9,
                                [])


def test_cuda_array_interface_is_preferred(cpu_as_cuda):
    class Both(DLPackOnly):
        __cuda_array_interface__ = {"shape": (2, 3), "typestr": "<f4", "data": (1234, False),
                                    "version": 3}
    both = Both(np.zeros((2, 3), np.float32), device=(DL_CUDA, 0))
    assert sparsegen._device_array(both, "b", 6, "fp32", False, 0, []) == 1234
    assert both.calls == []  # no capsule made


def test_capture_checks_the_arrays_and_refuses_an_offline_kernel(cpu_as_cuda):
    k = _offline_kernel()  # M = K = 2, N = 3, fp32
    b = DLPackOnly(np.zeros((2, 3), np.float32), device=(DL_CUDA, 0))
    c = DLPackOnly(np.zeros((2, 3), np.float32), device=(DL_CUDA, 0))
    with pytest.raises(sparsegen.UserError, match="b: expected 6 elements"):
        sparsegen.capture(k, DLPackOnly(np.zeros(4, np.float32), device=(DL_CUDA, 0)), c)
    with pytest.raises(sparsegen.CudaError, match="offline"):
        sparsegen.capture(k, b, c)


def test_cuda_array_interface_stream_is_collected_for_the_wait():
    class Cai:
        def __init__(self, stream):
            self.__cuda_array_interface__ = {"shape": (6,), "typestr": "<f4", "version": 3,
                                             "data": (4096, False), "stream": stream}
    waits = []
    assert sparsegen._device_array(Cai(77), "b", 6, "fp32", False, 5, [], waits) == 4096
    assert sparsegen._device_array(Cai(None), "c", 6, "fp32", True, 5, [], waits) == 4096
    assert waits == [77]  # None: the producer needs no wait
    for bad in (0, "s"):
        with pytest.raises(sparsegen.UserError, match=r"b: __cuda_array_interface__ stream"):
            sparsegen._device_array(Cai(bad), "b", 6, "fp32", False, 5, [], [])


# ---- GPU ------------------------------------------------------------------------------------


def _torch_gpu():
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    try:
        sparsegen.Runtime(0)
    except sparsegen.CudaError:
        return None
    return torch


torch = _torch_gpu()
needs_gpu = pytest.mark.skipif(torch is None, reason="no GPU (or no CUDA driver, or no PyTorch): "
                                                     "the DLPack device tests skip")


def _problem(dtype, n=16, seed=0):
    """A pruned 256 x 128 weight, its kernel for N, B (K x N) and the exact C with its bound."""
    import sparsegen.torch as sgt
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(256, 128, generator=g) * 0.05
    w[w.abs() < 0.04] = 0
    w = w.to(dtype)
    a = sgt._csr_of(w, "w")
    io = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}[dtype]
    k = sparsegen.tune(a, n, dtype=io, top_k=2, use_cache=False)
    b = torch.randn(128, n, generator=g).to(dtype).cuda()
    exact, bound = sgt.tight_bound(w, b.T.cpu(), None, dtype)  # C^T = B^T A^T
    return k, b, exact.T, bound.T


def _within(c, exact, bound, what):
    worst = ((c.double().cpu() - exact).abs() / bound).max().item()
    assert worst <= 1.0, f"{what}: error {worst:.3f} x the tight bound"


@needs_gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_gpu_torch_through_dlpack_matches_the_cai_path(dtype):
    dt = getattr(torch, dtype)
    k, b, exact, bound = _problem(dt)
    c_cai = torch.full((256, 16), float("nan"), device="cuda", dtype=dt)
    k(b, c_cai)
    c_dl = torch.full((256, 16), float("nan"), device="cuda", dtype=dt)
    wb, wc = DLPackOnly(b), DLPackOnly(c_dl)
    assert not hasattr(wb, "__cuda_array_interface__")
    k(wb, wc)
    assert wb.calls and wc.calls  # went through DLPack
    torch.cuda.synchronize()
    _within(c_cai, exact, bound, f"{dtype} CAI")
    _within(c_dl, exact, bound, f"{dtype} DLPack")  # the same kernel: the same bound
    with pytest.raises(sparsegen.UserError, match="contiguous"):
        k(DLPackOnly(b.T.contiguous().T), DLPackOnly(c_dl))
    with pytest.raises(sparsegen.UserError, match="b: expected 2048 elements, found 1024"):
        k(DLPackOnly(b[:, :8]), DLPackOnly(c_dl))


@needs_gpu
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_gpu_captured_graph_replays_the_call(dtype):
    dt = getattr(torch, dtype)
    k, b, exact, bound = _problem(dt, seed=5)
    c = torch.full((256, 16), float("nan"), device="cuda", dtype=dt)
    g = sparsegen.capture(k, b, c)  # records only: C is untouched until a launch
    torch.cuda.synchronize()
    assert torch.isnan(c).all()
    for _ in range(2):  # each replay writes C again
        c.fill_(float("nan"))
        g.launch()
        torch.cuda.synchronize()
        _within(c, exact, bound, f"{dtype} replay")


@needs_gpu
def test_gpu_dlpack_orders_the_producer_before_the_call_stream():
    k, b, exact, bound = _problem(torch.float16, seed=3)
    s = torch.cuda.Stream()
    c = torch.empty((256, 16), device="cuda", dtype=torch.float16)
    torch.cuda.synchronize()
    torch.cuda._sleep(50_000_000)  # the current stream is busy ...
    b2 = b * 1  # ... then writes B2 and C there
    c.fill_(float("nan"))
    wb, wc = DLPackOnly(b2), DLPackOnly(c)
    k(wb, wc, stream=s.cuda_stream)  # s was never synchronized: only __dlpack__(stream=s) orders
    assert wb.calls[0]["stream"] == s.cuda_stream
    s.synchronize()
    _within(c, exact, bound, "side stream through DLPack")


@needs_gpu
def test_gpu_cuda_array_interface_stream_is_waited_for():
    """A version-3 producer names the stream its data was written on (torch's interface names
    none, so a wrapper adds it): B and C are written on a side stream p, the kernel runs on another
    stream s, never synchronized with p: only the wait on p orders them."""
    class OnStream:
        def __init__(self, t, stream):
            self.__cuda_array_interface__ = dict(t.__cuda_array_interface__, version=3,
                                                 stream=stream)

    k, b, exact, bound = _problem(torch.float16, seed=4)
    p, s = torch.cuda.Stream(), torch.cuda.Stream()
    c = torch.empty((256, 16), device="cuda", dtype=torch.float16)
    torch.cuda.synchronize()
    with torch.cuda.stream(p):
        torch.cuda._sleep(50_000_000)  # p is busy ...
        b2 = b * 1  # ... then writes B2 and C there
        c.fill_(float("nan"))
        k(OnStream(b2, p.cuda_stream), OnStream(c, p.cuda_stream), stream=s.cuda_stream)
    s.synchronize()
    _within(c, exact, bound, "side stream through __cuda_array_interface__")


@needs_gpu
def test_gpu_jax_arrays(monkeypatch):
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    jax = pytest.importorskip("jax", reason="JAX is not installed: the JAX test skips")
    try:
        gpus = jax.devices("gpu")
    except RuntimeError:
        gpus = []
    if not gpus:
        pytest.skip("JAX has no CUDA backend here: the JAX test skips")
    k, b, exact, bound = _problem(torch.float32, seed=5)
    jb = jax.device_put(b.cpu().numpy(), gpus[0])
    cai = getattr(jb, "__cuda_array_interface__", {})
    if cai.get("stream") is None:
        # No producer stream: the protocol says the data is ready, but a fresh device_put may
        # still be copying (seen: an all-zero B on an H200); DLPack below orders it itself.
        jb.block_until_ready()
    for what, arr in (("jax array", jb),
                      ("jax array through DLPack only", DLPackOnly(jax.device_put(b.cpu().numpy(),
                                                                                 gpus[0])))):
        c = torch.full((256, 16), float("nan"), device="cuda")
        k(arr, c)
        torch.cuda.synchronize()
        _within(c, exact, bound, what)
