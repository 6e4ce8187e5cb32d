"""Sparse top-k MLA decode (DeepSeek-V3.2 / V4): each query row attends over the cache slots an
indexer listed, read from a bf16 cache or an fp8 one (kgen.mla.sparse.fp8)."""
