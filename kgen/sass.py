"""The SASS instruction mix of a compiled kernel, read with cuobjdump -sass: what a kernel engineer
checks first (tensor-core MMAs, ldmatrix, cp.async, global loads, spill traffic).

cuobjdump comes from the optional `nvidia-cuda-cuobjdump` + `nvidia-cuda-nvdisasm` packages
(`pip install "kgen[sass]"`) or a CUDA toolkit on PATH; without it the mix is None.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

# Reported opcode families: column name -> SASS opcodes counted there.
FAMILIES = {
    "hmma": ("HMMA",),
    "ldsm": ("LDSM",),
    "ldgsts": ("LDGSTS",),
    "ldg": ("LDG",),
    "lds": ("LDS",),
    "sts": ("STS",),
    "spill": ("LDL", "STL"),
}
# A listing's instruction: its address, its text (predicate, opcode with modifiers, operands), its
# opcode without modifiers
_INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+((?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)[^;]*);")
_BRANCH_TARGET = re.compile(r"\bBRA\b[^;]*?(0x[0-9a-f]+)")
_FUNCTION = re.compile(r"^\s*Function : ", re.MULTILINE)


@functools.cache
def cuobjdump() -> str | None:
    """The cuobjdump binary: the pip package's, else one on PATH."""
    try:
        import nvidia.cu13

        folder = Path(next(iter(nvidia.cu13.__path__))) / "bin"
        if (folder / "cuobjdump").is_file():
            return str(folder / "cuobjdump")
    except (ImportError, StopIteration):
        pass
    return shutil.which("cuobjdump")


def opcode_counts(sass: str) -> Counter:
    """Opcode (without modifiers) -> occurrences in a cuobjdump -sass listing."""
    return Counter(m.group(3) for m in _INSTRUCTION.finditer(sass))


def tile_loop(sass: str) -> Counter:
    """Opcode -> occurrences in the body of a listing's tile loop: of the loops a backward branch
    closes, the one with the most tensor-core MMAs (then the longest). A tile's instructions are
    what an issue-bound kernel's time follows, so comparing them compares two versions of a kernel
    without a GPU. Empty where the listing has no loop. Each function of a listing is searched on
    its own (addresses restart in each)."""
    best, best_key = (), (-1, -1)
    for function in _FUNCTION.split(sass):
        rows = [(int(m[1], 16), m[2], m[3]) for m in _INSTRUCTION.finditer(function)]
        index = {address: i for i, (address, _, _) in enumerate(rows)}
        for i, (_, text, _) in enumerate(rows):
            target = _BRANCH_TARGET.search(text)
            start = index.get(int(target.group(1), 16)) if target else None
            if start is None or start > i:
                continue
            body = rows[start : i + 1]
            key = (sum(op == "HMMA" for _, _, op in body), len(body))
            if key > best_key:
                best, best_key = body, key
    return Counter(op for _, _, op in best)


def disassemble(cubin: bytes, function: str | None = None) -> str | None:
    """cuobjdump -sass of a cubin (one function's, or all), or None when cuobjdump is not
    installed."""
    tool = cuobjdump()
    if tool is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        env = {**os.environ, "PATH": f"{Path(tool).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        only = ["-fun", function] if function else []
        result = subprocess.run(
            [tool, "-sass", *only, str(path)], capture_output=True, text=True, env=env, timeout=120
        )
    if result.returncode != 0:
        raise RuntimeError(f"cuobjdump -sass failed: {result.stderr.strip()[:500]}")
    return result.stdout


def instruction_mix(cubin: bytes, function: str) -> dict[str, int] | None:
    """Counts of the FAMILIES in `function`'s SASS, or None when cuobjdump is not installed."""
    listing = disassemble(cubin, function)
    if listing is None:
        return None
    counts = opcode_counts(listing)
    return {name: sum(counts[op] for op in ops) for name, ops in FAMILIES.items()}
