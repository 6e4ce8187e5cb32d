"""The default sparse design point where no tuned one exists: a rule table over the layout model,
so it respects the arch's shared memory and register file.

Candidates: each of PIPELINES that the cache format takes, best first, with the most heads per
block up to two m16 tiles (a gathered tile serves them all), then fewer, never fewer than 16
where there are 16 (a padded m16 tile); 8 warps past 16 heads. Head counts that divide H come
first; where none does (H = 37: no divisor in 16..32), the fewest head groups of two m16 tiles
at most, as even as they go (19 + 18), the last one ragged. Of those the layout model takes,
PREFERENCES keep in turn the ones each holds for (where it holds for any), and the first left
is the block; then as many splits of the top-k list as one wave of blocks holds, the PDL merge
wherever the arch has it, and the split softmax where a split holds SPLIT_SOFTMAX_TILES tiles.
PIPELINES and each preference name the lines of docs/decisions.md that hold their evidence.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from kgen.arch import Arch
from kgen.mla.layout import ConfigError
from kgen.mla.sparse.layout import sparse_layout_for
from kgen.mla.sparse.spec import SparseConfig, SparseSpec
from kgen.mla.spec import head_groups_of

MAX_M_TILES = 2
REGISTER_LIMIT = 255  # past the estimate's reach of one thread: spills
MIN_WARPS_PER_SM = 8
MIN_TILES_PER_SPLIT = 2  # shorter splits cost more in pipeline fill and merge than they add,
# unless the grid leaves over half the SMs idle without them
SPLIT_LIMIT = 64  # the default's own cap (kgen.mla.spec.MAX_SPLITS bounds any config)
SPLIT_SOFTMAX_TILES = 4  # tiles per split from which the split softmax pays for its barrier

# (dequant, smem_stages, block_n, the caches it serves: fp8 and/or 16-bit), best first;
# min_blocks 1 for all (docs/decisions.md: register dequantization; sparse min_blocks)
PIPELINES = (
    ("registers", 2, 32, ("fp8",)),
    ("registers", 2, 16, ("fp8",)),
    ("shared", 4, 16, ("fp8", "16-bit")),
    ("shared", 3, 16, ("fp8", "16-bit")),
    ("shared", 2, 16, ("fp8", "16-bit")),
)


@dataclass(frozen=True)
class Facts:
    """What the rules read: the op, the arch, the batch and the SMs it runs on."""

    spec: SparseSpec
    arch: Arch
    batch: int
    sm_count: int

    def warps_per_sm(self, layout) -> int:
        occupancy = self.arch.occupancy(
            layout.threads, layout.registers_estimate, layout.dynamic_smem
        )
        return occupancy.warps_per_sm

    def blocks(self, config: SparseConfig) -> int:
        """Blocks of one split: one per query token and head group."""
        groups = head_groups_of(self.spec, config)
        return max(1, self.batch * self.spec.q_len * groups)

    def most_splits(self, config: SparseConfig) -> int:
        """Splits of the list (both lists, joined) with MIN_TILES_PER_SPLIT tiles each (at least
        one split)."""
        return max(1, math.ceil(entries(self.spec) / config.block_n) // MIN_TILES_PER_SPLIT)


def entries(spec: SparseSpec) -> int:
    """Entries of a query row's list: its top-k, and the second cache's where there is one."""
    return spec.topk + spec.extra_topk


@dataclass(frozen=True)
class Preference:
    """What the block should have where some candidate has it."""

    name: str
    holds: Callable[[Facts, SparseConfig, object], bool]  # (facts, config, layout)
    evidence: str  # the names of its lines in docs/decisions.md, ";" between them


PREFERENCES = (
    Preference(
        "eight warps an SM",
        lambda facts, config, layout: facts.warps_per_sm(layout) >= MIN_WARPS_PER_SM,
        evidence="eight warps an SM",
    ),
    Preference(
        "half the SMs busy at splits of two tiles",
        lambda facts, c, layout: 2 * facts.blocks(c) * facts.most_splits(c) >= facts.sm_count,
        evidence="small batches",
    ),
)


def _candidates(spec: SparseSpec):
    least = min(16, spec.heads)  # a padded m16 tile only where there are fewer than 16 heads
    divisors = [d for d in range(spec.heads, least - 1, -1) if spec.heads % d == 0]
    head_counts = [d for d in divisors if math.ceil(d / 16) <= MAX_M_TILES]
    if not head_counts:  # ragged: the fewest groups of at most two m16 tiles, even
        groups = math.ceil(spec.heads / (16 * MAX_M_TILES))
        head_counts = [math.ceil(spec.heads / groups)]
    kind = "fp8" if spec.format.quantized else "16-bit"
    for dequant, stages, block_n, formats in PIPELINES:
        if kind not in formats:
            continue
        for hpb in head_counts:
            yield SparseConfig(
                heads_per_block=hpb,
                block_n=block_n,
                smem_stages=stages,
                num_warps=8 if hpb > 16 else 4,
                col_groups=4,
                dequant=dequant,
                min_blocks=1,
            )


def default_sparse_config(spec: SparseSpec, batch: int, arch: Arch, sm_count: int) -> SparseConfig:
    """The first candidate that fits `arch` after PREFERENCES, then as many splits of the top-k
    list as one wave of blocks holds, and no more (docs/decisions.md: one wave)."""
    facts = Facts(spec, arch, batch, sm_count)
    fitting = []
    for config in _candidates(spec):
        try:
            layout = sparse_layout_for(spec, config, arch)
        except ConfigError:
            continue
        if layout.registers_estimate <= REGISTER_LIMIT:
            fitting.append((config, layout))
    if not fitting:
        raise ConfigError(f"no default sparse config fits {spec.short_name()} on {arch.name}")
    for preference in PREFERENCES:
        fitting = [(c, lay) for c, lay in fitting if preference.holds(facts, c, lay)] or fitting
    config, layout = fitting[0]
    occupancy = arch.occupancy(layout.threads, layout.registers_estimate, layout.dynamic_smem)
    wave = sm_count * max(1, occupancy.blocks_per_sm)  # blocks resident at once
    blocks = facts.blocks(config)
    most = facts.most_splits(config)
    if (
        2 * blocks * most < sm_count
    ):  # one-tile splits, not idle SMs (docs/decisions.md: small batches)
        most = math.ceil(entries(spec) / config.block_n)
    splits = min(most, max(1, wave // blocks), SPLIT_LIMIT)
    # the merge in a kernel of its own where the arch has it (docs/decisions.md: sparse pdl merge)
    config = replace(config, kv_splits=splits, merge="pdl" if arch.has_pdl else "fused")
    tiles = math.ceil(math.ceil(entries(spec) / config.block_n) / splits)
    if tiles >= SPLIT_SOFTMAX_TILES:  # (docs/decisions.md: sparse split softmax)
        split = replace(config, softmax="split")
        try:
            sparse_layout_for(spec, split, arch)  # its P buffer must fit too
            config = split
        except ConfigError:
            pass
    return config
