"""What a sparse top-k MLA kernel computes (SparseSpec) and how a variant is built
(SparseConfig)."""

from __future__ import annotations

from dataclasses import dataclass

from kgen.dtypes import DTYPES
from kgen.mla.kv_format import FORMATS, KV_FORMATS, OUT_DIM, KvFormat
from kgen.mla.spec import MAX_SPLITS, MERGES, SOFTMAXES, AttentionShape
from kgen.params import Params, Renamed, accepts_former_names

DEQUANTS = ("shared", "registers")
GATHER_BYTES = (4, 8, 16)
MAX_Q_LEN = 64
MAX_TOPK = 1 << 20


@dataclass(frozen=True)
class SparseSpec(AttentionShape, Params):
    """The op: H heads, T query tokens per sequence, each attending over the `topk` cache slots
    its row of `indices` lists; q in `dtype` (bfloat16 or float16); the cache in `kv_format`, a
    row of kgen.mla.kv_format's table: 'fp8' (DeepSeek-V3.2, 656 bytes a token) or 'bf16' (its
    16-bit form, 576 values in q's dtype) for the V3.2 op (q and K 576 wide, V their first 512);
    'v4_fp8' (DeepSeek-V4, 584 bytes), 'v41_fp8' (DeepSeek-V4.1, 528) or 'v4_bf16' (512 values)
    for the V4 op (q, K and V one 512-wide vector); `page_size` tokens per page.

    The V4 op also takes per-row lengths of each list, an attention sink (launch arguments) and
    a second cache: `extra_page_size` tokens per page (0: none), `extra_topk` entries per row in
    its list, under the same softmax.

    topk and extra_topk shape the launch, not the code: one binary serves every value (the
    sweep and the default config look at them).
    """

    heads: int
    q_len: int = 1
    topk: int = 2048
    kv_format: str = "fp8"
    page_size: int = 64
    dtype: str = "bfloat16"
    extra_topk: int = 0
    extra_page_size: int = 0

    def __post_init__(self):
        self._require_int("heads", 1, 1024)
        self._require_int("q_len", 1, MAX_Q_LEN)
        self._require_int("topk", 1, MAX_TOPK)
        self._require_choice("kv_format", KV_FORMATS)
        self._require(
            not FORMATS[self.kv_format].tensor_scale,
            "kv_format",
            f"the sparse kernels read each token's scales from its row; {self.kv_format!r} keeps "
            f"one scale for the whole cache (a dense-family format)",
        )
        self._require_int("page_size", 1, 1 << 20)
        self._require_choice("dtype", ("bfloat16", "float16"))
        self._require_int("extra_topk", 0, MAX_TOPK)
        self._require_int("extra_page_size", 0, 1 << 20)
        self._require(
            (self.extra_topk > 0) == (self.extra_page_size > 0),
            "extra_topk",
            f"a second cache has both extra_topk and extra_page_size > 0, none has both 0 "
            f"(extra_page_size={self.extra_page_size})",
        )
        self._require(
            self.extra_topk == 0 or self.v4_op,
            "extra_topk",
            f"a second cache is the V4 op's (a 512-wide kv_format), not {self.kv_format!r}'s",
        )

    latent_dim = OUT_DIM  # V: the first 512 values of a cached token

    @property
    def format(self) -> KvFormat:
        return FORMATS[self.kv_format]

    @property
    def head_dim(self) -> int:
        """The width of q and of a cached token: 576 (the V3.2 op) or 512 (the V4 op)."""
        return self.format.head_dim

    @property
    def rope_dim(self) -> int:
        """The dims of q and K that V has not (the V3.2 op's 64 rope dims; none for V4)."""
        return self.head_dim - self.latent_dim

    @property
    def v4_op(self) -> bool:
        """DeepSeek-V4's op: K = V (512 wide), with lengths, a sink and a second cache."""
        return self.head_dim == OUT_DIM

    @property
    def has_extra(self) -> bool:
        return self.extra_page_size > 0

    @property
    def token_bytes(self) -> int:
        """Bytes one cached token takes: the fp8 format's (656, 584, 528), or 2 per value."""
        f = self.format
        return f.token_bytes if f.quantized else self.head_dim * self.elem_bytes

    def to_dict(self) -> dict:
        """The fields; a spec without a second cache leaves its two fields out, so its key (and
        the tuning entries keyed by it) is what it was before they existed."""
        d = super().to_dict()
        if not self.has_extra:
            del d["extra_topk"], d["extra_page_size"]
        return d

    def short_name(self) -> str:
        dt = DTYPES[self.dtype].short
        extra = f"_x{self.extra_page_size}" if self.has_extra else ""
        return f"sparse_{dt}_{self.kv_format}_h{self.heads}_t{self.q_len}_p{self.page_size}{extra}"


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
