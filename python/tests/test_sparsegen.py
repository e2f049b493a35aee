"""The Python package without a GPU (GPU tests skip, saying so)."""

import os
import pathlib

import numpy as np
import pytest

import sparsegen

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "llm_512x128_magnitude80.mtx"


def test_load_example():
    a = sparsegen.load(EXAMPLE)
    assert a.shape == (512, 128)
    assert a.nnz == 13107
    assert a.indptr.dtype == np.int64 and a.indptr[-1] == a.nnz
    assert a.indices.dtype == np.int32 and a.data.dtype == np.float32


def test_bad_file_names_it():
    with pytest.raises(sparsegen.UserError, match="nope.mtx"):
        sparsegen.load("nope.mtx")
    assert issubclass(sparsegen.UserError, ValueError)


def test_from_csr_checks_and_round_trips():
    a = sparsegen.from_csr([0, 2, 3], [0, 2, 1], [0.5, -1.25, 2.0], (2, 3))
    assert a.shape == (2, 3) and a.nnz == 3
    np.testing.assert_array_equal(a.data, np.array([0.5, -1.25, 2.0], dtype=np.float32))
    with pytest.raises(sparsegen.UserError):
        sparsegen.from_csr([0, 2, 3], [2, 0, 1], [1.0, 1.0, 1.0], (2, 3))  # unsorted row
    with pytest.raises(sparsegen.UserError, match="indptr"):
        sparsegen.from_csr([0, 2], [0, 1], [1.0, 1.0], (2, 3))


def test_from_scipy_sorts_and_sums():
    sp = pytest.importorskip("scipy.sparse")
    m = sp.coo_matrix(([1.5, 2.5, 0.75], ([1, 0, 1], [2, 1, 2])), shape=(2, 4))
    a = sparsegen.from_scipy(m)
    assert a.nnz == 2
    np.testing.assert_array_equal(a.indices, [1, 2])
    np.testing.assert_allclose(a.data, [2.5, 2.25])


def test_offline_tune_reports_the_schedule(tmp_path):
    rt = sparsegen.Runtime.offline("compute_90")
    a = sparsegen.load(EXAMPLE)
    k = sparsegen.tune(a, 8, dtype="fp16", top_k=0, cache_dir=str(tmp_path), runtime=rt)
    assert k.schedule.split(";")[0] in {"general", "macko", "bitmap_tc", "baked", "slide"}
    assert k.schedule_reason
    assert not k.runnable and k.measured_ms is None
    assert (k.m, k.k, k.n, k.dtype) == (512, 128, 8, "fp16")
    again = sparsegen.tune(a, 8, dtype="fp16", top_k=0, cache_dir=str(tmp_path), runtime=rt)
    assert again.cache_hit and again.schedule == k.schedule
    with pytest.raises(sparsegen.UserError, match="dtype"):
        sparsegen.tune(a, 8, dtype="fp64", top_k=0, runtime=rt)
    with pytest.raises(sparsegen.UserError, match="schedule"):
        sparsegen.tune(a, 8, dtype="fp16", top_k=0, schedule="general;warps=x", runtime=rt)
    with pytest.raises(sparsegen.UserError, match="build_memory_gb"):
        sparsegen.tune(a, 8, dtype="fp16", top_k=0, build_memory_gb=-1, runtime=rt)
    bounded = sparsegen.tune(a, 8, dtype="fp16", top_k=0, build_memory_gb=1.5,
                             cache_dir=str(tmp_path), runtime=rt)
    assert bounded.schedule == k.schedule


def test_offline_int8_six_eight_goes_to_slide():
    # A 32 x 64 weight, 6 of every 8 columns kept: (2N-2):2N with N = 4.
    rows, cols = 32, 64
    indptr, indices, data = [0], [], []
    for r in range(rows):
        for c in range(cols):
            if (c + r) % 8 not in (0, 5):
                indices.append(c)
                data.append(0.5 + 0.01 * ((r * cols + c) % 97))
        indptr.append(len(indices))
    a = sparsegen.from_csr(indptr, indices, data, (rows, cols))
    rt = sparsegen.Runtime.offline("compute_90")
    k = sparsegen.tune(a, 16, dtype="int8", io="bf16", top_k=0, use_cache=False, runtime=rt)
    assert k.schedule.startswith("slide;pattern=6:8")
    assert (k.dtype, k.io_dtype) == ("int8", "bf16")
    with pytest.raises(sparsegen.UserError, match="io"):
        sparsegen.tune(a, 16, dtype="int8", io="fp32", top_k=0, runtime=rt)


def test_call_rejects_host_arrays():
    rt = sparsegen.Runtime.offline("compute_90")
    a = sparsegen.from_csr([0, 1], [0], [1.5], (1, 1))
    k = sparsegen.tune(a, 1, dtype="fp32", top_k=0, use_cache=False, runtime=rt)
    # NumPy arrays have __dlpack__ (device CPU): refused from __dlpack_device__, naming both ways.
    with pytest.raises(sparsegen.UserError,
                       match=r"b: expected a CUDA device array \(__cuda_array_interface__ or "
                             r"DLPack __dlpack__\), found a CPU array through DLPack"):
        k(np.zeros(1, np.float32), np.zeros(1, np.float32))
    with pytest.raises(sparsegen.UserError, match="__cuda_array_interface__ or DLPack.*found list"):
        k([0.0], [0.0])


@pytest.mark.gpu
def test_gpu_spmm_matches_numpy():
    cupy = pytest.importorskip("cupy")
    a = sparsegen.load(EXAMPLE)
    k = sparsegen.tune(a, 16, dtype="fp32", top_k=2, use_cache=False)
    rng = np.random.default_rng(1)
    b = rng.uniform(0.5, 1.5, (128, 16)).astype(np.float32)
    c = cupy.full((512, 16), np.nan, dtype=cupy.float32)
    k(cupy.asarray(b), c)
    dense = np.zeros((512, 128), np.float32)
    for r in range(512):
        dense[r, a.indices[a.indptr[r]:a.indptr[r + 1]]] = a.data[a.indptr[r]:a.indptr[r + 1]]
    np.testing.assert_allclose(cupy.asnumpy(c), dense @ b, rtol=1e-4, atol=1e-5)


def test_extension_keeps_its_static_libraries_private():
    # The module links sparsegen (and, with some toolchains, libstdc++) from static archives. Were
    # their symbols exported, the process's own shared libstdc++ of another version would take
    # over part of them and crash in locale code (istream, regex): nothing of them is exported.
    import shutil
    import subprocess

    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm (binutils) on this machine")
    out = subprocess.run([nm, "-D", "--defined-only", "-C", sparsegen._sparsegen.__file__],
                         capture_output=True, text=True, check=True).stdout
    leaked = [line for line in out.splitlines()
              if "sparsegen::" in line or "std::locale" in line or "codecvt" in line]
    assert not leaked, f"exported from static archives: {leaked[:5]}"
    assert "PyInit__sparsegen" in out
