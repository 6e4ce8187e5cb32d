"""What a sparse top-k MLA kernel computes (SparseSpec) and how a variant is built
(SparseConfig)."""

from __future__ import annotations

from dataclasses import dataclass

from kgen.dtypes import DTYPES
from kgen.mla.sparse import fp8
from kgen.mla.spec import MAX_SPLITS, MERGES, SOFTMAXES, AttentionShape
from kgen.params import Params, Renamed, accepts_former_names

KV_FORMATS = ("fp8", "bf16")
DEQUANTS = ("shared", "registers")
GATHER_BYTES = (4, 8, 16)
MAX_Q_LEN = 64
MAX_TOPK = 1 << 20


@dataclass(frozen=True)
class SparseSpec(AttentionShape, Params):
    """The op: H heads, T query tokens per sequence, each attending over the `topk` cache slots
    its row of `indices` lists; q in `dtype` (bfloat16 or float16); the cache in `kv_format`:
    'fp8' (uint8, 656 bytes per token: kgen.mla.sparse.fp8) or 'bf16' (the dense family's
    16-bit cache [pages, page_size, 576], in q's dtype); `page_size` tokens per page.

    topk shapes the launch, not the code: one binary serves every topk (the sweep and the
    default config look at it).
    """

    heads: int
    q_len: int = 1
    topk: int = 2048
    kv_format: str = "fp8"
    page_size: int = 64
    dtype: str = "bfloat16"

    def __post_init__(self):
        self._require_int("heads", 1, 1024)
        self._require_int("q_len", 1, MAX_Q_LEN)
        self._require_int("topk", 1, MAX_TOPK)
        self._require_choice("kv_format", KV_FORMATS)
        self._require_int("page_size", 1, 1 << 20)
        self._require_choice("dtype", ("bfloat16", "float16"))

    latent_dim = fp8.LATENT_DIM
    rope_dim = fp8.ROPE_DIM

    @property
    def token_bytes(self) -> int:
        """Bytes one cached token takes: 656 (fp8) or 1152 (16-bit)."""
        return fp8.TOKEN_BYTES if self.kv_format == "fp8" else self.head_dim * self.elem_bytes

    def short_name(self) -> str:
        dt = DTYPES[self.dtype].short
        return f"sparse_{dt}_{self.kv_format}_h{self.heads}_t{self.q_len}_p{self.page_size}"


@accepts_former_names
@dataclass(frozen=True)
class SparseConfig(Params):
    """A design point of the sparse family (tensor cores: mma.sync m16n8k16, fp32 accumulate).

    heads_per_block: heads one block serves (BLOCK_H, the M dimension of both products), so a
      gathered tile serves them all; padded to m16 tiles.
    kv_splits: pieces of the top-k list per query token (a launch parameter), at most MAX_SPLITS;
      the splits of a group merge their partials in the same launch (templates/mla/combine.cuh).
    block_n: cache rows gathered per tile (BLOCK_T), a multiple of 16.
    smem_stages: tiles in the cp.async pipeline: 16-bit tiles for a bf16 cache, raw fp8 tiles for
      dequant='shared'; dequant='registers' double-buffers the dequantized tile (2).
    gather_bytes: bytes per gather instruction (cp.async or a global load): 4, 8 or 16.
    num_warps, col_groups: warps per block, and how many of them split the 512 output columns
      (and the 576 dims of q.K) of the same rows; the rest split rows.
    dequant: fp8 only. 'shared': cp.async the raw bytes, then one pass turns the tile into 16-bit
      values in shared memory; 'registers': global loads into registers (one tile ahead),
      dequantized there and stored as the 16-bit tile ldmatrix reads.
    min_blocks: blocks per SM the registers must allow (__launch_bounds__; 0: ptxas decides).
    merge: as the dense family's Config.merge: "fused" merges the splits' partials in the same
      launch; "pdl" (sm_90 or later) in a kernel of their own (templates/mla/combine_kernel.cuh),
      launched after the attention kernel with programmatic dependent launch.
    softmax: as the dense family's Config.softmax: "warp": every warp of a row group runs the
      whole softmax of its rows; "split": a row group's warps split each tile's softmax (each
      sums the partial scores of a slice of the tile) and share P through shared memory.
    """

    FORMER_NAMES = {
        "pdl_combine": Renamed("merge", MERGES),
        "split_softmax": Renamed("softmax", SOFTMAXES),
    }

    heads_per_block: int = 16
    kv_splits: int = 1
    block_n: int = 16
    smem_stages: int = 2
    gather_bytes: int = 16
    num_warps: int = 4
    col_groups: int = 4
    dequant: str = "shared"
    min_blocks: int = 0
    merge: str = "fused"
    softmax: str = "warp"

    def __post_init__(self):
        self._require_int("heads_per_block", 1, 1024)
        self._require_int("kv_splits", 1, MAX_SPLITS)
        self._require_int("block_n", 1, 256)
        self._require_int("smem_stages", 1, 8)
        self._require_choice("gather_bytes", GATHER_BYTES)
        self._require_int("num_warps", 1, 32)
        self._require(
            self.num_warps & (self.num_warps - 1) == 0, "num_warps", "must be a power of two"
        )
        self._require_int("col_groups", 1, 32)
        self._require_choice("dequant", DEQUANTS)
        self._require_int("min_blocks", 0, 32)
        self._require_choice("merge", MERGES)
        self._require_choice("softmax", SOFTMAXES)

    def short_name(self) -> str:
        blocks = f"_mb{self.min_blocks}" if self.min_blocks else ""
        pdl = "_pc" if self.merge == "pdl" else ""
        split = "_ss" if self.softmax == "split" else ""
        return (
            f"hb{self.heads_per_block}_n{self.block_n}_st{self.smem_stages}_g{self.gather_bytes}"
            f"_w{self.num_warps}_c{self.col_groups}_{self.dequant[:3]}{blocks}{pdl}{split}"
        )
