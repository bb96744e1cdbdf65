"""Compile a variant of a CUDA source here (no GPU needed) and inspect a kernel's hot loop in SASS:
the span of its largest backward branch (for the cluster NTT, one half's item loop). The cluster
kernel's loop schedule moves with small source changes (docs/kernels.md), so check it before
spending device time on a build:

    python tools/sass_loop.py build ffi/ntt_cluster_dispatch.cu /tmp/base        # -> base.sass
    python tools/sass_loop.py build /tmp/variant.cu /tmp/cand -DFOO=1
    python tools/sass_loop.py stats /tmp/cand.sass ntt_split_kernelILb0E                  # forward
    python tools/sass_loop.py compare /tmp/base.sass /tmp/cand.sass ntt_split_kernelILb1E  # inverse
    python tools/sass_loop.py kernels /tmp/base.sass /tmp/cand.sass                # every kernel

SIG picks the kernel by a substring of its mangled name (cluster NTT: ntt_split_kernelILb0E
forward, ntt_split_kernelILb1E inverse). `stats` prints the loop's instruction count,
the sum of the stall cycles its control words encode (a static schedule length, ignoring
variable-latency waits) and the most frequent opcodes; LOP3 far above the baseline's has meant
rematerialised tile offsets (register pressure at 128). `compare` says whether the
whole kernel and its loop are identical, and if not, how many opcodes changed. `kernels` pairs
every kernel of two builds by name (anonymous-namespace tags, which depend on the file name, are
ignored) and says which are identical (instructions and control words), which differ only in
kernel-parameter offsets (every differing number off by one delta, control words equal: a
parameter struct changed layout; the same machine code otherwise) and which differ.

`build` runs under a Python with jaxlib (for XLA's FFI headers), e.g. the device build's venv.
Needs cuobjdump and nvdisasm, which the CUDA toolkit here may lack: the pip wheels
nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm carry them (`pip download --no-deps`, unzip, then
set CUDA_BINUTILS to the folder holding both, e.g. .../nvidia/cu13/bin).
"""
import difflib
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the flags of the project's CUDA objects (build.ninja, CMAKE_BUILD_TYPE=Release), for sm_90a
NVCC_FLAGS = ["-O3", "-DNDEBUG", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-lineinfo",
              "--expt-relaxed-constexpr", "-diag-suppress=940,2473", "-DJAX_FHE_WITH_CUDA=1"]


def tool(name):
    d = os.environ.get("CUDA_BINUTILS")
    return os.path.join(d, name) if d else name


def build(src, out, extra):
    """nvcc -cubin of src (ffi/ headers, jaxlib's FFI headers) and its SASS: out.cubin, out.sass."""
    import jaxlib
    inc = ["-I" + os.path.join(ROOT, "ffi"), "-I" + os.path.join(os.path.dirname(jaxlib.__file__), "include")]
    subprocess.run(["nvcc", "-cubin", *NVCC_FLAGS, *inc, *extra, "-o", out + ".cubin", src], check=True)
    env = dict(os.environ)
    if os.environ.get("CUDA_BINUTILS"):  # cuobjdump runs nvdisasm from PATH
        env["PATH"] = os.environ["CUDA_BINUTILS"] + os.pathsep + env.get("PATH", "")
    sass = subprocess.run([tool("cuobjdump"), "-sass", out + ".cubin"], check=True, capture_output=True,
                          text=True, env=env).stdout
    with open(out + ".sass", "w") as f:
        f.write(sass)
    print("wrote", out + ".sass")


def kernel(path, sig):
    """(address, instruction text, control qword) of the kernel whose name contains sig."""
    lines = open(path).read().split("\n")
    out, on, i = [], False, 0
    while i < len(lines):
        line = lines[i]
        if "Function :" in line:
            on = sig in line
        elif on:
            m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);\s*/\* 0x[0-9a-f]+ \*/", line)
            if m and i + 1 < len(lines):
                ctrl = re.search(r"/\* (0x[0-9a-f]+) \*/", lines[i + 1])
                out.append((int(m.group(1), 16), re.sub(r"\s+", " ", m.group(2).strip()),
                            int(ctrl.group(1), 16) if ctrl else 0))
                i += 1
        i += 1
    if not out:
        sys.exit(f"{path}: no kernel matching {sig!r}")
    return out


def hot_loop(ins):
    """The instructions between the target and the source of the longest backward branch."""
    best = (0, 0, 0)
    for addr, text, _ in ins:
        m = re.search(r"BRA (0x[0-9a-f]+)", text)
        if m and int(m.group(1), 16) < addr and addr - int(m.group(1), 16) > best[0]:
            best = (addr - int(m.group(1), 16), int(m.group(1), 16), addr)
    return [x for x in ins if best[1] <= x[0] <= best[2]]


def normalised(ins):  # branch targets are addresses, which any size change shifts
    return [re.sub(r"BRA (0x[0-9a-f]+)", "BRA T", text) for _, text, _ in ins]


def opcode(text):
    return text.split()[1] if text.startswith("@") else text.split()[0]


