"""The seed workloads: B=1 draft-tree verify (T=16) over 16k and 64k prefixes, H=64 and H=8,
float32 and bfloat16, through attention(config='auto') and through a split-KV config."""

import pytest

from kgen.mla import Config, Spec, attention, build
from kgen.mla.workload import make_workload

from .mla_helpers import reference_for, to_numpy
from .reference import check_attention

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("heads", [64, 8])
@pytest.mark.parametrize("prefix", [16384, 65536])
def test_seed_workload(prefix, heads, dtype):
    spec = Spec(heads=heads, q_len=16, dtype=dtype, page_size=64, mask="tree")
    w = make_workload(spec, [prefix + 16], seed=prefix + heads)
    ref = reference_for(w)
    out, lse = attention(w.q, w.kv_cache, w.block_table, w.seq_lens, w.mask, w.scale)
    check_attention(*to_numpy(out, lse), *ref, dtype)
    split = Config(
        heads_per_block=1,
        kv_splits=96,
        vec_width=16 // w.q.element_size(),
        smem_stages=2,
        num_warps=4,
        block_n=16,
    )
    out, lse = build(spec, split, "native")(*w.args())
    check_attention(*to_numpy(out, lse), *ref, dtype)
