"""Loading cubins and launching their kernels through the CUDA driver (cuda-python).

A cubin is loaded once as a context-independent CUlibrary; each kernel's attributes are set once
per device. A launch goes on the caller's stream: no compile, no allocation, no synchronisation,
so it can be captured in a CUDA graph. `PackedLaunch` (and `DependentLaunch`, the PDL form) is
the per-call fast path: grid, function and a pointer to the argument struct are fixed once, and
so is the cuLaunchKernelEx config, so a call only launches. `Kernel.launch` is the general form
(arguments packed per call), for tests and bench scripts.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from cuda.bindings import driver

from kgen import device as _device
from kgen.build import Binary
from kgen.device import check, make_current

MAX_DEFAULT_DYNAMIC_SMEM = 48 * 1024
_SUCCESS = driver.CUresult.CUDA_SUCCESS
_NO_CONTEXT = driver.CUresult.CUDA_ERROR_INVALID_CONTEXT


def runs_on(arch_cc: tuple[int, int], device_cc: tuple[int, int], arch_specific: bool) -> bool:
    """Whether SASS for `arch_cc` runs on a device of `device_cc` (same major, minor not newer)."""
    if arch_specific:
        return arch_cc == device_cc
    return arch_cc[0] == device_cc[0] and arch_cc[1] <= device_cc[1]


_streams: dict[int, driver.CUstream] = {}


def cu_stream(stream: int) -> driver.CUstream:
    """The CUstream of a raw stream handle, made once per handle."""
    handle = _streams.get(stream)
    if handle is None:
        if len(_streams) > 4096:  # streams come and go (one per captured graph, say)
            _streams.clear()
        handle = _streams[stream] = driver.CUstream(stream)
    return handle


@dataclass
class Kernel:
    """One entry point of a loaded cubin."""

    name: str
    handle: driver.CUkernel
    _max_smem_set: dict[int, int] = field(default_factory=dict)

    def prepare(self, device: int, smem: int) -> None:
        """Allow `smem` bytes of dynamic shared memory on `device`."""
        if smem > MAX_DEFAULT_DYNAMIC_SMEM and self._max_smem_set.get(device, 0) < smem:
            attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            check(
                driver.cuKernelSetAttribute(attr, smem, self.handle, _device.handle(device)),
                f"cuKernelSetAttribute({self.name}, max dynamic smem {smem})",
            )
            self._max_smem_set[device] = smem

    def launch(
        self,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        args: Sequence[ctypes._SimpleCData | ctypes.Structure],
        stream: int = 0,
        smem: int = 0,
        device: int = 0,
    ) -> None:
        """Launch on `stream` (a CUstream handle as an int) with `args` as C values."""
        self.prepare(device, smem)
        pointers = (ctypes.c_void_p * len(args))(*(ctypes.addressof(a) for a in args))
        head = (self.handle, *grid, *block, smem)
        argv = ctypes.addressof(pointers)
        (err,) = driver.cuLaunchKernel(*head, cu_stream(stream), argv, 0)
        if err != _SUCCESS:
            _retry_or_raise(err, head, stream, argv, device, self.name)


def _retry_or_raise(err, head: tuple, stream: int, argv: int, device: int, name: str) -> None:
    """After a failed cuLaunchKernel(*head, stream, argv): where no context was current on this
    thread yet, make `device`'s primary context current and launch again; else raise. (The
    device's context must be the current one, torch's current device: kgen switches none.)"""
    if err == _NO_CONTEXT:
        make_current(device)
        (err,) = driver.cuLaunchKernel(*head, cu_stream(stream), argv, 0)
    check((err,), f"cuLaunchKernel({name}, grid={head[1:4]}, block={head[4:7]}, smem={head[7]})")


class _ExLaunch:
    """A kernel with its grid, block, shared memory and argument array fixed once, sent by
    `launch(stream)` with cuLaunchKernelEx: its launch config is made once (the stream set only
    when it changes) and the kernel's CUfunction in the current context looked up on the first
    launch. On the H200 machine's hosts this took 4.0-4.8 us a call where cuLaunchKernel on the
    context-independent CUkernel took 4.4-5.8 (bench/host_overhead.py; docs/decisions.md)."""

    def __init__(
        self,
        kernel: Kernel,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        smem: int,
        device: int,
        argv_address: int,
        attrs: tuple = (),
    ):
        self.kernel, self.grid, self.block = kernel, grid, block
        self.smem, self.device = smem, device
        self._argv_address = argv_address
        self._function = None
        self._stream = None  # the stream handle the config holds
        config = driver.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = grid
        config.blockDimX, config.blockDimY, config.blockDimZ = block
        config.sharedMemBytes = smem
        config.attrs, config.numAttrs = list(attrs), len(attrs)
        self._config = config

    def launch(self, stream: int) -> None:
        """Launch on `stream` (torch's current device must be this launch's device)."""
        if stream != self._stream:
            self._config.hStream, self._stream = cu_stream(stream), stream
        if self._function is None:
            self._function = self._get_function()
        (err,) = driver.cuLaunchKernelEx(self._config, self._function, self._argv_address, 0)
        if err != _SUCCESS:  # no context yet on this thread, or a real error
            if err == _NO_CONTEXT:
                make_current(self.device)
                (err,) = driver.cuLaunchKernelEx(
                    self._config, self._function, self._argv_address, 0
                )
            if err != _SUCCESS:  # the message is formatted only then: this is the per-call path
                check((err,), f"cuLaunchKernelEx({self._what()})")

    def _get_function(self) -> driver.CUfunction:
        """The kernel's CUfunction in the current context (the device's primary context made
        current on this thread where none is yet)."""
        err, function = driver.cuKernelGetFunction(self.kernel.handle)
        if err == _NO_CONTEXT:
            make_current(self.device)
            err, function = driver.cuKernelGetFunction(self.kernel.handle)
        check((err,), f"cuKernelGetFunction({self.kernel.name})")
        return function

    def _what(self) -> str:
        return f"{self.kernel.name}, grid={self.grid}, block={self.block}, smem={self.smem}"


class PackedLaunch(_ExLaunch):
    """One kernel, grid and argument struct, packed once; `launch(stream)` sends it.

    The struct is passed by value from its ctypes buffer, so writing its fields between launches
    (the tensor pointers of the next call) is all a caller does per call.
    """

    def __init__(
        self,
        kernel: Kernel,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        smem: int,
        device: int,
        params: ctypes.Structure,
    ):
        kernel.prepare(device, smem)
        self.params = params
        self._argv = (ctypes.c_void_p * 1)(ctypes.addressof(params))
        super().__init__(kernel, grid, block, smem, device, ctypes.addressof(self._argv))


class DependentLaunch(_ExLaunch):
    """A kernel launched with programmatic dependent launch after the previous kernel in its
    stream (sm_90 and later): it may start while that one runs and waits for it inside
    (griddepcontrol.wait). Grid, block, function and arguments are fixed once."""

    def __init__(
        self,
        kernel: Kernel,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        device: int,
        args: Sequence[ctypes._SimpleCData | ctypes.Structure],
    ):
        self.args = tuple(args)  # kept alive: the argument array points at them
        self._argv = (ctypes.c_void_p * len(args))(*(ctypes.addressof(a) for a in args))
        attr = driver.CUlaunchAttribute()
        attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        attr.value.programmaticStreamSerializationAllowed = 1
        super().__init__(kernel, grid, block, 0, device, ctypes.addressof(self._argv), (attr,))

    def _what(self) -> str:
        return f"{super()._what()}, PDL"


class Module:
    """A cubin loaded through the driver (context-independent), with its kernels by name."""

    def __init__(self, binary: Binary):
        _device.init()
        self.binary = binary
        self.library = check(
            driver.cuLibraryLoadData(binary.cubin, None, None, 0, None, None, 0),
            f"cuLibraryLoadData({binary.stem})",
        )
        self.kernels = {
            name: Kernel(
                name,
                check(
                    driver.cuLibraryGetKernel(self.library, name.encode()),
                    f"cuLibraryGetKernel({name})",
                ),
            )
            for name in binary.program.entry_points
        }

    def __getitem__(self, name: str) -> Kernel:
        return self.kernels[name]


_modules: dict[str, Module] = {}
_arch_checked: set[tuple[str, int]] = set()
_modules_lock = threading.Lock()


def check_arch(binary: Binary, device: int) -> None:
    """Refuse a device the cubin's machine code cannot run on, naming both archs."""
    if (binary.key, device) in _arch_checked:
        return
    arch = binary.arch
    cc = _device.compute_capability(device)
    if not runs_on(arch.compute_capability, cc, arch.name.endswith("a")):
        raise ValueError(
            f"kernel {binary.stem} was built for {arch.name}, but device {device} is "
            f"sm_{cc[0]}{cc[1]}; build it with arch='native' (or 'sm_{cc[0]}{cc[1]}')"
        )
    _arch_checked.add((binary.key, device))


def load_module(binary: Binary, device: int | None = None) -> Module:
    """The loaded module for `binary` (loaded once per process), after checking it can run on
    `device` (default: the current one)."""
    _device.init()
    check_arch(binary, _device.index_of(device))
    with _modules_lock:
        module = _modules.get(binary.key)
        if module is None:
            module = _modules[binary.key] = Module(binary)
        return module
