"""kgen: a JIT generator of MLA decode / draft-tree verify attention kernels.

Jinja templates render CUDA C++, NVRTC (through cuda-python) compiles it to a cubin for a named
arch (sm_120 by default), a content-addressed disk cache keeps the cubins, and the CUDA driver
loads and launches them on the caller's stream.
"""

__version__ = "0.1.0"

from kgen import mla
from kgen.arch import Arch, resolve_arch
from kgen.build import Binary, build_program
from kgen.compiler import CompileError
from kgen.launch import Module, load_module
from kgen.render import Program, render_program

__all__ = [
    "Arch",
    "Binary",
    "CompileError",
    "Module",
    "Program",
    "__version__",
    "build_program",
    "load_module",
    "mla",
    "render_program",
    "resolve_arch",
]
