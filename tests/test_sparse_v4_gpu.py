"""The V4 op (K = V 512 wide; DeepSeek-V4 584-byte, V4.1 528-byte and 16-bit caches) on the GPU
against tests/sparse_reference.py's float64 reference, which decodes the cache bytes itself:
random H, T, top-k, q's dtype, page sizes, a second cache, per-sequence and per-row lengths, -1
runs, duplicate slots, empty rows, sinks of +-inf and finite values, poisoned outputs; NaN in a
cache row no list points at (nothing changes) and in one a list points at (its query rows are NaN:
out and lse). Run with `pytest -m gpu tests/test_sparse_v4_gpu.py`."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import kgen
from kgen.mla import SparseSpec, build_sparse, default_sparse_config, quantize_fp8
from kgen.mla.check import check_attention
from kgen.mla.sparse.runner import SparseRunner

from .sparse_reference import decode_cache, v4_reference

pytestmark = pytest.mark.gpu
SEEDS = st.integers(0, 2**31 - 1)
FORMATS = ("v4_fp8", "v41_fp8", "v4_bf16")


def make_cache(fmt: str, pages: int, page_size: int, gen, device="cuda"):
    """(the cache tensor, float64 [slots, 512] of what it holds, as the reference decodes it)."""
    values = torch.randn(pages, page_size, 512, generator=gen)
    if fmt == "v4_bf16":
        cache = values.bfloat16()
        return cache.to(device), cache.double().reshape(-1, 512).numpy()
    cache = quantize_fp8(values, format=fmt)
    if fmt == "v4_fp8":
        page_bytes = cache.stride(0)
        raw = torch.as_strided(cache, (pages, page_bytes), (page_bytes, 1)).clone()
        slots = decode_cache(raw.numpy(), fmt, page_size)
        dev = raw.to(device)
        return dev[:, : page_size * 584].view(pages, page_size, 584), slots
    return cache.to(device), decode_cache(cache.numpy(), fmt)


def make_list(gen, batch, q_len, k, n_slots, holes, runs):
    idx = torch.randint(0, n_slots, (batch, q_len, k), generator=gen)
    dup = torch.rand(idx.shape, generator=gen) < 0.2
    if k > 1:
        earlier = (torch.rand(idx.shape, generator=gen) * torch.arange(k)).long()
        idx = torch.where(dup, torch.gather(idx, 2, earlier), idx)
    idx = torch.where(torch.rand(idx.shape, generator=gen) < holes, -1, idx)
    if runs and k > 4:
        idx[..., k // 4 : k // 2] = -1  # a run of -1
    return idx.int()


def make_lengths(gen, kind, batch, q_len, k):
    if kind == "none":
        return None
    shape = (batch,) if kind == "sequence" else (batch, q_len)
    return torch.randint(0, k + 3, shape, generator=gen).int()  # past k: the whole list


def to_numpy(t):
    return None if t is None else t.cpu().numpy()


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_v4_matches_reference(data):
    fmt = data.draw(st.sampled_from(FORMATS), label="format")
    heads = data.draw(st.sampled_from([1, 3, 8, 16, 24, 37, 64, 128]), label="heads")
    q_len = data.draw(st.integers(1, 4), label="q_len")
    batch = data.draw(st.integers(1, 3), label="batch")
    topk = data.draw(st.one_of(st.integers(1, 40), st.integers(41, 300)), label="topk")
    extra_topk = data.draw(st.sampled_from([0, 0, 5, 128, 150]), label="extra_topk")
    page_size = data.draw(st.sampled_from([1, 2, 64, 256]), label="page_size")
    extra_page = data.draw(st.sampled_from([2, 64]), label="extra_page")
    sink_kind = data.draw(st.sampled_from(["none", "finite", "+inf", "-inf", "mixed"]))
    # bfloat16 q: fp8 tiles hold value x scale; float16 q: they hold the values, scales apart
    # (a 16-bit cache is in q's dtype: make_cache writes bfloat16)
    dtype = (
        "bfloat16"
        if fmt == "v4_bf16"
        else data.draw(st.sampled_from(["bfloat16", "bfloat16", "float16"]))
    )
    seed = data.draw(SEEDS)
    gen = torch.Generator().manual_seed(seed)
    pages = -(-max(topk, 8) // page_size) + 1
    cache, slots = make_cache(fmt, pages, page_size, gen)
    holes = data.draw(st.sampled_from([0.0, 0.2, 1.0]), label="holes")
    indices = make_list(gen, batch, q_len, topk, len(slots), holes, data.draw(st.booleans()))
    lengths = make_lengths(
        gen, data.draw(st.sampled_from(["none", "sequence", "row"])), batch, q_len, topk
    )
    lists = [(slots, indices.numpy(), to_numpy(lengths))]
    kwargs = {"topk_length": None if lengths is None else lengths.cuda()}
    if extra_topk:
        extra_pages = -(-extra_topk // extra_page) + 1
        extra_cache, extra_slots = make_cache(fmt, extra_pages, extra_page, gen)
        extra_idx = make_list(gen, batch, q_len, extra_topk, len(extra_slots), holes, False)
        extra_len = make_lengths(
            gen, data.draw(st.sampled_from(["none", "sequence", "row"])), batch, q_len, extra_topk
        )
        lists.append((extra_slots, extra_idx.numpy(), to_numpy(extra_len)))
        kwargs.update(
            extra_kv_cache=extra_cache,
            extra_indices=extra_idx.cuda(),
            extra_topk_length=None if extra_len is None else extra_len.cuda(),
        )
    sink = {
        "none": None,
        "finite": torch.randn(heads, generator=gen) * 3,
        "+inf": torch.full((heads,), float("inf")),
        "-inf": torch.full((heads,), float("-inf")),
        "mixed": torch.where(
            torch.arange(heads) % 2 == 0, float("inf"), torch.randn(heads, generator=gen)
        ),
    }[sink_kind]
    kwargs["attn_sink"] = None if sink is None else sink.cuda()
    q = torch.randn(batch, q_len, heads, 512, generator=gen).to(getattr(torch, dtype))
    scale = 512**-0.5
    out = torch.full((batch, q_len, heads, 512), float("nan"), dtype=q.dtype, device="cuda")
    lse = torch.full((batch, q_len, heads), float("nan"), device="cuda")
    kgen.mla.sparse_attention(q.cuda(), cache, indices.cuda(), out=out, lse=lse, **kwargs)
    torch.cuda.synchronize()
    want = v4_reference(q.double().numpy(), lists, scale, to_numpy(sink))
    check_attention(out.double().cpu().numpy(), lse.double().cpu().numpy(), *want, dtype)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("splits", [1, 5])
def test_nan_rows_listed_and_not(fmt, splits):
    """A NaN in a cache row no list points at changes nothing; a NaN in a listed row makes the
    query rows that list it NaN (out and lse), the others unchanged."""
    gen = torch.Generator().manual_seed(3)
    spec = SparseSpec(heads=16, q_len=2, topk=100, kv_format=fmt, page_size=64)
    cache, slots = make_cache(fmt, 4, 64, gen)
    indices = make_list(gen, 2, 2, 100, 200, 0.1, False)  # slots 200.. never listed
    indices[0, 1, 7] = 150
    indices[indices == 150] = -1
    indices[0, 1, 7] = 150  # only query row (0, 1) lists slot 150
    config = default_sparse_config(spec, "native", batch=2)
    kernel = build_sparse(spec, replace(config, kv_splits=splits), "native")
    runner = SparseRunner(kernel, 2, torch.device("cuda", 0))
    q = torch.randn(2, 2, 16, 512, generator=gen).bfloat16().cuda()
    before = [t.clone() for t in runner.run(q, cache, indices.cuda())]
    if fmt == "v4_bf16":
        cache.view(-1, 512)[220] = float("nan")
        cache.view(-1, 512)[150, 5] = float("nan")
    elif fmt == "v41_fp8":
        cache.view(-1, 528)[220] = 0xFF  # NaN values and NaN scales
        cache.view(-1, 528)[150, 5] = 0x7F  # e4m3 NaN
    else:  # the payload row of slot s: page s // 64, bytes (s % 64) x 576 on
        raw = torch.as_strided(cache, (4, cache.stride(0)), (cache.stride(0), 1))
        raw[220 // 64, (220 % 64) * 576 : (220 % 64 + 1) * 576] = 0x7F
        raw[150 // 64, (150 % 64) * 576 + 5] = 0x7F
    out, lse = runner.run(q, cache, indices.cuda())
    torch.cuda.synchronize()
    assert torch.isnan(out[0, 1]).all() and torch.isnan(lse[0, 1]).all()
    keep = torch.ones(2, 2, dtype=torch.bool)
    keep[0, 1] = False
    assert torch.equal(out[keep], before[0][keep]) and torch.equal(lse[keep], before[1][keep])
