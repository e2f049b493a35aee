"""The PyTorch layer (sparsegen.torch). Without torch these skip; without a GPU the kernels are
compiled offline and forward runs dense (the CPU tests check that path and the plumbing); the GPU
tests run the kernels on torch tensors against a float64 reference within the tight bound."""

import subprocess
import sys

import pytest

import sparsegen

torch = pytest.importorskip("torch", reason="PyTorch is not installed: sparsegen.torch tests skip")
import sparsegen.torch as sgt  # noqa: E402  (after the skip)


def _has_gpu() -> bool:
    if not torch.cuda.is_available():
        return False
    try:
        sparsegen.Runtime(0)
        return True
    except sparsegen.CudaError:
        return False


GPU = _has_gpu()
needs_gpu = pytest.mark.skipif(not GPU, reason="no GPU (or no CUDA driver): the kernels cannot "
                                               "run here, GPU tests skip")


def _pruned_linear(out_f, in_f, sparsity=0.5, bias=True, seed=0, dtype=torch.float16):
    """A Linear whose weight keeps the largest (1 - sparsity) magnitudes, non-integer values."""
    g = torch.Generator().manual_seed(seed)
    lin = torch.nn.Linear(in_f, out_f, bias=bias)
    with torch.no_grad():
        w = torch.randn(out_f, in_f, generator=g) * 0.05
        k = int(round(w.numel() * sparsity))
        thr = w.abs().flatten().kthvalue(k).values
        w[w.abs() <= thr] = 0
        lin.weight.copy_(w)
        if bias:
            lin.bias.copy_(torch.randn(out_f, generator=g) * 0.1)
    return lin.to(dtype)


def test_import_sparsegen_works_without_torch(tmp_path):
    code = ("import sys; sys.modules['torch'] = None\n"
            "import sparsegen\n"
            "assert sparsegen.from_csr([0, 1], [0], [0.5], (1, 2)).nnz == 1\n"
            "try:\n"
            "    import sparsegen.torch\n"
            "except ImportError as e:\n"
            "    assert 'PyTorch' in str(e), e\n"
            "else:\n"
            "    raise SystemExit('sparsegen.torch imported without torch')\n")
    # Outside the source tree, so that the installed package is the one imported.
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr


def test_from_dense_without_running_kernels_matches_linear(tmp_path):
    lin = _pruned_linear(48, 32, dtype=torch.float32)
    layer = sgt.SparseLinear.from_dense(lin, n_hint=(1, 8), top_k=0, cache_dir=str(tmp_path))
    assert sorted(layer.kernels) == [1, 8]
    assert layer.nnz == int((lin.weight != 0).sum())
    assert (layer.in_features, layer.out_features) == (32, 48)
    assert "tuned_n=[1, 8]" in repr(layer)
    x = torch.randn(3, 5, 32)
    y = layer(x)  # CPU tensor: dense path
    assert y.shape == (3, 5, 48)
    torch.testing.assert_close(y, lin(x))


def test_plan_tiles_other_token_counts(tmp_path):
    lin = _pruned_linear(16, 16, dtype=torch.float32)
    layer = sgt.SparseLinear.from_dense(lin, n_hint=(1, 8), top_k=0, cache_dir=str(tmp_path))
    assert layer.plan(8) == [8]
    assert layer.plan(1) == [1]
    assert layer.plan(17) == [8, 8, 1]
    assert layer.plan(4) == [1, 1, 1, 1]  # auto: up to max_tiles (4) launches
    assert layer.plan(5) == []  # more: dense
    layer.max_tiles = 8
    assert layer.plan(5) == [1, 1, 1, 1, 1]
    layer.other_n = "dense"
    assert layer.plan(17) == []
    layer.other_n = "tile"
    assert layer.plan(23) == [8, 8, 1, 1, 1, 1, 1, 1, 1]
    only8 = sgt.SparseLinear.from_dense(lin, n_hint=(8,), top_k=0, cache_dir=str(tmp_path))
    assert only8.plan(9) == []  # nothing covers the last token: dense


def test_sparsify_swaps_only_pruned_linears(tmp_path):
    model = torch.nn.Sequential(_pruned_linear(32, 16, dtype=torch.float32),
                                torch.nn.ReLU(),
                                _pruned_linear(16, 32, sparsity=0.7, dtype=torch.float32),
                                torch.nn.Linear(16, 16))  # dense: stays
    x = torch.randn(4, 16)
    ref = model(x)
    swapped = sgt.sparsify(model, top_k=0, cache_dir=str(tmp_path))
    assert [n for n, _ in swapped] == ["0", "2"]
    assert isinstance(model[0], sgt.SparseLinear) and isinstance(model[2], sgt.SparseLinear)
    assert isinstance(model[3], torch.nn.Linear)
    torch.testing.assert_close(model(x), ref)
    assert sgt.sparsify(model, top_k=0, cache_dir=str(tmp_path)) == []  # nothing left


