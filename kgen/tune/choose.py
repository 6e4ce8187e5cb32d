"""config='auto': the tuned config for this GPU and shape bucket, else the heuristic default.
It only looks things up, never benchmarks, so it is safe inside CUDA-graph capture."""

from __future__ import annotations

import functools

from kgen.mla.spec import Config, Spec


@functools.lru_cache(maxsize=4096)
def _choose(spec: Spec, batch: int, max_seq_len: int, index: int) -> Config:
    from kgen.arch import resolve_arch
    from kgen.compiler import nvrtc_version
    from kgen.launch import device_name, device_sm_count
    from kgen.mla.heuristic import default_config
    from kgen.tune.db import bucket, find_tuned

    arch = resolve_arch("native", index)
    found = find_tuned(
        device_name(index), arch.name, spec, bucket(batch, max_seq_len), nvrtc_version()
    )
    if found.config is not None:
        return found.config
    return default_config(spec, batch, max_seq_len, arch, device_sm_count(index))


def choose_config(spec: Spec, batch: int, max_seq_len: int, device) -> Config:
    import torch

    index = device.index if device.index is not None else torch.cuda.current_device()
    return _choose(spec, batch, max_seq_len, index)
