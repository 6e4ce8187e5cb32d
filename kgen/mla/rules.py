"""The rules between a config's axes: the combinations of values that no kernel implements, on any
arch. Written once, as data: each family's planner refuses by them (so `build`, and the heuristic,
which goes through the planners), and the sweep enumerates only what they allow. What a block's
resources allow on an arch (shared memory, registers, threads, load widths, the arch's features)
stays with each path's planner.

A rule names the field a refusal names, when it applies, what must then hold, and why (a format
string of `spec` and `config`). Rules are checked in order, so a rule may take those before it
for granted (block_n a multiple of 16 before a rule divides by it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields

from kgen.mla.spec import Config

Check = Callable[[object, object], bool]  # (spec, config) -> bool


@dataclass(frozen=True)
class Rule:
    """Where `applies(spec, config)`, `holds(spec, config)` must too; else `field` is refused
    with `reason`."""

    field: str
    holds: Check
    reason: str
    applies: Check = lambda spec, config: True


def broken_rule(spec, config, rules: tuple[Rule, ...]) -> Rule | None:
    """The first of `rules` that `config` breaks for `spec`, or None."""
    return next((r for r in rules if r.applies(spec, config) and not r.holds(spec, config)), None)


def refuse_broken(spec, config, rules: tuple[Rule, ...], refuse) -> None:
    """Refuse (through a layout refuser) the first of `rules` that `config` breaks."""
    rule = broken_rule(spec, config, rules)
    if rule is not None:
        refuse(rule.field, rule.reason.format(spec=spec, config=config))


def allows(spec, config) -> bool:
    """Whether `config` (a Config or SparseConfig) breaks none of its family's rules for `spec`."""
    rules = DENSE if isinstance(config, Config) else SPARSE
    return broken_rule(spec, config, rules) is None


def _split(spec, config) -> bool:
    return config.softmax == "split"


