"""The gated FFN block (sparsegen.gated_ffn): offline builds and argument errors without a GPU;
on a GPU, the tuned kernel and a given twell schedule against a float64 reference."""

import numpy as np
import pytest

import sparsegen

K, N, M = 128, 1024, 64


def _ffn(seed=3, gated=True):
    """Weights and tokens whose gate activations are sparse: token column 0 is 1 and W_g's row 0
    is -2, so a gate value is about z - 2 with z ~ N(0, 1): some 2 % of N per token. Non-integer
    values, exactly representable in fp16."""
    rng = np.random.default_rng(seed)
    def f16(a):
        return a.astype(np.float16).astype(np.float32)
    x = f16(rng.standard_normal((M, K)))
    x[:, 0] = 1.0
    gate = f16(rng.standard_normal((K, N)) / np.sqrt(K))
    gate[0, :] = -2.0
    up = f16(rng.standard_normal((K, N)) / np.sqrt(K))
    down = f16(rng.standard_normal((N, K)) / np.sqrt(N))
    return (gate if gated else None), up, down, x


def test_offline_build_with_a_schedule_reports_it():
    rt = sparsegen.Runtime.offline("compute_90")
    gate, up, down, _ = _ffn()
    spec = "twell;tile=64;comp=4;warps=4;gate=lib;split=1;balance=queue;teams=1"
    k = sparsegen.gated_ffn(up, down, M, gate=gate, dtype="fp16", schedule=spec, runtime=rt)
    assert k.op == "gated_ffn" and k.schedule == spec
    assert (k.m, k.k, k.n, k.dtype) == (M, K, N, "fp16")
    assert not k.runnable and "sg::twell_down" in k.cuda_source
    # Its call takes x and y, both m x K, and names them.
    with pytest.raises(sparsegen.UserError, match="x: expected a CUDA device array"):
        k(np.zeros((M, K), np.float16), np.zeros((M, K), np.float16))
    # The non-gated form y = ReLU(x W_u) W_d, through the dense FFN.
    _, up, down, _ = _ffn(gated=False)
    d = sparsegen.gated_ffn(up, down, M, schedule="dense_ffn;threads=128", runtime=rt)
    assert d.op == "gated_ffn" and d.schedule.startswith("dense_ffn") and d.dtype == "bf16"


def test_errors_name_the_argument():
    rt = sparsegen.Runtime.offline("compute_90")
    gate, up, down, x = _ffn()
    spec = "twell;tile=64;comp=4;warps=4;gate=lib"
    with pytest.raises(sparsegen.UserError, match="down: expected N x K = 1024 x 128"):
        sparsegen.gated_ffn(up, down.T, M, gate=gate, schedule=spec, runtime=rt)
    with pytest.raises(sparsegen.UserError, match="gate: expected the shape of up"):
        sparsegen.gated_ffn(up, down, M, gate=gate[:, :5], schedule=spec, runtime=rt)
    with pytest.raises(sparsegen.UserError, match="up: expected a 2-D array"):
        sparsegen.gated_ffn(up[0], down, M, gate=gate, schedule=spec, runtime=rt)
    bad = up.copy()
    bad[3, 7] = np.nan
    with pytest.raises(sparsegen.UserError, match=r"up: element \(3, 7\) is nan"):
        sparsegen.gated_ffn(bad, down, M, gate=gate, schedule=spec, runtime=rt)
    with pytest.raises(sparsegen.UserError, match="calibration"):
        sparsegen.gated_ffn(up, down, M, gate=gate, runtime=rt)  # neither tokens nor a schedule
    with pytest.raises(sparsegen.UserError, match="calibration: expected m = 64 tokens"):
        sparsegen.gated_ffn(up, down, M, gate=gate, calibration=x[:10], runtime=rt)
    with pytest.raises(sparsegen.UserError, match="offline"):
        sparsegen.gated_ffn(up, down, M, gate=gate, calibration=x, runtime=rt)
    with pytest.raises(sparsegen.UserError, match="dtype"):
        sparsegen.gated_ffn(up, down, M, gate=gate, dtype="fp64", schedule=spec, runtime=rt)
    with pytest.raises(sparsegen.UserError):
        sparsegen.gated_ffn(up, down, M, gate=gate, schedule="twell;tile=96", runtime=rt)


@pytest.mark.gpu
@pytest.mark.parametrize("schedule", ["", "twell;tile=128;comp=4;warps=8;gate=lib;balance=queue"])
def test_gpu_ffn_matches_float64(schedule, tmp_path):
    torch = pytest.importorskip("torch")
    gate, up, down, x = _ffn()
    k = sparsegen.gated_ffn(up, down, M, gate=gate, dtype="fp16", schedule=schedule,
                            calibration=None if schedule else x, per_family=2,
                            cache_dir=str(tmp_path))
    assert k.runnable and k.op == "gated_ffn"
    xd = torch.tensor(x, dtype=torch.float16, device="cuda")
    y = torch.full((M, K), float("nan"), dtype=torch.float16, device="cuda")
    k(xd, y)
    torch.cuda.synchronize()
    # The reference: fp64 products, the gate activation rounded once to fp16 as the kernels
    # store it; the bound covers fp32 accumulation, a one-ulp difference of that rounding and the
    # output's rounding, with room.
    x64 = x.astype(np.float64)
    h = np.maximum(x64 @ gate, 0.0).astype(np.float16).astype(np.float64)
    u = x64 @ up
    ref = (h * u) @ down
    bound = 1e-2 * (np.abs(h * u) @ np.abs(down)) + 1e-4
    got = y.float().cpu().numpy()
    assert np.isfinite(got).all()
    worst = np.max(np.abs(got - ref) / bound)
    assert worst <= 1.0, f"{k.schedule}: worst error / bound {worst}"
    assert 0 < np.count_nonzero(h) < 0.1 * h.size  # the activations were sparse
