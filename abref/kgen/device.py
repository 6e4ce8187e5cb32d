"""The GPUs on this machine, through the CUDA driver (cuda-python): initialisation, errors,
which device is current, its compute capability, SM count and name, and making torch's primary
context current on a thread. Every device query of kgen lives here."""

from __future__ import annotations

import functools
import threading

from cuda.bindings import driver


class CudaError(RuntimeError):
    """A CUDA driver call failed."""


class NoGPUError(RuntimeError):
    """No CUDA driver or GPU on this machine, and something needs one."""


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


@functools.cache
def init() -> None:
    """cuInit, once; NoGPUError where there is no driver or no usable GPU."""
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


def current() -> int:
    """The index of torch's current CUDA device (0 without torch)."""
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.current_device()


def index_of(device) -> int:
    """The device index of a torch.device, an int or None (the current device)."""
    if device is None:
        return current()
    if isinstance(device, int):
        return device
    return device.index if device.index is not None else current()


def handle(index: int) -> driver.CUdevice:
    init()
    return check(driver.cuDeviceGet(index), "cuDeviceGet")


def _attribute(attr, index: int) -> int:
    return check(driver.cuDeviceGetAttribute(attr, handle(index)), "cuDeviceGetAttribute")


@functools.cache
def compute_capability(index: int) -> tuple[int, int]:
    attr = driver.CUdevice_attribute
    return (
        _attribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, index),
        _attribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, index),
    )


@functools.cache
def sm_count(index: int) -> int:
    return _attribute(driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, index)


@functools.cache
def name(index: int) -> str:
    raw = check(driver.cuDeviceGetName(256, handle(index)), "cuDeviceGetName")
    return raw.split(b"\0", 1)[0].decode()


_primary: dict[int, driver.CUcontext] = {}
_primary_lock = threading.Lock()


def make_current(index: int) -> None:
    """Make the device's primary context (the one torch uses) current on this thread: what a
    launch needs where nothing (torch included) has made one current yet."""
    with _primary_lock:
        ctx = _primary.get(index)
        if ctx is None:
            ctx = check(driver.cuDevicePrimaryCtxRetain(handle(index)), "cuDevicePrimaryCtxRetain")
            _primary[index] = ctx
    check(driver.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
