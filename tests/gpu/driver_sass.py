#!/usr/bin/env python3
"""Not a test: the machine code NVIDIA's drivers compiled for mxa, read offline from mxa's kernel cache.

  python3 tests/gpu/driver_sass.py FILE [OUT_DIR]

FILE is a cubin (tests/opencl/mma_sass.sh passes its own) or an entry of MXA_CACHE_DIR copied back
from a GPU machine:
- vulkan-pipeline-*.bin: the driver's VkPipelineCache data. Each pipeline is a zstd frame holding
  NVIDIA's own container, whose instructions `nvdisasm -b SM90` decodes up to the last EXIT. Where
  they start is read from the container as observed (not a documented field), else found by trying.
- opencl-binary-*.bin: the PTX NVIDIA's OpenCL compiler wrote, assembled here with ptxas (-v: its
  registers, spills and shared memory), so it is the driver's PTX, unlike tests/opencl/mma_sass.sh,
  which compiles the kernel source with clang.
For each kernel it prints opcode counts, then the blocks of its longest loop (the key-tile loop):
first address, instruction count, the stall cycles its scheduling bits fix (a lower bound on
one warp's issue time, before scoreboard waits for memory, MUFU or matrix results), its
branches, its most frequent opcodes. A block's count times how often a tile takes it is that
path's instruction cost. OUT_DIR (default: a temporary folder)
keeps every kernel's SASS. ptxas and nvdisasm are those tests/opencl/mma_sass.sh fetches into
$MXA_SASS_TOOLS (default /tmp/mxa-sass-tools); the zstd command unpacks the Vulkan entries.
"""
import collections, os, re, struct, subprocess, sys, tempfile

TOOLS = os.environ.get("MXA_SASS_TOOLS", "/tmp/mxa-sass-tools")
EXIT = bytes.fromhex("4d79000000000000")  # SM90 EXIT's low 8 bytes (its scheduling bits vary)


def tool(name):
    for root, _, files in os.walk(TOOLS):
        if name in files: return os.path.join(root, name)
    sys.exit(f"{name} not found under {TOOLS}: run tests/opencl/mma_sass.sh once to fetch it")


class Sass(str):
    """nvdisasm's text, with the instruction bytes it came from (`code`, addresses from 0)."""
    def __new__(cls, text, code=b""):
        obj = super().__new__(cls, text)
        obj.code = code
        return obj


def stall_cycles(sass, address):
    """The stall count the compiler set in an instruction's scheduling bits (bits 105..108 of
    the 128-bit word on SM70 and later): the cycles before the warp may issue its next
    instruction, whatever scoreboard waits then add. None without the instruction bytes."""
    code = getattr(sass, "code", b"")
    if address + 16 > len(code): return None
    return (struct.unpack_from("<Q", code, address + 8)[0] >> 41) & 15


def disassemble_raw(blob, path):
    """SASS of an NVIDIA container's instructions, or None."""
    exits = [m.start() for m in re.finditer(re.escape(EXIT), blob)]
    if not exits: return None
    def decode(start, end):
        open(path, "wb").write(blob[start:end])
        p = subprocess.run([tool("nvdisasm"), "-b", "SM90", path], capture_output=True, text=True)
        return Sass(p.stdout, blob[start:end]) if "error" not in p.stderr and p.stdout.strip() else None
    # In the containers seen so far (driver 580) the word pair at 0x4c gives the code's size and
    # offset, the instructions starting 8 bytes in; otherwise try each 16-byte slot before the
    # first EXIT, a 16-instruction window at a time
    starts = [struct.unpack_from("<I", blob, 0x50)[0] + 8] if blob.startswith(b"NVDANVVMNVuc") and len(blob) > 0x54 else []
    for start in starts + list(range(exits[0] % 16, exits[0], 16)):
        if start % 16 == exits[0] % 16 and decode(start, min(start + 256, exits[0] + 16)): return decode(start, exits[-1] + 16)
    return None


def assemble_ptx(ptx, path):
    """[(kernel, ptxas -v summary, SASS)] of the driver's PTX, one per entry."""
    ptx = re.sub(rb"^\.version \d+\.\d+", b".version 8.8", ptx, count=1, flags=re.M)  # ptxas 12.9 reads up to 8.8
    open(path + ".ptx", "wb").write(ptx)
    p = subprocess.run([tool("ptxas"), "-arch=sm_90", "-v", path + ".ptx", "-o", path + ".cubin"], capture_output=True, text=True)
    info, name = collections.defaultdict(list), None
    for line in p.stderr.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m: name = m.group(1)
        elif name and re.search(r"registers|spill", line): info[name].append(line.split(":", 1)[-1].strip())
    return elf_kernels(open(path + ".cubin", "rb").read(), path, info)