def stats(path, sig):
    loop = hot_loop(kernel(path, sig))
    stall = sum((ctrl >> 41) & 0xF for _, _, ctrl in loop)  # Volta+ control word: stall cycles
    counts = {}
    for _, text, _ in loop:
        k = opcode(text).split(".")[0]
        counts[k] = counts.get(k, 0) + 1
    top = " ".join(f"{k}:{v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])[:14])
    print(f"{path}: loop {len(loop)} instructions, stall sum {stall}; {top}")


def compare(a_path, b_path, sig):
    a, b = kernel(a_path, sig), kernel(b_path, sig)
    print(f"kernel: {len(a)} vs {len(b)} instructions, identical: {normalised(a) == normalised(b)}")
    la, lb = normalised(hot_loop(a)), normalised(hot_loop(b))
    print(f"loop: {len(la)} vs {len(lb)} instructions, identical: {la == lb}")
    if la != lb:
        oa, ob = [opcode(t) for t in la], [opcode(t) for t in lb]
        blocks = [op for op in difflib.SequenceMatcher(a=oa, b=ob, autojunk=False).get_opcodes() if op[0] != "equal"]
        changed = sum(max(i2 - i1, j2 - j1) for _, i1, i2, j1, j2 in blocks)
        print(f"  opcodes: {changed} changed in {len(blocks)} places")


def functions(path):
    """{kernel name without its anonymous-namespace tag: [(instruction, control word)]}."""
    out, name = {}, None
    lines = open(path).read().split("\n")
    for i, line in enumerate(lines):
        if "Function :" in line:
            name = re.sub(r"\d+_GLOBAL__N__[0-9a-f]+_\d+_\w+?_[0-9a-f]{8}", "_GLOBAL__N_", line.split(":", 1)[1].strip())
            out[name] = []
        elif name:
            m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?);\s*/\* (0x[0-9a-f]+) \*/", line)
            if m and i + 1 < len(lines):
                ctrl = re.search(r"/\* (0x[0-9a-f]+) \*/", lines[i + 1])
                out[name].append((re.sub(r"\s+", " ", m.group(1).strip()), m.group(2), ctrl.group(1) if ctrl else ""))
    return out


def _numbers(text):
    """The instruction with its numbers taken out, and the numbers: hex literals, and the
    half-precision immediates by which HFMA2.MMA materialises small integers (an integer k is
    printed as k * 2^-24)."""
    nums = []

    def hexnum(m):
        nums.append(int(m.group(0), 16))
        return "#"
    t = re.sub(r"0x[0-9a-f]+", hexnum, text)
    if t.startswith("HFMA2.MMA") and t.endswith(", 0, " + t.rsplit(", ", 1)[-1]):
        v = t.rsplit(", ", 1)[-1]
        try:
            k = float(v) * 2**24
            if k == int(k):
                nums.append(int(k))
                t = t.rsplit(", ", 1)[0] + ", #"
        except ValueError:
            pass
    return t, nums


def offset_delta(a, b):
    """The byte delta by which b's kernel-parameter offsets differ from a's where the two kernels
    are otherwise identical (same opcodes and operands, same control words, every differing number
    off by that one delta), else None."""
    if len(a) != len(b):
        return None
    delta = None
    for (ta, _, ca), (tb, _, cb) in zip(a, b):
        if ta == tb:
            continue
        if ca != cb:
            return None
        (sa, na), (sb, nb) = _numbers(ta), _numbers(tb)
        if sa != sb or len(na) != len(nb):
            return None
        for x, y in zip(na, nb):
            if x != y:
                if delta is None:
                    delta = y - x
                if y - x != delta:
                    return None
    return delta


def kernels(a_path, b_path):
    a, b = functions(a_path), functions(b_path)
    counts = {}
    for name in sorted(set(a) | set(b)):
        if name not in b or name not in a:
            verdict = "only in " + (a_path if name in a else b_path)
        elif a[name] == b[name]:
            verdict = "identical"
        elif (delta := offset_delta(a[name], b[name])) is not None:
            verdict = f"parameter offsets only ({delta:+d} bytes)"
        else:
            oa, ob = [opcode(x[0]) for x in a[name]], [opcode(x[0]) for x in b[name]]
            blocks = [op for op in difflib.SequenceMatcher(a=oa, b=ob, autojunk=False).get_opcodes() if op[0] != "equal"]
            changed = sum(max(i2 - i1, j2 - j1) for _, i1, i2, j1, j2 in blocks)
            verdict = f"DIFFERS ({len(a[name])} vs {len(b[name])} instructions, {changed} opcodes changed)"
        counts[verdict.split(" (")[0]] = counts.get(verdict.split(" (")[0], 0) + 1
        print(f"{verdict}: {name}")
    print("summary:", ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))


def main(argv):
    if len(argv) >= 3 and argv[0] == "build":
        build(argv[1], argv[2], argv[3:])
    elif len(argv) == 3 and argv[0] == "stats":
        stats(argv[1], argv[2])
    elif len(argv) == 4 and argv[0] == "compare":
        compare(argv[1], argv[2], argv[3])
    elif len(argv) == 3 and argv[0] == "kernels":
        kernels(argv[1], argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
