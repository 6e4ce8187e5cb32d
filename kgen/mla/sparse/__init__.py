"""Sparse top-k MLA decode (DeepSeek-V3.2 / V4): each query row attends over the cache slots an
indexer listed, read from a 16-bit cache or an fp8 one (kgen.mla.kv_format, kgen.mla.fp8)."""
