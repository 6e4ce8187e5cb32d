"""Loading cubins and launching their kernels through the CUDA driver (cuda-python).

A cubin is loaded once as a context-independent CUlibrary; each kernel's attributes are set once
per device. A launch then packs its arguments and calls cuLaunchKernel on the caller's stream:
no compile, no allocation, no synchronisation, so it can be captured in a CUDA graph.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from cuda.bindings import driver

from kgen.build import Binary
from kgen.resources import UNKNOWN, FunctionUsage

MAX_DEFAULT_DYNAMIC_SMEM = 48 * 1024


class CudaError(RuntimeError):
    """A CUDA driver call failed."""


def check(result, what: str):
    """Unwrap a cuda-python driver result tuple, raising CudaError with the error's name."""
    err, *rest = result if isinstance(result, tuple) else (result,)
    if err != driver.CUresult.CUDA_SUCCESS:
        _, name = driver.cuGetErrorName(err)
        _, text = driver.cuGetErrorString(err)
        name = name.decode() if name else str(err)
        text = text.decode() if text else ""
        raise CudaError(f"{what} failed: {name}: {text}")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else tuple(rest)


class NoGPUError(RuntimeError):
    """No CUDA driver or GPU on this machine, and something needs one."""


@functools.cache
def _init() -> None:
    try:
        result = driver.cuInit(0)
    except Exception as exc:  # noqa: BLE001 - no driver library: cuda.bindings cannot even load it
        raise NoGPUError(
            f"no CUDA driver found ({type(exc).__name__}: {exc}); arch='native' and running "
            "kernels need a GPU (build with an explicit arch, e.g. arch='sm_120', without one)"
        ) from None
    if result[0] != driver.CUresult.CUDA_SUCCESS:
        _, name = driver.cuGetErrorName(result[0])
        raise NoGPUError(
            f"cuInit failed ({name.decode() if name else result[0]}): no usable GPU; "
            "arch='native' and running kernels need one (build with an explicit arch without one)"
        )


def _current_device() -> int:
    try:
        import torch

        return torch.cuda.current_device()
    except ImportError:
        return 0


def _device(index: int | None) -> driver.CUdevice:
    _init()
    return check(driver.cuDeviceGet(_current_device() if index is None else index), "cuDeviceGet")


def device_compute_capability(index: int | None = None) -> tuple[int, int]:
    dev = _device(index)
    attr = driver.CUdevice_attribute
    major = check(
        driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
        "cuDeviceGetAttribute",
    )
    minor = check(
        driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
        "cuDeviceGetAttribute",
    )
    return major, minor


_thread = threading.local()


def _ensure_context(index: int) -> None:
    """Make the device's primary context (the one torch uses) current on this thread, once."""
    done = getattr(_thread, "contexts", None)
    if done is None:
        done = _thread.contexts = set()
    if index in done:
        return
    ctx = check(driver.cuDevicePrimaryCtxRetain(_device(index)), "cuDevicePrimaryCtxRetain")
    check(driver.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    done.add(index)


def runs_on(arch_cc: tuple[int, int], device_cc: tuple[int, int], arch_specific: bool) -> bool:
    """Whether SASS for `arch_cc` runs on a device of `device_cc` (same major, minor not newer)."""
    if arch_specific:
        return arch_cc == device_cc
    return arch_cc[0] == device_cc[0] and arch_cc[1] <= device_cc[1]


@dataclass
class Kernel:
    """One entry point of a loaded cubin."""

    name: str
    handle: driver.CUkernel
    _max_smem_set: dict[int, int] = field(default_factory=dict)

    def launch(
        self,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        args: Sequence[ctypes._SimpleCData],
        stream: int = 0,
        smem: int = 0,
        device: int = 0,
    ) -> None:
        """Launch on `stream` (a CUstream handle as an int) with `args` as C values."""
        _ensure_context(device)
        if smem > MAX_DEFAULT_DYNAMIC_SMEM and self._max_smem_set.get(device, 0) < smem:
            attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            check(
                driver.cuKernelSetAttribute(attr, smem, self.handle, _device(device)),
                f"cuKernelSetAttribute({self.name}, max dynamic smem {smem})",
            )
            self._max_smem_set[device] = smem
        pointers = (ctypes.c_void_p * len(args))(*(ctypes.addressof(a) for a in args))
        check(
            driver.cuLaunchKernel(
                self.handle,
                *grid,
                *block,
                smem,
                driver.CUstream(stream),
                ctypes.addressof(pointers),
                0,
            ),
            f"cuLaunchKernel({self.name}, grid={grid}, block={block}, smem={smem})",
        )


class Module:
    """A cubin loaded through the driver (context-independent), with its kernels by name."""

    def __init__(self, binary: Binary):
        _init()
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
    cc = device_compute_capability(device)
    if not runs_on(arch.compute_capability, cc, arch.name.endswith("a")):
        raise ValueError(
            f"kernel {binary.stem} was built for {arch.name}, but device {device} is "
            f"sm_{cc[0]}{cc[1]}; build it with arch='native' (or 'sm_{cc[0]}{cc[1]}')"
        )
    _arch_checked.add((binary.key, device))


def load_module(binary: Binary, device: int | None = None) -> Module:
    """The loaded module for `binary` (loaded once per process), after checking it can run on
    `device` (default: the current one)."""
    check_arch(binary, _current_device() if device is None else device)
    with _modules_lock:
        module = _modules.get(binary.key)
        if module is None:
            module = _modules[binary.key] = Module(binary)
        return module


def function_usage(binary: Binary, name: str, device: int | None = None) -> FunctionUsage:
    """ptxas's figures for kernel `name`; where the compile log lacks them (some NVRTC builds
    print no ptxas report), the driver's attributes of the loaded kernel, with spills unknown."""
    if name in binary.usage:
        return binary.usage[name]
    kernel = load_module(binary, device)[name].handle
    dev = _device(device)

    def attribute(attr):
        return check(
            driver.cuKernelGetAttribute(attr, kernel, dev), f"cuKernelGetAttribute({name})"
        )

    a = driver.CUfunction_attribute
    return FunctionUsage(
        registers=attribute(a.CU_FUNC_ATTRIBUTE_NUM_REGS),
        static_smem=attribute(a.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
        stack=attribute(a.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES),
        spill_stores=UNKNOWN,
        spill_loads=UNKNOWN,
    )


def device_sm_count(index: int | None = None) -> int:
    attr = driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
    return check(driver.cuDeviceGetAttribute(attr, _device(index)), "cuDeviceGetAttribute")


def device_name(index: int | None = None) -> str:
    name = check(driver.cuDeviceGetName(256, _device(index)), "cuDeviceGetName")
    return name.split(b"\0", 1)[0].decode()
