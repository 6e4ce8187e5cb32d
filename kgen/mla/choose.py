"""config='auto': the tuned config for this GPU and shape bucket, else the heuristic default.
The one place a config is chosen. It only looks things up, never benchmarks, so it is safe
inside CUDA-graph capture."""

from __future__ import annotations

import functools

from kgen import device
from kgen.arch import resolve_arch
from kgen.compiler import nvrtc_version
from kgen.mla.heuristic import default_config
from kgen.mla.spec import Config, Spec
from kgen.mla.tuning import bucket, find_tuned


@functools.lru_cache(maxsize=4096)
def choose_config(spec: Spec, batch: int, max_seq_len: int, index: int) -> Config:
    """The config for `batch` sequences of up to `max_seq_len` positions on GPU `index`."""
    arch = resolve_arch("native", index)
    found = find_tuned(
        device.name(index), arch.name, spec, bucket(batch, max_seq_len), nvrtc_version()
    )
    if found.config is not None:
        return found.config
    return default_config(spec, batch, max_seq_len, arch, device.sm_count(index))
