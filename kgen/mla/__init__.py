"""MLA decode and draft-tree verify attention: kgen.mla.Spec, Config, build, attention."""

from kgen.mla.api import attention
from kgen.mla.kernel import MLAKernel, build
from kgen.mla.layout import ConfigError, Layout, plan
from kgen.mla.spec import Config, Spec

__all__ = ["Config", "ConfigError", "Layout", "MLAKernel", "Spec", "attention", "build", "plan"]
