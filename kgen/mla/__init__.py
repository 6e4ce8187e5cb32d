"""MLA decode and draft-tree verify attention: kgen.mla.Spec, Config, build (no GPU needed), and
with torch: plan / Runner.run, attention, and the custom op torch.ops.kgen.mla_attention."""

import importlib.util

from kgen.device import NoGPUError
from kgen.mla.choose import default_config, default_sparse_config
from kgen.mla.dense import build
from kgen.mla.family import PerformanceWarning
from kgen.mla.kernel import MLAKernel
from kgen.mla.layout import ConfigError, Layout, layout_for
from kgen.mla.sparse.family import build_sparse
from kgen.mla.sparse.kernel import SparseKernel
from kgen.mla.sparse.layout import SparseConfigError, SparseLayout, sparse_layout_for
from kgen.mla.sparse.spec import SparseConfig, SparseSpec
from kgen.mla.spec import Config, Spec

__all__ = ["Config", "ConfigError", "Layout", "MLAKernel", "Spec", "build", "layout_for"]
__all__ += ["NoGPUError", "PerformanceWarning", "default_config", "default_sparse_config"]
__all__ += [
    "SparseConfig",
    "SparseConfigError",
    "SparseKernel",
    "SparseLayout",
    "SparseSpec",
    "build_sparse",
    "sparse_layout_for",
]

if importlib.util.find_spec("torch") is not None:  # running kernels needs torch; building does not
    from kgen.mla import op
    from kgen.mla.api import attention, plan, spec_for
    from kgen.mla.fp8 import Fp8CacheError, dequantize_fp8, quantize_fp8, tensor_scale
    from kgen.mla.inputs import pack_tree_mask
    from kgen.mla.operands import InputError
    from kgen.mla.runner import Runner
    from kgen.mla.sparse.api import plan_sparse, sparse_attention, sparse_spec_for
    from kgen.mla.sparse.runner import SparseRunner

    __all__ += ["InputError", "Runner", "attention", "op", "pack_tree_mask", "plan", "spec_for"]
    __all__ += ["Fp8CacheError", "dequantize_fp8", "quantize_fp8", "tensor_scale", "SparseRunner"]
    __all__ += ["plan_sparse", "sparse_attention", "sparse_spec_for"]
