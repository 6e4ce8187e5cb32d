"""Hypothesis strategies over MLA specs, valid configs and sequence lengths."""

from __future__ import annotations

from hypothesis import assume
from hypothesis import strategies as st

from kgen.arch import Arch
from kgen.mla import Config, ConfigError, Spec, layout_for
from kgen.mla.tiled_layout import tiled_config, tiled_heads

HEADS = [1, 2, 3, 4, 6, 8, 16]
PAGE_SIZES = [1, 3, 16, 64, 128]
SPLITS = [1, 2, 3, 7, 16, 64]


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@st.composite
def specs(draw, max_q_len: int = 16, dtypes=("float32", "float16", "bfloat16"), small_dims=False):
    mask = draw(st.sampled_from(["none", "causal", "tree"]))
    q_len = 1 if mask == "none" else draw(st.integers(1, max_q_len))
    latent, rope = (
        (512, 64) if not small_dims else draw(st.sampled_from([(512, 64), (64, 32), (128, 0)]))
    )
    return Spec(
        heads=draw(st.sampled_from(HEADS)),
        q_len=q_len,
        latent_dim=latent,
        rope_dim=rope,
        dtype=draw(st.sampled_from(dtypes)),
        page_size=draw(st.sampled_from(PAGE_SIZES)),
        mask=mask,
    )


@st.composite
def raw_configs(draw, spec: Spec, computes=("fma", "mma", "tiled")):
    """Any Config whose own fields are valid (layout_for may still refuse it for spec/arch)."""
    # float32 takes the CUDA-core paths, 16-bit dtypes any but 'tiled'
    float32 = tuple(c for c in computes if c != "mma") or ("fma",)
    sixteen = tuple(c for c in computes if c != "tiled") or ("mma",)
    compute = draw(st.sampled_from(float32 if spec.dtype == "float32" else sixteen))
    if compute == "tiled":
        return tiled_configs(draw, spec)
    if compute == "mma":
        warps = draw(st.sampled_from([1, 2, 4, 8, 12]))  # (12: three row groups of 4)
        shared = dict(  # what both row layouts take alike
            kv_splits=draw(st.sampled_from(SPLITS)),
            vec_width=8,
            smem_stages=draw(st.integers(2, 4)),
            num_warps=warps,
            block_n=draw(st.sampled_from([16, 32, 48, 64])),
            compute="mma",
            min_blocks=draw(st.sampled_from([0, 1, 2])),
            qk_ahead=draw(st.sampled_from([0, 1])),
            merge=draw(st.sampled_from(["fused", "fused", "pdl"])),
        )
        if warps in (2, 4, 8) and draw(st.sampled_from([0, 0, 0, 1])):
            # warps in two roles (body='specialized'): one row group each, the split softmax
            return Config(
                heads_per_block=draw(st.sampled_from(divisors(spec.heads))),
                col_groups=warps // 2,
                softmax="split",
                body="specialized",
                **{**shared, "qk_ahead": 0, "smem_stages": draw(st.integers(3, 4))},
            )
        # the row path also takes head groups that do not divide the heads (the last is ragged)
        ragged = [h for h in range(2, spec.heads) if spec.heads % h]
        heads = divisors(spec.heads) + (ragged if draw(st.sampled_from([0, 1])) else [])
        # the tile ring on a barrier a stage (row groups up to a tile apart)
        softmax = draw(st.sampled_from(["warp", "split"])) if warps > 1 else "warp"
        ringable = softmax == "split" and not shared["qk_ahead"] and shared["smem_stages"] >= 3
        # the draft tokens cut into token groups (the last may be ragged)
        groups = [g for g in range(2, 5) if (g - 1) * -(-spec.q_len // g) < spec.q_len]
        return Config(
            heads_per_block=draw(st.sampled_from(heads)),
            col_groups=draw(st.sampled_from([c for c in (1, 2, 4, 8) if warps % c == 0])),
            softmax=softmax,
            ring_slack=draw(st.sampled_from([0, 0, 1])) if ringable else 0,
            token_groups=draw(st.sampled_from([1, 1, 1, *groups])) if groups else 1,
            **shared,
        )
    stages = draw(st.integers(0, 3))
    return Config(
        heads_per_block=draw(st.sampled_from(divisors(spec.heads) + [spec.heads * 2])),
        kv_splits=draw(st.sampled_from(SPLITS)),
        vec_width=draw(st.sampled_from([1, 2, 4, 8, 16])),
        smem_stages=stages,
        num_warps=draw(st.sampled_from([1, 2, 4, 8, 16])),
        block_n=draw(st.sampled_from([1, 2, 4, 8] if stages == 0 else [4, 8, 16, 32, 64])),
    )


def tiled_configs(draw, spec: Spec) -> Config:
    """A compute='tiled' Config (the kernel fixes the rest of its block)."""
    return tiled_config(
        draw(st.sampled_from(tiled_heads(spec))),
        smem_stages=draw(st.integers(2, 4)),
        kv_splits=draw(st.sampled_from(SPLITS)),
        merge=draw(st.sampled_from(["fused", "fused", "pdl"])),
    )


@st.composite
def configs(draw, spec: Spec, arch: Arch, computes=("fma", "mma", "tiled")):
    """A Config that layout_for accepts for spec on arch, within its register file by the
    estimate."""
    config = draw(raw_configs(spec, computes))
    try:
        layout = layout_for(spec, config, arch)
    except ConfigError:
        assume(False)
    # Past the register file the sweep skips a config (it would spill): slow to compile, no use.
    assume(layout.registers_estimate <= arch.max_regs_per_thread)
    return config


@st.composite
def seq_lens(draw, spec: Spec, max_batch: int = 3, max_prefix: int = 700):
    """Total lengths (prefix + q_len): prefix 0, tiny, odd, a few tiles long; mixed in a batch."""
    prefix = st.one_of(st.just(0), st.integers(1, 40), st.integers(41, max_prefix))
    count = draw(st.integers(1, max_batch))
    return [draw(prefix) + spec.q_len for _ in range(count)]
