"""The design space of one MLA spec: which configs a sweep compiles, and which split counts it
times. The enumeration keeps what kgen.mla.rules allows (the rules build applies); pruning uses
kgen.mla.layout_for, so a config refused for an arch never reaches the compiler."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

from kgen.arch import Arch
from kgen.mla import Config, ConfigError, SparseSpec, Spec, layout_for
from kgen.mla.families import family_of
from kgen.mla.heuristic import widest_vec
from kgen.mla.mma_layout import three_row_config
from kgen.mla.rules import allows
from kgen.mla.spec import block_groups_of
from kgen.mla.tiled_layout import tiled_config, tiled_heads

# (smem_stages, block_n): registers-only with a few positions in flight, one shared tile, and
# cp.async pipelines of two and three tiles.
STAGE_TILES = ((0, 2), (0, 4), (1, 16), (2, 16), (2, 32), (3, 16))
# The tensor-core path: cp.async pipelines of 16- to 64-position tiles.
MMA_STAGE_TILES = ((3, 16), (4, 16), (5, 16), (2, 32))
FIT_ARCHS = ("sm_120",)  # what a sweep tunes must also fit the target (99 KB of shared memory)


@dataclass(frozen=True)
class Axes:
    """Values tried per axis; None means every sensible value (divisors, widest loads)."""

    heads_per_block: tuple[int, ...] | None = None
    num_warps: tuple[int, ...] = (4, 8)
    vec_width: tuple[int, ...] | None = None
    stage_tiles: tuple[tuple[int, int], ...] = STAGE_TILES
    computes: tuple[str, ...] = ("fma", "mma", "tiled")
    tiled_stages: tuple[int, ...] = (2, 3, 4)  # compute='tiled' (float32): its pipeline depths
    mma_stage_tiles: tuple[tuple[int, int], ...] = MMA_STAGE_TILES
    col_groups: tuple[int, ...] = (2, 4, 8)
    min_blocks: tuple[int, ...] = (0, 1)
    qk_ahead: tuple[int, ...] = (0, 1)
    softmax: tuple[str, ...] = ("warp", "split")
    merge: tuple[str, ...] = ("fused",)  # opt-in (kgen sweep --merge fused pdl): sm_90 and later
    body: tuple[str, ...] = ("rows", "specialized")
    # mma: also 12-warp blocks of three 16-row groups (4 column groups each) where the rows of
    # 48 / q_len heads (a ragged last head group where they do not divide H) or of a divisor of
    # H make three m16 tiles: what fits sm_120 at 12 warps an SM (kgen.mla.heuristic)
    three_row_groups: tuple[int, ...] = (0, 1)
    # their KV tile ring on a block barrier a tile (0) or a barrier a stage, row groups up to a
    # tile apart (opt-in: kgen sweep --ring-slack 0 1)
    ring_slack: tuple[int, ...] = (0,)
    # mma "rows" blocks: the draft tokens cut into this many token groups, where q_len is past
    # three m16 tiles of one head's rows (49-64: what fits sm_120 unspilled, kgen.mla.heuristic)
    token_groups: tuple[int, ...] = (1, 2)


# `kgen sweep --space`: the default, compact space holds, on each axis where every shipped
# winner (kgen/tuned) and every heuristic default of the grid agree, only their value: the
# tensor-core path (no 16-bit winner or default takes the CUDA-core fma path) beside the tiled
# float32 path, 4 column groups and the split softmax; the other axes whole. It compiles in
# about a quarter of the full space's time. `full`: every value of Axes.
SPACES = ("compact", "full")
COMPACT_AXES = Axes(computes=("mma", "tiled"), col_groups=(4,), softmax=("split",))


@dataclass(frozen=True)
class Case:
    """One benchmark shape: a Spec plus a batch of equal-length sequences; or a SparseSpec plus a
    batch, each sequence's indices choosing among `prefix` cache positions of its own."""

    name: str
    spec: Spec | SparseSpec
    batch: int
    prefix: int  # committed positions before the q_len draft tokens (sparse: per sequence)

    @property
    def seq_lens(self) -> list[int]:
        return [self.prefix + self.spec.q_len] * self.batch

    @property
    def max_len(self) -> int:
        """Positions the block table can hold: what config='auto' sees at run time."""
        ps = self.spec.page_size
        return -(-(self.prefix + self.spec.q_len) // ps) * ps


@dataclass
class Pruned:
    kept: list[Config] = field(default_factory=list)
    refused: list[tuple[Config, str]] = field(default_factory=list)


DEFAULT_GRID = "default"  # `kgen sweep --grid default`: the grid shipped in the package


class GridError(ValueError):
    """A grid file that cannot be read, is not JSON, or holds a malformed case; the message names
    the file, the case and the key."""


# A grid case's keys and their types: B sequences of T query tokens, H heads, S positions each
DENSE_KEYS = {"latent_dim": int, "rope_dim": int, "mask": str}
SPARSE_KEYS = {"topk": int, "extra_topk": int, "extra_page_size": int}
CASE_KEYS = {
    "name": str,
    "B": int,
    "T": int,
    "H": int,
    "S": int,
    "dtype": str,
    "page_size": int,
    "kv_format": str,  # default: a dense case's cache in its dtype, a sparse case's "fp8"
    **DENSE_KEYS,
    **SPARSE_KEYS,
}


def load_grid(path: str | Path | None = None, family: str | None = None) -> list[Case]:
    """The cases of a grid file (None or "default": kgen/tune/grid.json, from the installed
    package); only those of `family` ('dense' or 'sparse') where given. GridError says what is
    wrong with a file that cannot be used."""
    if path is None or str(path) == DEFAULT_GRID:
        where = "kgen/tune/grid.json"
        text = resources.files("kgen.tune").joinpath("grid.json").read_text()
    else:
        where = str(path)
        try:
            text = Path(path).read_text()
        except (OSError, UnicodeDecodeError) as err:
            raise GridError(
                f"grid {where} cannot be read: {getattr(err, 'strerror', err)}"
            ) from None
    try:
        data = json.loads(text)
    except ValueError as err:
        raise GridError(f"grid {where} is not valid JSON: {err}") from None
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list) or not data["cases"]:
        raise GridError(f'grid {where}: expected an object {{"cases": [{{...}}, ...]}}')
    cases, names = [], set()
    for n, entry in enumerate(data["cases"]):
        label = f"case {n}" + (
            f" ({entry['name']})" if isinstance(entry, dict) and "name" in entry else ""
        )
        try:
            case = case_from_dict(entry)
        except ValueError as err:
            raise GridError(f"grid {where}, {label}: {err}") from None
        if case.name in names:
            raise GridError(f"grid {where}, {label}: a second case named {case.name!r}")
        names.add(case.name)
        cases.append(case)
    return [c for c in cases if family in (None, family_of(c.spec).name)]