# Both tensor-core families' (the dense family's mma path and the sparse family): m16n8k16 tiles
# of positions, a ROW_GROUPS x COL_GROUPS warp grid, the split softmax's slices
# (mla/mma/slices.cuh)
TENSOR_CORES = (
    Rule(
        "block_n",
        lambda s, c: c.block_n % 16 == 0 and c.block_n <= 64,
        "a multiple of 16 up to 64 (m16n8k16 tiles of positions; a 64-bit word of draft bits)",
    ),
    Rule(
        "col_groups",
        lambda s, c: c.num_warps % c.col_groups == 0,
        "must divide num_warps={config.num_warps}",
    ),
    Rule(
        "softmax",
        lambda s, c: c.col_groups > 1,
        "'split' needs col_groups > 1: one column group has no softmax to share",
        _split,
    ),
    Rule(
        "block_n",
        lambda s, c: 32 % (c.block_n // 2) == 0,
        "softmax='split' keeps a row's position pairs in one warp: 16, 32 or 64",
        _split,
    ),
)

# The axes only some compute paths take, with those paths: the others take the default
PATH_AXES = {
    "col_groups": ("mma",),
    "min_blocks": ("mma",),
    "qk_ahead": ("mma",),
    "softmax": ("mma",),
    "merge": ("mma", "tiled"),
    "body": ("mma",),
    "ring_slack": ("mma",),
    "token_groups": ("mma",),
}
_DEFAULTS = {f.name: f.default for f in fields(Config)}


def _path_rule(field: str, paths: tuple[str, ...]) -> Rule:
    takers = " and ".join(f"'{p}'" for p in paths)
    return Rule(
        field,
        lambda s, c: getattr(c, field) == _DEFAULTS[field],
        f"applies to compute={takers} only; compute={{config.compute!r}} takes "
        f"{_DEFAULTS[field]!r}",
        lambda s, c: c.compute not in paths,
    )


def _on(compute: str, rules: tuple[Rule, ...]) -> tuple[Rule, ...]:
    """`rules` for the configs of one compute path."""
    return tuple(
        Rule(
            r.field,
            r.holds,
            r.reason,
            lambda s, c, applies=r.applies: c.compute == compute and applies(s, c),
        )
        for r in rules
    )


def _specialized(spec, config) -> bool:
    return config.body == "specialized"


def _ringed(spec, config) -> bool:
    return config.ring_slack > 0


def _token_grouped(spec, config) -> bool:
    return config.token_groups > 1


def _fp8(spec, config) -> bool:
    return spec.format is not None


def _widened(spec, config) -> bool:
    return spec.fp8_widened


# The dense family's Config, on its three compute paths
DENSE = (
    # An fp8 cache (docs/design-space.md, "fp8 caches"): the mma path reads the raw stages as
    # MMA fragments (all-e4m3 rows) or widens them into one 16-bit tile (templates/mla/mma/
    # fp8_tiles.cuh); what no kernel reads is refused rather than read as 16-bit values
    Rule(
        "compute",
        lambda s, c: c.compute == "mma",
        "only 'mma' reads an fp8 cache (Spec.kv_format={spec.kv_format!r}): the fma and tiled "
        "paths' tiles hold q's dtype",
        _fp8,
    ),
    Rule(
        "compute",
        lambda s, c: (
            s.format.tensor_scale or (s.format.scales_at == "token" and s.format.scale == "float32")
        ),
        "the mma path reads one scale for the tensor or float32 scales in each row, not "
        "kv_format={spec.kv_format!r}'s: take kv_format='dtype' with kgen.mla.dequantize_fp8's "
        "values",
        _fp8,
    ),
    Rule(
        "qk_ahead",
        lambda s, c: c.qk_ahead == 0,
        "kv_format={spec.kv_format!r} widens into one 16-bit tile, and q.K ahead keeps two "
        "resident: take 0",
        _widened,
    ),
    Rule(
        "body",
        lambda s, c: c.body == "rows",
        "the specialized roles' kernel reads no fp8 cache: take 'rows'",
        _fp8,
    ),
    Rule(
        "ring_slack",
        lambda s, c: c.ring_slack == 0,
        "kv_format={spec.kv_format!r} widens into one 16-bit tile between block barriers, which "
        "the ring's row groups (tiles apart) would share: take 0",
        _widened,
    ),
    *(_path_rule(field, paths) for field, paths in PATH_AXES.items()),
    Rule(
        "heads_per_block",
        lambda s, c: s.heads % c.heads_per_block == 0,
        "must divide heads={spec.heads}: ragged head groups (the last block holding fewer heads) "
        "are for compute='mma' with body='rows' only",
        lambda s, c: c.compute != "mma" or c.body != "rows",
    ),
    *_on(
        "mma",
        (
            Rule(
                "heads_per_block",
                lambda s, c: c.heads_per_block <= s.heads,
                "at most heads={spec.heads}",
            ),
            *TENSOR_CORES,
            Rule(
                "smem_stages",
                lambda s, c: c.smem_stages >= 2,
                "'mma' pipelines KV tiles with cp.async: at least 2 stages",
            ),
            Rule(
                "smem_stages",
                lambda s, c: c.smem_stages >= 3,
                "qk_ahead keeps tiles i and i + 1 resident while the next loads: at least 3 stages",
                lambda s, c: c.qk_ahead == 1,
            ),
            # the specialized body: two roles, each one row group of whole warp grids
            Rule(
                "num_warps",
                lambda s, c: c.num_warps >= 2,
                "body='specialized' splits the warps in two roles: at least 2",
                _specialized,
            ),
            Rule(
                "softmax",
                _split,
                "body='specialized''s softmax role shares P through shared memory: take 'split'",
                _specialized,
            ),
            Rule(
                "qk_ahead",
                lambda s, c: c.qk_ahead == 0,
                "body='specialized' computes q.K^T ahead in a role of its own: take 0",
                _specialized,
            ),
            Rule(
                "smem_stages",
                lambda s, c: c.smem_stages >= 3,
                "body='specialized' keeps tiles i - 1 (P.V) and i + 1 (q.K^T) resident while the "
                "next loads: at least 3 stages",
                _specialized,
            ),
            Rule(
                "col_groups",
                lambda s, c: 2 * c.col_groups == c.num_warps,
                "body='specialized' makes each role one row group: col_groups = num_warps / 2",
                _specialized,
            ),
            # the KV tile ring on a barrier a stage
            Rule(
                "body",
                lambda s, c: c.body == "rows",
                "ring_slack takes the 'rows' body's loop: take 'rows'",
                _ringed,
            ),
            Rule(
                "qk_ahead",
                lambda s, c: c.qk_ahead == 0,
                "ring_slack takes the row path's loop without it: take 0",
                _ringed,
            ),
            Rule(
                "softmax",
                _split,
                "ring_slack needs the split softmax's barrier after it: take 'split'",
                _ringed,
            ),
            Rule(
                "smem_stages",
                lambda s, c: c.smem_stages - 1 - c.ring_slack >= 1,
                "ring_slack={config.ring_slack} leads the copies by smem_stages - 1 - ring_slack "
                "tiles: at least 3 stages",
                _ringed,
            ),
            # draft rows cut into token groups
            Rule(
                "body",
                lambda s, c: c.body == "rows",
                "token_groups > 1 takes the 'rows' body (its blocks may hold a ragged token group)",
                _token_grouped,
            ),
            Rule(
                "token_groups",
                lambda s, c: (c.token_groups - 1) * -(-s.q_len // c.token_groups) < s.q_len,
                "leaves a block with no query token: at most q_len={spec.q_len}, and "
                "(token_groups - 1) x ceil(q_len / token_groups) under q_len",
                _token_grouped,
            ),
        ),
    ),
    *_on(
        "tiled",
        (
            Rule(
                "num_warps", lambda s, c: c.num_warps == 8, "the tiled block is 8 warps of 8 rows"
            ),
            Rule(
                "block_n",
                lambda s, c: c.block_n == 64,
                "the tiled block takes KV tiles of 64 positions",
            ),
            Rule(
                "vec_width",
                lambda s, c: c.vec_width == 4,
                "the tiled path copies and reads float4: vec_width must be 4",
            ),
            Rule(
                "smem_stages",
                lambda s, c: c.smem_stages >= 2,
                "the tiled path pipelines its steps with cp.async: at least 2",
            ),
        ),
    ),
)

# The sparse family's SparseConfig (tensor cores only)
SPARSE = (
    Rule(
        "heads_per_block",
        lambda s, c: c.heads_per_block <= s.heads,
        "at most heads={spec.heads} (the last head group may hold fewer)",
    ),
    *TENSOR_CORES,
    Rule(
        "dequant",
        lambda s, c: s.format.quantized,
        "'registers' applies to an fp8 cache; a 16-bit cache takes 'shared'",
        lambda s, c: c.dequant == "registers",
    ),
    Rule(
        "smem_stages",
        lambda s, c: c.smem_stages == 2,
        "dequant='registers' double-buffers the dequantized tile: 2",
        lambda s, c: c.dequant == "registers",
    ),
    Rule(
        "smem_stages",
        lambda s, c: c.smem_stages >= 2,
        "the cp.async gather pipeline needs at least 2 stages",
        lambda s, c: c.dequant == "shared",
    ),
)