def test_sparsify_include_exclude_by_name(tmp_path):
    model = torch.nn.Module()
    model.mlp = torch.nn.Module()
    model.mlp.up_proj = _pruned_linear(16, 8, dtype=torch.float32)
    model.attn = torch.nn.Module()
    model.attn.q_proj = _pruned_linear(8, 8, dtype=torch.float32)
    got = sgt.sparsify(model, include=("mlp.*",), top_k=0, cache_dir=str(tmp_path))
    assert [n for n, _ in got] == ["mlp.up_proj"]
    assert isinstance(model.attn.q_proj, torch.nn.Linear)
    got = sgt.sparsify(model, exclude=("attn.*",), top_k=0, cache_dir=str(tmp_path))
    assert got == []


def test_bad_arguments_are_named(tmp_path):
    with pytest.raises(sparsegen.UserError, match="torch.nn.Linear"):
        sgt.SparseLinear.from_dense(torch.nn.ReLU())
    with pytest.raises(sparsegen.UserError, match="2-D weight"):
        sgt.SparseLinear.from_weight(torch.zeros(2, 3, 4), top_k=0)
    with pytest.raises(sparsegen.UserError, match="other_n"):
        sgt.SparseLinear.from_weight(torch.eye(4), other_n="sometimes", top_k=0)
    with pytest.raises(sparsegen.UserError, match="n_hint"):
        sgt.SparseLinear.from_weight(torch.eye(4), n_hint=(0,), top_k=0)
    w = torch.eye(4)
    w[1, 2] = float("nan")
    with pytest.raises(sparsegen.UserError, match=r"weight \(1, 2\) is nan"):
        sgt.SparseLinear.from_weight(w, top_k=0)
    layer = sgt.SparseLinear.from_weight(torch.eye(4), top_k=0, cache_dir=str(tmp_path))
    with pytest.raises(sparsegen.UserError, match="input has 5 features"):
        layer(torch.zeros(2, 5))


def _check_bound(layer, lin_weight, bias, x, y, what=""):
    x2 = x.reshape(-1, layer.in_features).to(layer.torch_dtype)
    exact, bound = sgt.tight_bound(lin_weight.to(layer.torch_dtype), x2, bias, layer.torch_dtype)
    err = (y.reshape(-1, layer.out_features).to(torch.float64).cpu() - exact.cpu()).abs()
    worst = (err / bound.cpu()).max().item()
    if worst > 1.0:  # where and which kernels, for the report
        tokens = x2.shape[0]
        rows = (err / bound.cpu()).amax(dim=1)
        kernels = {n: layer.kernels[n].schedule for n in layer.plan(tokens) if n in layer.kernels}
        raise AssertionError(f"{what}: error {worst:.3f} x the tight bound; worst tokens "
                             f"{rows.topk(min(3, tokens)).indices.tolist()} of {tokens}, "
                             f"tiles {layer.plan(tokens)}, kernels {kernels}")
    return worst


@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_gpu_forward_within_the_tight_bound(dtype, tmp_path):
    lin = _pruned_linear(256, 128, dtype=dtype).cuda()
    # other_n="tile": every token count through the kernels (dense F.linear is not bound here).
    layer = sgt.SparseLinear.from_dense(lin, n_hint=(1, 8), top_k=4, cache_dir=str(tmp_path),
                                        other_n="tile")
    assert layer.runnable
    bias_before = lin.bias.detach().clone()
    for shape in [(1, 128), (8, 128), (2, 4, 128), (17, 128), (5, 128)]:
        assert layer.plan(int(torch.tensor(shape[:-1]).prod())), shape
        x = torch.randn(*shape, device="cuda", dtype=dtype)
        y = layer(x)
        assert y.shape == (*shape[:-1], 256) and y.dtype == dtype
        _check_bound(layer, lin.weight, bias_before, x, y, what=f"{dtype} {shape}")
        # The layer shares the Linear's bias tensor and never writes it.
        assert torch.equal(lin.bias, bias_before), f"{dtype} {shape}: the bias was overwritten"