def on_kv_format(cases: list[Case], kv_format: str) -> list[Case]:
    """The dense 16-bit `cases` with their cache in `kv_format` (an fp8 row of
    kgen.mla.kv_format): the grid's shapes on an fp8 cache, as `--kv-format` takes them."""
    return [
        replace(c, spec=replace(c.spec, kv_format=kv_format))
        for c in cases
        if not isinstance(c.spec, SparseSpec) and c.spec.dtype != "float32"
    ]


def _check_case(c) -> None:
    """Raise ValueError naming the first key of grid entry `c` that is missing, unknown, of the
    wrong type or out of range (the Spec checks the rest)."""
    if not isinstance(c, dict):
        raise ValueError(f"expected an object with keys B, H, S, ..., got {c!r}")
    for key in ("B", "H", "S"):
        if key not in c:
            raise ValueError(f"missing {key!r} (a case needs B, H and S)")
    not_here = DENSE_KEYS if "topk" in c else SPARSE_KEYS
    for key, value in c.items():
        if key not in CASE_KEYS or key in not_here:
            family = "a sparse (topk)" if "topk" in c else "a dense"
            keys = ", ".join(k for k in CASE_KEYS if k not in not_here)
            raise ValueError(f"unknown key {key!r} for {family} case; its keys: {keys}")
        kind = CASE_KEYS[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(
                f"{key!r} must be {'an integer' if kind is int else 'a string'}, got {value!r}"
            )
    if c["B"] < 1:
        raise ValueError(f"'B' (sequences) must be >= 1, got {c['B']}")
    if c["S"] < 0:
        raise ValueError(f"'S' (positions per sequence) must be >= 0, got {c['S']}")


def case_from_dict(c: dict) -> Case:
    """A grid entry: B, T, H, S (positions per sequence), and optionally dtype, page_size, mask,
    kv_format (a dense cache: "dtype", the default, or an fp8 row of kgen.mla.kv_format);
    an entry with `topk` (and `kv_format`, default fp8) is a sparse case, one with `extra_topk`
    and `extra_page_size` too the V4 op's with a second cache (a window of recent tokens).
    ValueError (a ParamError from the Spec) names a key that is missing, unknown or wrong."""
    _check_case(c)
    if "topk" in c:
        sparse = SparseSpec(
            heads=c["H"],
            q_len=c.get("T", 1),
            topk=c["topk"],
            kv_format=c.get("kv_format", "fp8"),
            page_size=c.get("page_size", 64),
            dtype=c.get("dtype", "bfloat16"),
            extra_topk=c.get("extra_topk", 0),
            extra_page_size=c.get("extra_page_size", 0),
        )
        name = c.get("name", f"{sparse.short_name()}_k{sparse.topk}")
        return Case(name=name, spec=sparse, batch=c["B"], prefix=c["S"])
    mask = c.get("mask", "none")
    spec = Spec(
        heads=c["H"],
        q_len=c.get("T", 1),
        dtype=c.get("dtype", "bfloat16"),
        page_size=c.get("page_size", 64),
        mask=mask,
        latent_dim=c.get("latent_dim", 512),
        rope_dim=c.get("rope_dim", 64),
        kv_format=c.get("kv_format", "dtype"),
    )
    return Case(name=c.get("name", spec.short_name()), spec=spec, batch=c["B"], prefix=c["S"])


def enumerate_configs(spec: Spec, axes: Axes = Axes()) -> list[Config]:
    """Every combination of the axes that kgen.mla.rules allows (kv_splits left at 1: it is
    chosen at run time). The tensor-core path is enumerated for 16-bit dtypes only, the
    register-tiled one for float32 (its block is fixed: 8 warps, tiles of 64, float4 copies; at
    most 64 rows)."""
    hpbs = axes.heads_per_block or tuple(d for d in range(1, spec.heads + 1) if spec.heads % d == 0)
    configs = []
    if "fma" in axes.computes:
        vecs = axes.vec_width or (widest_vec(spec),)
        configs += [
            Config(heads_per_block=h, vec_width=v, smem_stages=st, num_warps=w, block_n=n)
            for h in hpbs
            for w in axes.num_warps
            for v in vecs
            for st, n in axes.stage_tiles
        ]
    if "tiled" in axes.computes and spec.dtype == "float32":
        fitting = set(tiled_heads(spec))
        configs += [
            tiled_config(h, st, merge=m)
            for h in hpbs
            if h in fitting
            for st in axes.tiled_stages
            for m in axes.merge
        ]
    if "mma" in axes.computes and spec.dtype != "float32":
        configs += [
            Config(
                heads_per_block=h,
                vec_width=16 // spec.elem_bytes,
                smem_stages=st,
                num_warps=w,
                block_n=n,
                compute="mma",
                col_groups=c,
                min_blocks=b,
                qk_ahead=a,
                softmax=f,
                merge=m,
                body=ws,
            )
            for h in hpbs
            for w in axes.num_warps
            for c in axes.col_groups
            for st, n in axes.mma_stage_tiles
            for b in axes.min_blocks
            for a in axes.qk_ahead
            for f in axes.softmax
            for m in axes.merge
            for ws in axes.body
        ]
        if 1 in axes.three_row_groups:
            configs += [
                three_row_config(
                    h,
                    smem_stages=st,
                    block_n=n,
                    min_blocks=b,
                    qk_ahead=a,
                    softmax=f,
                    merge=m,
                    ring_slack=k,
                )
                for h in _three_group_heads(spec, hpbs)
                for st, n in axes.mma_stage_tiles
                for b in axes.min_blocks
                for a in axes.qk_ahead
                for f in axes.softmax
                for m in axes.merge
                for k in axes.ring_slack
            ]
        if spec.q_len > 48:
            configs += [
                replace(config, token_groups=g)
                for g in axes.token_groups
                if g > 1
                for config in configs
                if config.compute == "mma" and config.body == "rows" and config.num_warps != 12
            ]
    return [config for config in configs if allows(spec, config)]


def _three_group_heads(spec: Spec, hpbs: tuple[int, ...]) -> list[int]:
    """Heads per block whose rows are three m16 tiles: those of `hpbs`, and 48 / q_len heads
    where that is not one of them (ragged head groups where it does not divide H)."""
    three = [h for h in hpbs if math.ceil(h * spec.q_len / 16) == 3]
    if 48 % spec.q_len == 0 and 48 // spec.q_len < spec.heads and 48 // spec.q_len not in three:
        three.append(48 // spec.q_len)
    return three


def prune(spec: Spec, configs: list[Config], arch: Arch, also_fit: tuple[Arch, ...] = ()) -> Pruned:
    """Split configs into those worth compiling and those refused, with the reason: hard refusals
    (layout_for's ConfigError: cannot work on `arch` or on an arch of `also_fit`, so that what a
    sweep on the test GPU tunes also runs on the target) and soft ones (an estimate of more
    registers per thread than the arch has: it would spill, so the sweep skips it, though build
    would compile it)."""
    return refuse_or_keep(spec, configs, arch, also_fit, layout_for)


def refuse_or_keep(
    spec, configs: list, arch: Arch, also_fit: tuple[Arch, ...], layout_of
) -> Pruned:
    """prune's rule for any family whose layout model `layout_of(spec, config, arch)` raises
    ConfigError and estimates registers."""
    result = Pruned()
    for config in configs:
        try:
            for other in also_fit:
                layout_of(spec, config, other)
            layout = layout_of(spec, config, arch)
        except (ConfigError, ValueError) as err:
            result.refused.append((config, str(err)))
            continue
        if layout.registers_estimate > arch.max_regs_per_thread:
            result.refused.append(
                (
                    config,
                    f"soft: about {layout.registers_estimate} registers per thread estimated, over "
                    f"{arch.name}'s {arch.max_regs_per_thread} (would spill)",
                )
            )
        else:
            result.kept.append(config)
    return result


def split_candidates(
    case: Case, config: Config, sm_count: int, blocks_per_sm: int = 2, max_candidates: int = 4
) -> list[int]:
    """KV split counts worth timing: the most that fill every SM's `blocks_per_sm` block slots in
    one wave (no tail; the compiled kernel's occupancy), the most that fill two waves, and a half
    and a quarter of the first; never more splits than tiles. (A sweep on the H200 timed 203 µs
    at 9 splits and 178 µs at the one-wave 12 for a kernel that fits 3 blocks per SM. Two waves
    are counted from the slots, not as twice one wave's splits: 8 blocks a split on 132 slots
    fill one wave with 16 splits, 4 slots idle, and two whole waves with 33, not 32.)"""
    blocks = case.batch * block_groups_of(case.spec, config)
    tiles = max(1, math.ceil(case.max_len / config.block_n))
    slots = blocks_per_sm * sm_count
    wave = max(1, slots // blocks)
    options = sorted({1, max(1, wave // 4), max(1, wave // 2), wave, max(1, 2 * slots // blocks)})
    options = [s for s in options if s <= tiles]
    if len(options) > max_candidates:
        options = options[-max_candidates:]
    return options


def parse_case_overrides(name: str) -> tuple[str, dict[str, int | str]]:
    """`CASE:field=value,...` (the bench tools' way to vary a case's config) -> the case's name
    and the Config fields to replace (integers where the value is one, e.g. `dequant=shared`
    stays a string)."""
    case, _, overrides = name.partition(":")
    return case, parse_fields(overrides)


def parse_fields(text: str) -> dict[str, int | str]:
    """`field=value,...` -> {field: value}, integers where the value is one."""
    fields = dict(item.split("=") for item in text.split(",") if item)
    return {k: int(v) if v.lstrip("-").isdigit() else v for k, v in fields.items()}
