"""The plan half of plan/run, for every family: the plan's arguments checked before any device
work, the device resolved, config='auto' chosen (kgen.mla.choose), the kernel built or loaded.
A family's plan (kgen.mla.plan, kgen.mla.plan_sparse) is these steps and its runner."""

from __future__ import annotations

import torch

from kgen import device as devices
from kgen.arch import resolve_arch
from kgen.mla.choose import choose
from kgen.mla.family import Family


def cuda_index(device) -> int:
    """The index of a CUDA device given as None (the current one), an int, a str or a device;
    NoGPUError where torch sees no CUDA device (a CPU build of torch, or no GPU)."""
    if device is not None:
        device = torch.device("cuda", device) if isinstance(device, int) else torch.device(device)
        if device.type != "cuda":
            raise ValueError(f"device={device}: expected a CUDA device")
    if not torch.cuda.is_available():
        why = "it was built without CUDA" if torch.version.cuda is None else "it sees no GPU"
        raise devices.NoGPUError(
            f"planning or running a kgen kernel needs a CUDA GPU, and torch {torch.__version__} "
            f"cannot use one ({why}); building one needs none (kgen.mla.build or build_sparse "
            "with an explicit arch, e.g. arch='sm_120')"
        )
    return devices.current() if device is None else devices.index_of(device)


def begin_plan(family: Family, call: str, spec, device, **sizes) -> int:
    """The checks of a plan's arguments (spec, sizes: integers >= 0), then the CUDA device's
    index; refused inside CUDA-graph capture (a plan allocates and zeroes its workspace)."""
    family.check_spec(spec)
    for name, value in sizes.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name}={value!r}: expected an integer >= 0")
    index = cuda_index(device)
    if torch.cuda.is_current_stream_capturing():
        raise RuntimeError(
            f"kgen.mla.{call} inside CUDA-graph capture: plan before capturing (it allocates and "
            "zeroes the workspace), then capture runner.run"
        )
    return index


def planned_kernel(family: Family, spec, batch: int, max_len: int, config, index: int):
    """The kernel a plan runs: `config`, or for 'auto' the chosen one, built for GPU `index`."""
    if isinstance(config, str):
        if config != "auto":
            raise ValueError(
                f"config: expected a kgen.mla.{family.config_type.__name__} or 'auto', "
                f"got {config!r}"
            )
        config = choose(family, spec, batch, max_len, index)
    return family.build(spec, config, resolve_arch("native", index))