def elf_kernels(d, path, info=None):
    """[(kernel, summary, SASS)] of a cubin: each .text section alone, as raw instructions (the
    same addresses as the Vulkan kernels)."""
    shoff = struct.unpack_from("<Q", d, 0x28)[0]
    size, count, names = struct.unpack_from("<HHH", d, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", d, shoff + i * size) for i in range(count)]
    strings = sections[names][4]
    kernels = []
    for s in sections:
        section = d[strings + s[0]:d.index(b"\0", strings + s[0])].decode()
        if section.startswith(".text."):
            kernel = section[len(".text."):]
            sass = disassemble_raw(d[s[4]:s[4] + s[5]], f"{path}.{kernel}.bin")
            if sass: kernels.append((kernel, " ".join((info or {}).get(kernel, [])), sass))
    return kernels


def instructions(sass):
    return [(int(m.group(1), 16), m.group(2)) for m in re.finditer(r"/\*([0-9a-f]+)\*/\s+(.*?)\s*;", sass)]


def opcode(text):
    return re.sub(r"^@!?U?P\w+\s+", "", text).split()[0].split(".")[0]


def report(name, sass, info=""):
    ins = instructions(sass)
    ops = collections.Counter(opcode(t) for _, t in ins)
    print(f"== {name}: {len(ins)} instructions{', ' + info if info else ''}")
    print("   " + ", ".join(f"{k} {ops[k]}" for k in ("IMMA", "HMMA", "LDSM", "LDS", "MUFU", "STL", "LDL", "BAR") if ops[k]))
    loops = [(a - int(m.group(1), 16), int(m.group(1), 16), a) for a, t in ins
             for m in [re.search(r"BRA\s.*?(0x[0-9a-f]+)", t)] if m and int(m.group(1), 16) < a]
    if not loops: return
    _, first, last = max(loops)
    body = [(a, t) for a, t in ins if first <= a <= last]
    targets = {int(m.group(1), 16) for _, t in body for m in [re.search(r"(?:BRA|CALL\.REL\.NOINC)\s.*?(0x[0-9a-f]+)", t)] if m}
    blocks, cur = [], []
    for a, t in body:
        if a in targets and cur: blocks.append(cur); cur = []
        cur.append((a, t))
        if "BRA" in t: blocks.append(cur); cur = []
    if cur: blocks.append(cur)
    loop_ops = collections.Counter(opcode(t) for _, t in body)
    print(f"   longest loop {first:#x}..{last:#x}: {len(body)} instructions: " + ", ".join(f"{k} {v}" for k, v in loop_ops.most_common(16)))
    print("   by block (first address, instructions, stall cycles, branches, opcodes):")
    for b in blocks:
        c = collections.Counter(opcode(t) for _, t in b)
        branches = "; ".join(t for _, t in b if "BRA" in t)
        stalls = [stall_cycles(sass, a) for a, _ in b]
        stall = f"{sum(stalls):6d}" if None not in stalls else "     -"
        print(f"   {b[0][0]:#7x} {len(b):5d} {stall}  {branches:28.28s}  " + ", ".join(f"{k} {v}" for k, v in c.most_common(8)))


def main():
    if len(sys.argv) < 2: sys.exit(__doc__)
    data = open(sys.argv[1], "rb").read()
    out = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="mxa-sass-")
    os.makedirs(out, exist_ok=True)
    n = 0
    ptx_at = data.find(b"//\n// Generated by NVIDIA")
    if data.startswith(b"\x7fELF") or ptx_at >= 0:  # a cubin, or an OpenCL program binary (PTX text)
        kernels = (elf_kernels(data, os.path.join(out, "cubin")) if data.startswith(b"\x7fELF")
                   else assemble_ptx(data[ptx_at:].split(b"\0", 1)[0], os.path.join(out, "program")))
        for kernel, info, sass in kernels:
            open(os.path.join(out, kernel + ".sass"), "w").write(sass)
            report(kernel, sass, info)
            n += 1
    else:  # a Vulkan pipeline cache: zstd frames
        frames = [m.start() for m in re.finditer(re.escape(b"\x28\xb5\x2f\xfd"), data)] + [len(data)]
        for i in range(len(frames) - 1):
            p = subprocess.run(["zstd", "-d", "-q", "-c"], input=data[frames[i]:frames[i + 1]], capture_output=True)
            sass = disassemble_raw(p.stdout, os.path.join(out, f"k{i}.bin")) if p.stdout else None
            if not sass: continue
            open(os.path.join(out, f"k{i}.sass"), "w").write(sass)
            report(f"pipeline {i}", sass)
            n += 1
    print(f"{n} kernel(s); SASS in {out}")


if __name__ == "__main__":
    main()
