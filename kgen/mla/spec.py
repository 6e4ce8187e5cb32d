"""What an MLA attention kernel computes (Spec) and how a variant is built (Config)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from kgen.dtypes import DTYPES
from kgen.mla.kv_format import FORMATS, OUT_DIM
from kgen.params import ConfigError, Params, Removed, Renamed, accepts_former_names

MAX_SPLITS = 1024  # the fused combine keeps a row's split weights in shared memory

MASKS = ("none", "causal", "tree")
MAX_Q_LEN = 64  # a draft-tree row is one 64-bit word
COMPUTES = ("fma", "mma", "tiled")
# The named values of the choices among alternatives (the first: the default)
SOFTMAXES = ("warp", "split")  # who computes a tile's softmax
MERGES = ("fused", "pdl")  # where the splits' partials merge
BODIES = ("rows", "specialized")  # the tensor-core path's kernel body
# The dense family's caches: "dtype" (values in the spec's dtype, like q: any latent/rope split),
# then the fp8 rows of kgen.mla.kv_format it takes (576 values a token: latent 512, rope 64)
DENSE_KV_FORMATS = ("dtype", "fp8_tensor", "fp8")


class AttentionShape:
    """What both MLA families derive from latent_dim, rope_dim and dtype."""

    latent_dim: int
    rope_dim: int
    dtype: str

    @property
    def head_dim(self) -> int:
        return self.latent_dim + self.rope_dim

    @property
    def elem_bytes(self) -> int:
        return DTYPES[self.dtype].size

    @property
    def torch_dtype(self):
        return DTYPES[self.dtype].torch()

    @property
    def default_scale(self) -> float:
        return 1.0 / math.sqrt(self.head_dim)


@dataclass(frozen=True)
class Spec(AttentionShape, Params):
    """The op: H heads, T query tokens per sequence, the latent/rope split of the cached vector,
    the element type of q and the cache, the cache's page size and the mask over draft tokens.

    kv_format: "dtype" (the cache in `dtype`), or an fp8 row of kgen.mla.kv_format read into
    bfloat16/float16 arithmetic: "fp8_tensor" (576 e4m3 a token and one float32 k_scale for the
    tensor, vLLM's and SGLang's kv_cache_dtype="fp8") or "fp8" (DeepSeek-V3.2's 656-byte rows).
    The default is left out of to_dict, so a spec without an fp8 cache keeps its key."""

    heads: int
    q_len: int = 1
    latent_dim: int = 512
    rope_dim: int = 64
    dtype: str = "bfloat16"
    page_size: int = 64
    mask: str = "none"
    kv_format: str = "dtype"

    def __post_init__(self):
        self._require_int("heads", 1, 1024)
        self._require_int("q_len", 1, MAX_Q_LEN)
        self._require_int("latent_dim", 1, 4096)
        self._require_int("rope_dim", 0, 4096)
        self._require_int("page_size", 1, 1 << 20)
        self._require_choice("dtype", tuple(DTYPES))
        self._require_choice("mask", MASKS)
        self._require(
            self.mask != "none" or self.q_len == 1,
            "mask",
            f"'none' means plain decode (q_len 1); q_len={self.q_len} needs 'causal' or 'tree'",
        )
        self._require_choice("kv_format", DENSE_KV_FORMATS)
        if self.kv_format != "dtype":
            dims = FORMATS[self.kv_format].head_dim - OUT_DIM
            self._require(
                (self.latent_dim, self.rope_dim) == (OUT_DIM, dims),
                "kv_format",
                f"its tokens are {OUT_DIM} latent + {dims} rope values: take latent_dim="
                f"{OUT_DIM}, rope_dim={dims} (got {self.latent_dim}, {self.rope_dim})",
            )
            self._require(
                self.dtype in ("bfloat16", "float16"),
                "kv_format",
                f"an fp8 cache is read into 16-bit tensor-core arithmetic: q's dtype bfloat16 "
                f"or float16, not {self.dtype}",
            )

    @property
    def format(self):
        """The cache's row of kgen.mla.kv_format (None: the cache in `dtype`)."""
        return None if self.kv_format == "dtype" else FORMATS[self.kv_format]

    @property
    def fp8_fragments(self) -> bool:
        """An fp8 cache the tensor-core path reads as MMA fragments (all-e4m3 rows: no 16-bit
        tile); other fp8 caches widen into one (templates/mla/mma/fp8_tiles.cuh)."""
        return self.format is not None and self.format.bare_e4m3

    @property
    def fp8_widened(self) -> bool:
        """An fp8 cache whose raw stages widen into one 16-bit tile (not read as fragments)."""
        return self.format is not None and not self.format.bare_e4m3

    def to_dict(self) -> dict:
        data = super().to_dict()
        if data["kv_format"] == "dtype":  # a 16-bit cache: the key its tuning entries are under
            del data["kv_format"]
        return data

    @property
    def masks_nothing(self) -> bool:
        """Whether the mask hides no position from any row: 'none', or 'causal' over one row."""
        return self.mask == "none" or (self.mask == "causal" and self.q_len == 1)

    def short_name(self) -> str:
        dt = DTYPES[self.dtype].short
        dims = (
            ""
            if (self.latent_dim, self.rope_dim) == (512, 64)
            else f"_d{self.latent_dim}r{self.rope_dim}"
        )
        cache = "" if self.kv_format == "dtype" else f"_{self.kv_format}"
        return f"{dt}_h{self.heads}_t{self.q_len}_p{self.page_size}_{self.mask}{dims}{cache}"


def head_groups_of(spec, config) -> int:
    """Blocks of heads a sequence's (or, sparse, a query token's) split is cut into, the last
    holding fewer heads where heads_per_block does not divide them (either family's spec and
    config)."""
    return -(-spec.heads // config.heads_per_block)


def block_tokens_of(spec: Spec, config: Config) -> int:
    """Query tokens one block serves (the last token group may hold fewer)."""
    return -(-spec.q_len // config.token_groups)


def block_groups_of(spec: Spec, config: Config) -> int:
    """Blocks a sequence's split is cut into: head groups x token groups (grid.x)."""
    return head_groups_of(spec, config) * config.token_groups


@accepts_former_names
@dataclass(frozen=True)
class Config(Params):
    """A design point. The rules between its axes (which combinations no kernel implements) are
    kgen.mla.rules; what a block's resources allow on an arch, each path's planner (layout_for).

    Every compute path:
    heads_per_block: heads one block serves (with all q_len rows), so a KV tile read once serves
      them all: 1 = most blocks and most re-reads, heads = fully amortised. It divides heads,
      except on the mma path's "rows" body, where the last head group may hold fewer heads: its
      block's other rows compute nothing anyone reads (e.g. 48-row 12-warp blocks at H = 128:
      head groups of 48, 48 and 32 heads).
    kv_splits: KV split count (flash-decoding), at most MAX_SPLITS. A launch parameter: it does
      not change the compiled code.
    vec_width: elements per global load (at most 16 bytes).
    smem_stages: 0 = KV from global memory straight into registers, 1 = through one shared tile,
      >= 2 = a cp.async pipeline that many tiles deep.
    num_warps: warps per block, a power of two except on the mma path (12: three row groups of
      four column groups). block_n: KV positions per tile (per warp, in registers, when
      smem_stages is 0).
    compute: "fma" (CUDA cores, any dtype), "mma" (tensor cores: mma.sync m16n8k16 with ldmatrix
      and cp.async, float16/bfloat16 only) or "tiled" (CUDA cores on register tiles, float32
      only: 8 warps of 8 rows, at most 64 rows a block, KV tiles of 64 positions, vec_width 4;
      templates/mla/fma/tiled.cuh).

    Only compute="mma" and "tiled" (sm_90 or later), the others take "fused":
    merge: how the splits of a group merge their partial results. "fused": in the same launch
      (templates/mla/combine.cuh); "pdl": in a kernel of its own (templates/mla/combine_kernel.cuh)
      launched after the attention kernel with programmatic dependent launch, so the attention
      kernel carries no merge code (its registers and schedule are the loop's alone) and the
      merge can spread over more blocks and loads in flight. Two launches per call where
      kv_splits > 1 (one in a CUDA graph).

    The tensor-core path's own axes (compute="mma"; the other paths take their defaults):
    col_groups: warps that share a block's rows and split the 512 output columns (and the 576
      head dims of q.k) between them; the other num_warps / col_groups warps split rows.
    min_blocks: blocks per SM the kernel's registers must allow (the minimum of
      __launch_bounds__). 0 leaves it to ptxas, which may cap registers for occupancy and spill;
      1 gives each thread the registers the code needs; N > 1 caps them at 1/N of the register file.
    qk_ahead: 1 computes q.K of the next KV tile beside the softmax and P.V of this one
      (independent work for each warp to overlap, one barrier per tile; needs smem_stages >= 3).
    softmax: who computes a tile's softmax. "warp": every warp of a row group the softmax of all
      its rows' scores; "split": the warps of a row group split it (each sums, masks and
      exponentiates a slice of the scores once) and share P through shared memory (needs
      col_groups > 1).
    body: the kernel body. "rows": every warp copies, computes q.K^T, the softmax and P.V of its
      rows (templates/mla/mma/kernel.cuh); "specialized": the block's warps in two roles
      (templates/mla/mma/specialized.cuh): the first num_warps / 2 copy the KV tiles and compute
      q.K^T's partial scores, the others run the softmax and P.V a tile behind, so that the two
      phases of consecutive tiles overlap on different warps; each role is one row group of
      col_groups = num_warps / 2 warps. Needs softmax="split" and smem_stages >= 3, excludes
      qk_ahead (docs/decisions.md: where it is faster).
    ring_slack: the "rows" body with the split softmax (no qk_ahead): 0 keeps the block's warps in
      step with a block barrier a KV tile; 1 synchronises the tile ring with a barrier a stage
      instead (mbarrier: each thread's copies arrive as they land, each warp when done with the
      tile), so the block's row groups may run a tile apart, the copies leading by
      smem_stages - 2 tiles (at least 1). For blocks of several row groups (12 warps).
    token_groups: blocks the query tokens are cut into (the "rows" body): a block serves
      ceil(q_len / token_groups) tokens of its heads, and each token group reads the KV split on
      its own. For draft rows past what one block holds without spilling (q_len 49-64 where
      shared memory is 99 KB a block: docs/decisions.md: token groups).
    """

    FORMER_NAMES = {
        "split_softmax": Renamed("softmax", SOFTMAXES),
        "pdl_combine": Renamed("merge", MERGES),
        "specialize": Renamed("body", BODIES),
        "swap_rows": Removed(
            "the swapped-rows kernel body was removed: no shipped entry, default or measured "
            "winner took it; blocks of at most 8 rows take body='rows'"
        ),
        "split_reduce": Removed(
            "the split reduce was removed: no shipped entry, default or measured winner took "
            "it; take softmax='split' (it sums the partials in its slices) or 'warp'"
        ),
    }

    heads_per_block: int = 1
    kv_splits: int = 1
    vec_width: int = 8
    smem_stages: int = 2
    num_warps: int = 4
    block_n: int = 32
    compute: str = "fma"
    col_groups: int = 4
    min_blocks: int = 0
    qk_ahead: int = 0
    softmax: str = "warp"
    merge: str = "fused"
    body: str = "rows"
    ring_slack: int = 0
    token_groups: int = 1

    def __post_init__(self):
        self._require_int("heads_per_block", 1, 1024)
        self._require_int("kv_splits", 1, MAX_SPLITS)
        self._require_int("vec_width", 1, 16)
        self._require(
            self.vec_width & (self.vec_width - 1) == 0, "vec_width", "must be a power of two"
        )
        self._require_int("smem_stages", 0, 8)
        self._require_int("num_warps", 1, 32)
        self._require(
            self.num_warps & (self.num_warps - 1) == 0 or self.compute == "mma",
            "num_warps",
            "must be a power of two",
        )
        self._require_int("block_n", 1, 256)
        self._require_choice("compute", COMPUTES)
        self._require_int("col_groups", 1, 32)
        self._require_int("min_blocks", 0, 32)
        self._require_int("qk_ahead", 0, 1)
        self._require_choice("softmax", SOFTMAXES)
        self._require_choice("merge", MERGES)
        self._require_choice("body", BODIES)
        if isinstance(self.ring_slack, int) and self.ring_slack > 1:
            raise ConfigError(
                f"Config.ring_slack={self.ring_slack!r}: slack beyond one tile was removed (no "
                "shipped entry, default or measured winner took it); take 1 (or 0)"
            )
        self._require_int("ring_slack", 0, 1)
        self._require_int("token_groups", 1, 64)

    def short_name(self) -> str:
        name = (
            f"hb{self.heads_per_block}_v{self.vec_width}_st{self.smem_stages}"
            f"_w{self.num_warps}_n{self.block_n}"
        )
        pdl = "_pc" if self.merge == "pdl" else ""
        if self.compute == "fma":
            return name
        if self.compute == "tiled":
            return f"{name}_tiled{pdl}"
        blocks = f"_mb{self.min_blocks}" if self.min_blocks else ""
        ahead = "_qa" if self.qk_ahead else ""
        softmax = "_ss" if self.softmax == "split" else ""
        roles = "_ws" if self.body == "specialized" else ""
        ring = f"_rs{self.ring_slack}" if self.ring_slack else ""
        tokens = f"_tg{self.token_groups}" if self.token_groups > 1 else ""
        return f"{name}_mma_c{self.col_groups}{blocks}{ahead}{softmax}{pdl}{roles}{ring}{tokens}"
