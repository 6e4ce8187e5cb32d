"""The default design point where no tuned one exists: a rule table over the layout models.

RULES lists the blocks a default may take, most wanted first. A row applies on its compute path
(PATHS: tensor cores for 16-bit dtypes, register tiles for float32, then CUDA-core FMA) where its
`when` holds; the first of its configs that the layout model takes for the arch, under the path's
register target, at the blocks per SM the row asks of shared memory, and that `accept` passes, is
the default's block. RIVALS then weigh that block against one other by how well one wave of each
fills the SMs; the KV splits fill one wave. Rows read the arch's facts, never its name, so another
GPU is another Arch (kgen/arch.py) or another row. Each row names the lines of docs/decisions.md
that hold its evidence.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from kgen.arch import ARCHS, Arch
from kgen.mla.layout import ConfigError, layout_for
from kgen.mla.mma_layout import THREE_ROW_WARPS, three_row_config
from kgen.mla.rules import allows
from kgen.mla.spec import Config, Spec, block_groups_of
from kgen.mla.tiled_layout import tiled_config, tiled_heads

Accept = Callable[[Config], bool]

PATHS = {"float32": ("tiled", "fma"), "float16": ("mma", "fma"), "bfloat16": ("mma", "fma")}
# The register estimate of a tensor-core block (other paths: the arch's limit), and its shortest
# KV split: shorter ones cost more in pipeline fill and merge than they add
# (docs/decisions.md: mma targets).
MMA_REGISTER_TARGET = 200
MMA_MIN_SPLIT_POSITIONS = 128
MIN_TILES_PER_SPLIT = 2  # the same, in KV tiles, off the tensor cores
FEW_BLOCKS_PER_SM = 8  # under one block per 8 SMs before splitting: a batch-1 grid
ROWS_PER_WARP_TARGET = 4  # FMA: q.k and p.v registers stay well under the 255 limit
TILED_MIN_ROWS = 32  # rows a tiled block must hold of its 64 (below, padding is most of its work)
THREE_ROWS = 48  # the rows of a three-row-group block: three m16 tiles
THREE_ROW_MAX_IDLE = 0.05  # the share of a ragged last head group's rows that may idle
PADDED_TILE = 0.25  # the share of a one-tile block's rows left as padding that three rows beat
TOKEN_GROUP_TOKENS = 32  # a token group of one head: two m16 tiles of rows
SPECIALIZED_MAX_HEADS = 16  # decode of at most 16 heads: memory-bound, one m16 tile a block
# The one-block rules were measured on SMs of sm_120's shared memory (the H200 carved out to it).
MEASURED_SMALL_SM = ARCHS["sm_120"].smem_per_sm


@dataclass(frozen=True)
class Facts:
    """What the rules read: the op, the arch, the batch and the SMs it runs on."""

    spec: Spec
    arch: Arch
    batch: int
    sm_count: int

    @property
    def small_sm(self) -> bool:
        """An SM of at most the shared memory the one-block rules were measured at."""
        return self.arch.smem_per_sm <= MEASURED_SMALL_SM

    def blocks_per_sm(self, layout) -> int:
        """Blocks of `layout` that an SM's shared memory holds at once."""
        return self.arch.smem_per_sm // (layout.dynamic_smem + self.arch.smem_reserved_per_block)

    def register_limit(self, config: Config) -> int:
        """The register estimate a block of `config`'s path must stay under."""
        return MMA_REGISTER_TARGET if config.compute == "mma" else self.arch.max_regs_per_thread

    def head_counts(self, most_rows: float = math.inf) -> list[int]:
        """Heads per block that divide H and give at most `most_rows` rows, most first."""
        heads, rows = self.spec.heads, self.spec.q_len
        return [h for h in range(heads, 0, -1) if heads % h == 0 and rows * h <= most_rows]

    def few_blocks(self, heads_per_block: int) -> bool:
        """Under one block per FEW_BLOCKS_PER_SM SMs before splitting (batch 1)."""
        blocks = self.batch * (self.spec.heads // heads_per_block)
        return blocks * FEW_BLOCKS_PER_SM < self.sm_count

    @property
    def padded_tile(self) -> bool:
        """Draft rows whose one-tile block of the most heads leaves PADDED_TILE of its m16 tile
        as padding or more (q_len 3, 6, 12)."""
        counts = self.head_counts(16)
        return (
            self.spec.q_len > 1
            and bool(counts)
            and 1 - self.spec.q_len * counts[0] / 16 >= PADDED_TILE
        )


def at_least(blocks: int) -> range:
    return range(blocks, 1 << 10)


@dataclass(frozen=True)
class Rule:
    """Blocks the default may take: `configs`, most wanted first, where `when` holds."""

    name: str
    compute: str  # its path (PATHS)
    configs: Callable[[Facts], Iterable[Config]]
    evidence: str  # the names of its lines in docs/decisions.md, ";" between them
    when: Callable[[Facts], bool] = lambda facts: True
    blocks: range = at_least(0)  # the blocks per SM its shared memory must allow
    last_resort: bool = False  # registers not checked: the compiled kernel judges it


def _mma(facts: Facts, hpb: int, warps: int, cols: int, stages: int, n: int, min_blocks: int):
    return Config(
        heads_per_block=hpb,
        vec_width=16 // facts.spec.elem_bytes,
        smem_stages=stages,
        num_warps=warps,
        block_n=n,
        compute="mma",
        col_groups=cols,
        min_blocks=min_blocks,
        softmax="split",
    )


def _one_tile(facts: Facts):
    """4-warp blocks of one m16 tile of rows, 16-position tiles three deep, registers as ptxas
    fits three blocks an SM."""
    for hpb in facts.head_counts(16):
        yield _mma(facts, hpb, warps=4, cols=4, stages=3, n=16, min_blocks=0)


# (m16 tiles of rows, few blocks) -> (warps, column groups, stages, positions a tile), best first
TWO_TILE_SHAPES = {
    (2, False): ((8, 4, 2, 32), (8, 4, 3, 16), (8, 4, 2, 16)),
    (2, True): ((8, 4, 2, 32), (8, 4, 3, 16), (8, 4, 2, 16)),
    (1, False): ((4, 4, 3, 16), (4, 4, 2, 16)),
    (1, True): ((4, 4, 3, 16), (8, 8, 2, 32), (4, 4, 2, 16)),
}


def _two_tiles(facts: Facts):
    """Blocks of the most heads that give at most two m16 tiles of rows, then fewer."""
    for hpb in facts.head_counts(32):
        tiles = math.ceil(facts.spec.q_len * hpb / 16)
        for shape in TWO_TILE_SHAPES[tiles, facts.few_blocks(hpb)]:
            yield _mma(facts, hpb, *shape, min_blocks=1)


def _three_row(facts: Facts):
    """One 12-warp block of three 16-row groups on one KV pipeline: decode of 48 heads where 48
    divide H; verification of 48 / q_len heads, the last group ragged by at most
    THREE_ROW_MAX_IDLE of its rows. On the KV tile ring where the arch has the PDL merge (beside
    the fused merge's code the ring spills) and the rules let the spec's cache take it (widened
    fp8 rows' one 16-bit tile does not), decode then four stages deep."""
    spec = facts.spec
    ringed = three_row_config(1, smem_stages=4, softmax="split", ring_slack=1)
    slack = int(facts.arch.has_pdl and allows(spec, ringed))
    if spec.q_len == 1:
        if spec.masks_nothing and spec.heads % THREE_ROWS == 0:
            yield three_row_config(
                THREE_ROWS, smem_stages=3 + slack, min_blocks=1, softmax="split", ring_slack=slack
            )
        return
    if THREE_ROWS % spec.q_len or THREE_ROWS // spec.q_len > spec.heads:
        return
    heads = THREE_ROWS // spec.q_len
    padded = math.ceil(spec.heads / heads) * heads
    if padded - spec.heads <= THREE_ROW_MAX_IDLE * padded:
        yield three_row_config(
            heads, smem_stages=4, min_blocks=1, softmax="split", ring_slack=slack
        )


def _token_groups(facts: Facts):
    """Draft rows past three row groups (q_len 49-64) where even the last resorts spill (the
    compiled kernel refuses them: 99 KB a block), cut into token groups of at most
    TOKEN_GROUP_TOKENS tokens, in the two-tile blocks such a group would take."""
    groups = math.ceil(facts.spec.q_len / TOKEN_GROUP_TOKENS)
    part = replace(facts, spec=replace(facts.spec, q_len=math.ceil(facts.spec.q_len / groups)))
    for config in _two_tiles(part):
        yield replace(config, token_groups=groups)


def _mma_last_resorts(facts: Facts):
    """One head a block: three row groups, else two or four (draft rows past two m16 tiles)."""
    for stages in (4, 3, 2):
        yield three_row_config(1, smem_stages=stages, min_blocks=1, softmax="split")
    for warps, stages in itertools.product((8, 16), (3, 2)):
        yield _mma(facts, 1, warps=warps, cols=4, stages=stages, n=16, min_blocks=1)


def _tiled(facts: Facts):
    """The register-tiled block of the most heads that give at most 64 rows, steps two deep."""
    fitting = tiled_heads(facts.spec)
    if fitting and facts.spec.q_len * fitting[0] >= TILED_MIN_ROWS:
        yield tiled_config(fitting[0], smem_stages=2)


def widest_vec(spec: Spec) -> int:
    """The widest load (at most 16 bytes) that divides the latent and rope dims."""
    vec = 16 // spec.elem_bytes
    while spec.latent_dim % vec or spec.rope_dim % vec:
        vec //= 2
    return vec


def _fma(facts: Facts):
    """GEMV-style blocks of at most ROWS_PER_WARP_TARGET rows a warp, 16-position tiles three
    deep (as deep as a block's shared memory holds), 8 warps then the same rows on 4 (ptxas may
    cap the 8-warp block's registers and spill)."""
    spec, vec = facts.spec, widest_vec(facts.spec)
    stages = 3 if vec * spec.elem_bytes >= 4 else 1
    while stages * 16 * spec.head_dim * spec.elem_bytes > facts.arch.smem_per_block and stages > 2:
        stages -= 1
    for hpb in facts.head_counts():
        rows = spec.q_len * hpb
        warps = 8 if rows > 2 * ROWS_PER_WARP_TARGET else 4
        if math.ceil(rows / warps) > ROWS_PER_WARP_TARGET and hpb > 1:
            continue
        four = warps == 8 and math.ceil(rows / 4) <= ROWS_PER_WARP_TARGET
        for w in (warps, 4) if four else (warps,):
            yield Config(
                heads_per_block=hpb, vec_width=vec, smem_stages=stages, num_warps=w, block_n=16
            )


def _fma_last_resorts(facts: Facts):
    """Every head count, 4 to 16 warps, pipelines two deep or one tile."""
    vec = widest_vec(facts.spec)
    for hpb, warps, stages in itertools.product(facts.head_counts(), (4, 8, 16), (2, 1)):
        yield Config(
            heads_per_block=hpb, vec_width=vec, smem_stages=stages, num_warps=warps, block_n=16
        )


# fmt: off
RULES = (
    Rule("three-row, padded tile", "mma", _three_row, blocks=at_least(1),
         when=lambda facts: facts.padded_tile,
         evidence="padded tile; three-row verification; three-row ring"),
    Rule("one tile, three an SM", "mma", _one_tile, blocks=at_least(3),
         evidence="one tile, three an SM; split softmax"),
    Rule("three-row", "mma", _three_row, blocks=at_least(1),
         when=lambda facts: not facts.padded_tile,
         evidence="three-row blocks; three-row out where three fit; three-row verification; "
                  "three-row idle rows; three-row ring; three-row decode ring"),
    Rule("two tiles, two an SM", "mma", _two_tiles, blocks=at_least(2),
         evidence="two tiles; batch-1 blocks; split softmax"),
    Rule("two tiles, where two do not fit", "mma", _two_tiles, blocks=range(1, 2),
         evidence="two tiles"),
    Rule("tensor-core last resorts", "mma", _mma_last_resorts, last_resort=True,
         evidence="last resorts"),
    Rule("token groups", "mma", _token_groups, blocks=at_least(1),
         when=lambda facts: facts.spec.q_len > THREE_ROWS, evidence="token groups"),
    Rule("register tiles", "tiled", _tiled, blocks=at_least(1), evidence="tiled float32"),
    Rule("FMA", "fma", _fma, evidence="fma tiles; tensor cores; spills passed over"),
    Rule("FMA last resorts", "fma", _fma_last_resorts, last_resort=True,
         evidence="last resorts"),
)
# fmt: on


def _candidates(facts: Facts, rules: Iterable[Rule]):
    """(rule, config) of every config the `rules` propose, in order, where they apply."""
    for rule in rules:
        if rule.compute in PATHS[facts.spec.dtype] and rule.when(facts):
            for config in rule.configs(facts):
                yield rule, config


def _first(facts: Facts, rules: Iterable[Rule], accept: Accept):
    """(config, layout) of the first config that one of the `rules` proposes where it applies,
    that fits as the row asks, and that `accept` passes; None if there is none."""
    for rule, config in _candidates(facts, rules):
        layout = _fitting(facts, config, rule.blocks, rule.last_resort)
        if layout is not None and accept(_with_pdl(config, facts.arch)):
            return config, layout
    return None


def _why(facts: Facts) -> str:
    """Where the rules refuse every candidate (a spec no block serves, such as a cache format no
    path reads), the reason the first candidate was refused; else nothing."""
    first = None
    for _, config in _candidates(facts, RULES):
        try:
            layout_for(facts.spec, config, facts.arch)
        except ConfigError as err:
            first = first or str(err)
        else:
            return ""
    return f": every candidate is refused, the first by {first}" if first else ""


def _fitting(facts: Facts, config: Config, blocks: range, last_resort: bool = False):
    """The layout of `config` on the arch if it has `blocks` per SM by shared memory and, unless
    a last resort, a register estimate within its path's limit; else None."""
    try:
        layout = layout_for(facts.spec, config, facts.arch)
    except ConfigError:
        return None
    if not last_resort and layout.registers_estimate > facts.register_limit(config):
        return None
    return layout if facts.blocks_per_sm(layout) in blocks else None


@dataclass(frozen=True)
class Rival:
    """A block `find` proposes against the one RULES chose, where `when` holds for that one: the
    preferred of the two stays unless one wave of the other fills the SMs' block slots better by
    more than `min_gain`."""

    name: str
    when: Callable[[Facts, Config], bool]
    find: Callable[[Facts, Config, Accept], tuple[Config, object] | None]
    prefer_rival: bool
    min_gain: float
    evidence: str


def _next_without_three_rows(facts: Facts, chosen: Config, accept: Accept):
    """The first block of the tensor-core rows (last resorts aside) without three row groups."""
    rules = [rule for rule in RULES if rule.compute == "mma" and not rule.last_resort]
    return _first(
        facts, rules, lambda config: config.num_warps != THREE_ROW_WARPS and accept(config)
    )


def _specialised(facts: Facts, chosen: Config, accept: Accept):
    """`chosen` with warps in two roles, 16-position tiles four deep (87 KB), where it fits:
    alone on an SM only where the SM is small (the measured case)."""
    fields = dict(smem_stages=4, block_n=16, num_warps=8, col_groups=4, min_blocks=0)
    config = replace(chosen, **fields, body="specialized")  # (RULES' blocks split the softmax)
    layout = _fitting(facts, config, at_least(1 if facts.small_sm else 2))
    return None if layout is None or not accept(_with_pdl(config, facts.arch)) else (config, layout)


def _three_row_verification(facts: Facts, chosen: Config) -> bool:
    return chosen.compute == "mma" and chosen.num_warps == THREE_ROW_WARPS and facts.spec.q_len > 1


def _decode_of_few_heads(facts: Facts, chosen: Config, one_group: bool) -> bool:
    """Decode in blocks of at most SPECIALIZED_MAX_HEADS heads, in one head group or several."""
    hpb = chosen.heads_per_block
    few = hpb <= SPECIALIZED_MAX_HEADS and (hpb == facts.spec.heads) == one_group
    return chosen.compute == "mma" and facts.spec.q_len == 1 and few


# fmt: off
RIVALS = (
    Rival("the next without three rows", _three_row_verification, _next_without_three_rows,
          prefer_rival=False, min_gain=1.08, evidence="three-row fill"),
    Rival("specialised, one head group",
          lambda facts, chosen: _decode_of_few_heads(facts, chosen, one_group=True),
          _specialised, prefer_rival=True, min_gain=math.inf,
          evidence="specialised, one head group; specialised, one an SM"),
    Rival("specialised, several head groups",
          lambda facts, chosen: facts.small_sm
          and _decode_of_few_heads(facts, chosen, one_group=False),
          _specialised, prefer_rival=True, min_gain=1.035,
          evidence="specialised, several head groups; not specialised"),
)
# fmt: on


def default_config(
    spec: Spec,
    batch: int,
    max_seq_len: int,
    arch: Arch,
    sm_count: int,
    accept: Accept = lambda config: True,
) -> Config:
    """The first block of RULES, weighed against RIVALS, with as many KV splits as one wave of
    blocks holds. `accept` may refuse candidates the layout model cannot judge
    (kgen.mla.dense.compiled_default: those whose compiled kernel spills); it sees each as it
    would be returned, but for its KV splits (which change no code)."""
    facts = Facts(spec, arch, batch, sm_count)
    found = _first(facts, RULES, accept)
    if found is None:
        raise ConfigError(f"no default config fits {spec.short_name()} on {arch.name}{_why(facts)}")
    splits, fill = _one_wave(*found, facts, max_seq_len)
    for rival in RIVALS:
        other = rival.find(facts, found[0], accept) if rival.when(facts, found[0]) else None
        if other is None:
            continue
        other_splits, other_fill = _one_wave(*other, facts, max_seq_len)
        if rival.prefer_rival:
            replaces = not fill > rival.min_gain * other_fill
        else:
            replaces = other_fill > rival.min_gain * fill
        if replaces:
            found, splits, fill = other, other_splits, other_fill
    return replace(_with_pdl(found[0], arch), kv_splits=splits)


def _one_wave(config: Config, layout, facts: Facts, max_seq_len: int) -> tuple[int, float]:
    """The KV splits of one wave of `config` at the layout model's blocks per SM, and the share
    of its waves' block slots that grid fills."""
    spec, batch, sm_count = facts.spec, facts.batch, facts.sm_count
    blocks = facts.arch.occupancy(layout.threads, layout.registers_estimate, layout.dynamic_smem)
    per_sm = max(1, blocks.blocks_per_sm)
    splits = one_wave_splits(spec, config, batch, max_seq_len, per_sm, sm_count)
    grid, slots = batch * block_groups_of(spec, config) * splits, sm_count * per_sm
    return splits, grid / (math.ceil(grid / slots) * slots)


def _with_pdl(config: Config, arch: Arch) -> Config:
    """`config` with the split-KV merge in a kernel of its own wherever the arch has programmatic
    dependent launch (docs/decisions.md: pdl merge)."""
    pdl = config.compute == "mma" and arch.has_pdl
    return replace(config, merge="pdl" if pdl else "fused")


def one_wave_splits(
    spec: Spec, config: Config, batch: int, max_seq_len: int, blocks_per_sm: int, sm_count: int
) -> int:
    """As many KV splits as one wave of blocks holds (`blocks_per_sm` on every SM), never more,
    none shorter than is worth its pipeline fill; on the tiled path two whole waves where they
    fill the SMs better (docs/decisions.md: one wave; tiled two waves)."""
    wave = sm_count * max(1, blocks_per_sm)  # blocks resident at once
    blocks = max(1, batch * block_groups_of(spec, config))
    shortest = (
        MMA_MIN_SPLIT_POSITIONS if config.compute == "mma" else MIN_TILES_PER_SPLIT * config.block_n
    )
    max_splits = max(1, math.ceil(max_seq_len / shortest))
    splits, two_waves = max(1, wave // blocks), 2 * wave // blocks
    if config.compute == "tiled" and two_waves > 2 * splits:  # two waves fill more slots
        splits = two_waves
    return min(max_splits, splits, 256)