@needs_gpu
def test_gpu_runs_on_the_current_stream(tmp_path):
    lin = _pruned_linear(512, 256, bias=False).cuda()
    layer = sgt.SparseLinear.from_dense(lin, n_hint=(8,), top_k=2, cache_dir=str(tmp_path))
    x = torch.randn(8, 256, device="cuda", dtype=torch.float16)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y = layer(x)
        z = y * 2  # ordered after the kernel on s
    torch.cuda.current_stream().wait_stream(s)
    _check_bound(layer, lin.weight, None, x, y)
    torch.testing.assert_close(z, y * 2)


@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_gpu_forward_recorded_in_a_cuda_graph(dtype, tmp_path):
    # torch.cuda.graph records the layer's forward (the kernels' launch sequences included); each
    # replay must compute the result for the input the static tensor holds at that time.
    lin = _pruned_linear(512, 256, dtype=dtype).cuda()
    layer = sgt.SparseLinear.from_dense(lin, n_hint=(8,), top_k=2, cache_dir=str(tmp_path))
    assert layer.runnable and layer.plan(8) == [8]
    bias = lin.bias.detach().clone()
    x = torch.randn(8, 256, device="cuda", dtype=dtype)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the capture, as torch asks
        layer(x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = layer(x)
    for seed in (1, 2):
        g = torch.Generator().manual_seed(seed)
        x.copy_(torch.randn(8, 256, generator=g).to(dtype))
        y.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        _check_bound(layer, lin.weight, bias, x, y, what=f"{dtype} replay {seed}")


@needs_gpu
def test_gpu_sparsified_mlp_matches_dense(tmp_path):
    up = _pruned_linear(256, 64, seed=1)
    down = _pruned_linear(64, 256, seed=2)
    model = torch.nn.Sequential(up, torch.nn.SiLU(), down).cuda()
    x = torch.randn(8, 64, device="cuda", dtype=torch.float16)
    dense = model.float()(x.float())
    model = model.half()
    swapped = sgt.sparsify(model, n_hint=(8,), top_k=2, cache_dir=str(tmp_path))
    assert len(swapped) == 2
    y = model(x)
    rel = ((y.float() - dense).norm() / dense.norm()).item()
    assert rel < 1e-2, rel


@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("n", [1, 8])
def test_gpu_dense_library_candidate_within_the_tight_bound(dtype, n, tmp_path):
    """The dense library candidate (cuBLASLt) on the same layer, with beta = 0 and with the bias
    as C (beta = 1), within the one-rounding bound: cuBLASLt itself rounds the product to a 16-bit
    C before adding C when beta = 1 (7.7x the bound with bf16), so sparsegen adds it in fp32.
    torch's F.linear (bias in the library's epilogue) is reported next to it."""
    lin = _pruned_linear(256, 128, dtype=dtype).cuda()
    name = sgt._TORCH_DTYPES[dtype]
    matrix = sgt._csr_of(lin.weight, "weight")
    k = sparsegen.tune(matrix, n, dtype=name, io=name, schedule="dense;lib=cublaslt", top_k=1,
                       cache_dir=str(tmp_path))
    assert k.schedule.startswith("dense"), k.schedule
    x = torch.randn(n, 128, device="cuda", dtype=dtype)
    b = x.t().contiguous()
    stream = int(torch.cuda.current_stream().cuda_stream)
    ratios = {}
    for beta in (0.0, 1.0):
        c = torch.full((256, n), float("nan"), device="cuda", dtype=dtype)
        bias = lin.bias.detach() if beta else None
        if beta:
            c.copy_(lin.bias.detach().reshape(-1, 1).expand(256, n))
        k._run(b.data_ptr(), c.data_ptr(), 1.0, beta, stream)
        torch.cuda.synchronize()
        exact, bound = sgt.tight_bound(lin.weight, x, bias, dtype)
        err = (c.t().to(torch.float64) - exact).abs()
        ratios[f"beta={beta:g}"] = (err / bound).max().item()
    # The same product by torch (cuBLAS), bias added by the library's epilogue.
    y = torch.nn.functional.linear(x, lin.weight, lin.bias)
    exact, bound = sgt.tight_bound(lin.weight, x, lin.bias.detach(), dtype)
    ratios["torch F.linear"] = ((y.to(torch.float64) - exact).abs() / bound).max().item()
    msg = ", ".join(f"{key}: {v:.3f}" for key, v in ratios.items())
    print(f"{dtype} n={n}: {k.schedule}: {msg}")
    assert ratios["beta=0"] <= 1.0 and ratios["beta=1"] <= 1.0, msg
