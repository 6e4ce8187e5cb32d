"""config='auto': the tuned config for this GPU and shape bucket, else the heuristic default."""

from __future__ import annotations

from kgen.mla.spec import Config, Spec


def choose_config(spec: Spec, batch: int, max_seq_len: int, device) -> Config:
    from kgen.arch import resolve_arch
    from kgen.launch import device_sm_count
    from kgen.mla.heuristic import default_config

    index = device.index if device.index is not None else None
    arch = resolve_arch("native", index)
    return default_config(spec, batch, max_seq_len, arch, device_sm_count(index))
