#!/usr/bin/env python3
"""The SASS instruction mix of a generated kernel's main loop, offline (no GPU).

Emits the kernel with `sparsegen emit`, compiles it with nvcc to an sm_90 cubin (ptxas -v gives
the registers), disassembles it with cuobjdump and reports, for the backward branch whose body
holds the most tensor-core instructions (HMMA/HGMMA; else the longest loop), in whichever of the
module's kernels it lies, the kernel's name, the loop's instruction count (every instruction
between the branch and its target, also those its inner branches skip; of the loops holding the
most tensor-core instructions, the shortest) and opcode histogram. Use it to compare two schedules' steps before spending
device time on them:

  tools/sass_mix.py W.safetensors -n 64 --dtype fp16 \
      --schedule 'bitmap_tc;warps=4;mt=2;ksplit=2' --schedule 'bitmap_tc;warps=4;mt=2;ksplit=2;vals=pair'

cuobjdump is not in the CUDA toolkit's compiler packages; `pip download nvidia-cuda-cuobjdump`
and unzip it, then pass --cuobjdump PATH (or put it on PATH). --json prints the figures as JSON.
"""
import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INSTR = re.compile(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
TENSOR = ("HMMA", "HGMMA", "IMMA", "QGMMA")


def opcode(text):
    """The opcode without its predicate and modifiers: '@!P0 LDS.U16 R1, [R2]' -> 'LDS'."""
    text = re.sub(r"^@!?U?P[0-9T]+\s+", "", text)
    return text.split()[0].split(".")[0]


def functions(sass):
    """The disassembly cut per kernel: [(name, text)]. Each function's addresses start at 0, so a
    loop's body must be looked for inside one function (a cubin holding a slide main kernel and
    its lift kernel would otherwise mix the two)."""
    parts = re.split(r"^\s*Function : (\S+)\s*$", sass, flags=re.M)
    return [(parts[i], parts[i + 1]) for i in range(1, len(parts) - 1, 2)] or [("", sass)]


def main_loop(sass):
    """(function name, body) of the backward branch, in any function, whose body holds the most
    tensor-core instructions, then the fewest instructions (the mbarrier try-wait retry blocks that
    ptxas places after the epilogue branch back into the loop, and their span would count the
    epilogue as loop body); without tensor-core instructions, the longest loop."""
    best = None
    for name, text in functions(sass):
        ins = [(int(m.group(1), 16), m.group(2)) for m in map(INSTR.match, text.splitlines()) if m]
        for addr, t in ins:
            m = re.search(r"\bBRA (0x[0-9a-f]+)", t)
            if not m or int(m.group(1), 16) >= addr:
                continue
            body = [b for a, b in ins if int(m.group(1), 16) <= a <= addr]
            tensor = sum(opcode(b) in TENSOR for b in body)
            key = (tensor, -len(body) if tensor else len(body))
            if best is None or key > best[0]:
                best = (key, name, body)
    return (best[1], best[2]) if best else ("", [])


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"sass_mix: {' '.join(cmd[:2])} failed:\n{r.stderr[-2000:]}")
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("matrix")
    ap.add_argument("-n", type=int, required=True)
    ap.add_argument("--dtype", default="fp16")
    ap.add_argument("--schedule", action="append", required=True, help="SPEC (repeatable)")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--sparsegen", default=os.path.join(ROOT, "build", "tools", "sparsegen"))
    ap.add_argument("--cuobjdump", default=shutil.which("cuobjdump") or "cuobjdump")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--listing", action="store_true", help="also print the loop's instructions")
    ap.add_argument("--emit-arg", action="append", default=[],
                    help="extra `sparsegen emit` option, e.g. --emit-arg=--b-layout=col (repeatable)")
    a = ap.parse_args()
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not os.path.exists(a.cuobjdump) and shutil.which(a.cuobjdump) is None:
        sys.exit(f"sass_mix: no cuobjdump ({a.cuobjdump}); see the header of {__file__}")
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, spec in enumerate(a.schedule):
            cu, cubin = os.path.join(tmp, f"k{i}.cu"), os.path.join(tmp, f"k{i}.cubin")
            src = run([a.sparsegen, "emit", a.matrix, "-n", str(a.n), "--dtype", a.dtype,
                       "--schedule", spec, *a.emit_arg]).stdout
            with open(cu, "w") as f:
                f.write(src)
            log = run([nvcc, "-cubin", f"-arch={a.arch}", "-O3", "-std=c++17",
                       "-I", os.path.join(ROOT, "templates"), "-Xptxas", "-v", cu, "-o", cubin]).stderr
            regs = [int(x) for x in re.findall(r"Used (\d+) registers", log)]
            function, body = main_loop(run([a.cuobjdump, "-sass", cubin]).stdout)
            mix = collections.Counter(opcode(t) for t in body)
            if a.listing:
                print(f"{spec}: {function}, main loop", *body, sep="\n  ", file=sys.stderr)
            out.append({"schedule": spec, "function": function,
                        "registers": max(regs) if regs else None,
                        "loop_instructions": len(body),
                        "tensor_instructions": sum(mix[t] for t in TENSOR),
                        "opcodes": dict(mix.most_common())})
    if a.json:
        print(json.dumps({"matrix": a.matrix, "n": a.n, "dtype": a.dtype, "arch": a.arch,
                          "kernels": out}, indent=1))
        return
    for k in out:
        top = ", ".join(f"{op} {c}" for op, c in list(k["opcodes"].items())[:12])
        print(f"{k['schedule']}\n  {k['function']}: registers {k['registers']}, main loop "
              f"{k['loop_instructions']} instructions ({k['tensor_instructions']} tensor core): "
              f"{top}")


if __name__ == "__main__":
    main()
