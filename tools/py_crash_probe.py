"""Narrows down a crash of the Python package's offline tune (run by tools/gpu_run.sh when pytest
dies on a signal): the same offline tune in fresh processes with torch not imported, imported
after sparsegen and imported before it, each reporting its exit status and the shared libraries
it had mapped (NVRTC, CUDA, Eigen/BLAS users) just before the tune. Prints one JSON object."""

import json
import os
import subprocess
import sys
import tempfile

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples",
                       "llm_512x128_magnitude80.mtx")

CHILD = r"""
import os, sys, json
order = sys.argv[1]
if order == "torch_first":
    import torch
    torch.cuda.is_available()
import sparsegen
if order == "torch_after":
    import torch
    torch.cuda.is_available()
if len(sys.argv) > 3 and sys.argv[3] == "gpu_runtime_first":
    try:
        sparsegen.Runtime(0)
    except Exception as e:
        print("no gpu runtime:", e, file=sys.stderr)
libs = sorted({l.split()[-1] for l in open("/proc/self/maps") if ".so" in l})
keep = [l for l in libs if any(k in l for k in ("nvrtc", "cuda", "cublas", "sparsegen", "torch_cpu",
                                               "libstdc", "fmt", "sqlite", "gomp"))]
print(json.dumps({"libs": keep}), flush=True)
rt = sparsegen.Runtime.offline("compute_90")
a = sparsegen.load(sys.argv[2])
k = sparsegen.tune(a, 8, dtype="fp16", top_k=0, use_cache=False, runtime=rt)
print(json.dumps({"schedule": k.schedule}), flush=True)
"""


def native_trace(stderr: str) -> list:
    """segv_trace lines ("#i module+0xoff"), symbolized with addr2line where it is installed."""
    frames = []
    for line in stderr.splitlines():
        if not line.startswith("segv_trace: #"):
            continue
        parts = line.split()
        where = parts[2]
        if "+0x" not in where:
            frames.append(where)
            continue
        module, off = where.rsplit("+", 1)
        try:
            sym = subprocess.run(["addr2line", "-f", "-C", "-e", module, off], capture_output=True,
                                 text=True, timeout=30).stdout.split("\n")
            frames.append(f"{os.path.basename(module)}+{off} {sym[0]} {sym[1] if len(sym) > 1 else ''}")
        except (OSError, subprocess.SubprocessError):
            frames.append(where)
    return frames


def main() -> None:
    out = {}
    so = os.environ.get("SEGV_TRACE_SO")
    if so:  # a native backtrace of the plain case (no faulthandler: it would replace the handler)
        env = dict(os.environ, LD_PRELOAD=so)
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run([sys.executable, "-c", CHILD, "no_torch", EXAMPLE, ""],
                               capture_output=True, text=True, cwd=tmp, timeout=300, env=env)
        out["native"] = {"rc": r.returncode, "frames": native_trace(r.stderr),
                         "stderr": r.stderr[-2000:]}
    for order in ("no_torch", "torch_after", "torch_first"):
        for extra in ("", "gpu_runtime_first"):
            name = order + ("+" + extra if extra else "")
            with tempfile.TemporaryDirectory() as tmp:
                r = subprocess.run([sys.executable, "-X", "faulthandler", "-c", CHILD, order,
                                    EXAMPLE, extra], capture_output=True, text=True, cwd=tmp,
                                   timeout=300)
            out[name] = {"rc": r.returncode, "stdout": r.stdout[-4000:],
                         "stderr": r.stderr[-3000:]}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
