"""One DeepSeek-V4-style attention decode step with MTP verification, run by kgen over fp8 caches in
DeepSeek-V4's 584-byte layout, checked against a float64 computation from the caches' values.

A small layer with random weights (H heads, hidden size 256) and DeepSeek-V4's attention shapes:
every token has one 512-wide key-value vector (448 dims + 64 RoPE dims; K = V), and each query
row attends, under one softmax, over two lists of two caches:

  main cache     compressed tokens (one per COMPRESS consecutive tokens, their mean), fp8 v4_fp8,
                 pages of 256; the list: the top-k of them a random-weight indexer scores highest
                 among those the row can see (top-k = TOPK; fewer for a short sequence)
  extra cache    the raw tokens of a sliding window, fp8 v4_fp8, pages of 64 in a ring of
                 WINDOW_PAGES per sequence; the list: the last WINDOW tokens up to the row's own
  sink           one float32 logit per head: out *= 1 / (1 + exp(sink - lse))

T = 3 query rows per sequence (the last committed token and two MTP draft tokens, all already in
the caches), each with its own lists and its own valid lengths (int32 [B, T]: a row near the
start of a sequence sees fewer compressed and window tokens). Past its length a row's list holds
stale slots, as a reused buffer does; only the first `length` entries count. The attention output
goes through an output projection to the layer's output.

The check: the same attention in float64 from kgen.mla.dequantize_fp8 of the two caches (the
values the fp8 bytes hold), written out below row by row, and the layer output from it.

Run it: python examples/deepseek_v4_decode.py (needs a GPU; only kgen and torch).
"""

from __future__ import annotations

import torch

import kgen

HIDDEN, DIM, ROPE = 256, 512, 64  # 448 dims + 64 RoPE dims, one vector for K and V
COMPRESS, TOPK = 4, 256  # one compressed token per 4 tokens; the main list's entries
WINDOW, WINDOW_PAGE, WINDOW_PAGES = 128, 64, 3  # the window list; its ring of pages
MAIN_PAGE = 256
INDEX_HEADS, INDEX_DIM = 4, 64  # the indexer that picks the top-k


def rope(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Rotary embedding of the last ROPE dims of x [..., n, DIM] at `positions` [n]."""
    half = ROPE // 2
    freq = 10000.0 ** (-torch.arange(half, device=x.device, dtype=torch.float32) / half)
    angle = positions.float()[:, None] * freq  # [n, half]
    cos, sin = angle.cos(), angle.sin()
    a, b = x[..., DIM - ROPE : DIM - half], x[..., DIM - half :]
    return torch.cat((x[..., : DIM - ROPE], a * cos - b * sin, a * sin + b * cos), dim=-1)


def rms_norm(x: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


class Layer:
    """Random weights: q and kv projections, the indexer, the sink, the output projection."""

    def __init__(self, heads: int, gen: torch.Generator, device):
        def weight(*shape):
            return (torch.randn(*shape, generator=gen) / shape[0] ** 0.5).to(device)

        self.heads = heads
        self.w_q, self.w_kv = weight(HIDDEN, heads * DIM), weight(HIDDEN, DIM)
        self.w_iq = weight(HIDDEN, INDEX_HEADS * INDEX_DIM)
        self.w_ik, self.w_iw = weight(DIM, INDEX_DIM), weight(HIDDEN, INDEX_HEADS)
        # float32 [H], about as large as the rows' lse (4 to 7 here), so that it matters
        self.sink = (torch.randn(heads, generator=gen) * 2 + 5).to(device)
        self.w_o = weight(heads * DIM, HIDDEN)

    def kv(self, hidden, positions):
        """[n, DIM]: the key-value vector of each token."""
        return rope(rms_norm(hidden @ self.w_kv), positions)

    def queries(self, hidden, positions):
        """[n, H, DIM]."""
        q = (hidden @ self.w_q).view(len(hidden), self.heads, DIM)
        return rope(q.transpose(0, 1), positions).transpose(0, 1)

    def index_scores(self, hidden, compressed):
        """[n, C]: how much each of n query tokens wants each compressed token (DeepSeek's
        lightning indexer: per index head relu(q . k), weighted per token)."""
        q = (hidden @ self.w_iq).view(len(hidden), INDEX_HEADS, INDEX_DIM)
        k = compressed @ self.w_ik  # [C, INDEX_DIM]
        return torch.einsum("nh,nhc->nc", hidden @ self.w_iw, torch.relu(q @ k.T))


class Caches:
    """Two paged caches as a serving engine keeps them, with the slots of every token."""

    def __init__(self, seq_lens, gen, device):
        batch = len(seq_lens)
        compressed = [n // COMPRESS for n in seq_lens]
        main_pages = [max(1, -(-c // MAIN_PAGE)) for c in compressed]
        # one spare page beyond the sequences': the stale slots past a row's length point there
        order = torch.randperm(sum(main_pages) + 1, generator=gen).tolist()
        self.main_tables, start = [], 0
        for pages in main_pages:
            self.main_tables.append(order[start : start + pages])
            start += pages
        self.spare_page = order[start]
        self.main_pages = start + 1
        self.window_pages = batch * WINDOW_PAGES
        order = torch.randperm(self.window_pages, generator=gen).view(batch, WINDOW_PAGES)
        self.window_tables = order.tolist()
        self.device = device

    def main_slot(self, b: int, i: int) -> int:
        """The slot of compressed token i of sequence b."""
        return self.main_tables[b][i // MAIN_PAGE] * MAIN_PAGE + i % MAIN_PAGE

    def window_slot(self, b: int, position: int) -> int:
        """The slot of token `position` of sequence b: a ring of WINDOW_PAGES pages."""
        ring = position % (WINDOW_PAGE * WINDOW_PAGES)
        return self.window_tables[b][ring // WINDOW_PAGE] * WINDOW_PAGE + ring % WINDOW_PAGE


def decode_step(
    seq_lens=(1500, 700, 50), heads: int = 16, q_len: int = 3, seed: int = 0, device="cuda"
):
    """One verify step of len(seq_lens) sequences whose last q_len tokens are the query rows.
    Returns {"kgen": (out, lse, layer output), "reference": (the same in float64), "inputs":
    the reference's arguments}; out [B, T, H, 512], lse [B, T, H], layer output [B, T, HIDDEN].
    `device`: where the caches are made (kgen's call needs CUDA)."""
    device = torch.device(device)
    gen = torch.Generator().manual_seed(seed)
    layer = Layer(heads, gen, device)
    caches = Caches(seq_lens, gen, device)
    batch = len(seq_lens)
    # every cache slot starts as noise no list may reach (a spare page, unwritten ring slots)
    main = torch.randn(caches.main_pages, MAIN_PAGE, DIM, generator=gen).to(device)
    window = torch.randn(caches.window_pages, WINDOW_PAGE, DIM, generator=gen).to(device)
    q = torch.empty(batch, q_len, heads, DIM, device=device)
    idx = torch.empty(batch, q_len, TOPK, dtype=torch.int32)
    win_idx = torch.empty(batch, q_len, WINDOW, dtype=torch.int32)
    idx_len = torch.empty(batch, q_len, dtype=torch.int32)
    win_len = torch.empty(batch, q_len, dtype=torch.int32)
    spare = torch.randint(0, MAIN_PAGE, (TOPK,), generator=gen) + caches.spare_page * MAIN_PAGE
    for b, n in enumerate(seq_lens):
        hidden = torch.randn(n, HIDDEN, generator=gen).to(device)
        positions = torch.arange(n, device=device)
        kv = layer.kv(hidden, positions)  # [n, DIM]
        blocks = n // COMPRESS
        compressed = kv[: blocks * COMPRESS].view(blocks, COMPRESS, DIM).mean(1)
        main.view(-1, DIM)[[caches.main_slot(b, i) for i in range(blocks)]] = compressed
        recent = range(max(0, n - WINDOW - q_len), n)  # what the ring holds
        window.view(-1, DIM)[[caches.window_slot(b, p) for p in recent]] = kv[recent.start :]
        rows = hidden[n - q_len :]
        q[b] = layer.queries(rows, positions[n - q_len :])
        scores = layer.index_scores(rows, compressed).cpu()  # [T, blocks]
        for t in range(q_len):
            position = n - q_len + t
            seen = (position + 1) // COMPRESS  # complete blocks up to the row's own token
            picked = scores[t, :seen].topk(min(TOPK, seen)).indices.tolist()
            idx[b, t] = spare.int()  # stale slots past the length
            idx[b, t, : len(picked)] = torch.tensor([caches.main_slot(b, i) for i in picked])
            idx_len[b, t] = len(picked)
            recent = range(max(0, position + 1 - WINDOW), position + 1)
            win_idx[b, t] = -1
            win_idx[b, t, : len(recent)] = torch.tensor([caches.window_slot(b, p) for p in recent])
            win_len[b, t] = len(recent)
    q = q.bfloat16()
    main8 = kgen.mla.quantize_fp8(main, format="v4_fp8")  # [pages, 256, 584], padded pages
    window8 = kgen.mla.quantize_fp8(window, format="v4_fp8")  # [pages, 64, 584]
    lists = dict(
        topk_length=idx_len.to(device),
        extra_kv_cache=window8,
        extra_indices=win_idx.to(device),
        extra_topk_length=win_len.to(device),
    )
    out, lse = kgen.mla.sparse_attention(q, main8, idx.to(device), attn_sink=layer.sink, **lists)
    got = (out, lse, out.float().flatten(2) @ layer.w_o)

    inputs = dict(
        q=q.double(),
        slots=(
            kgen.mla.dequantize_fp8(main8, "v4_fp8").double().view(-1, DIM),
            kgen.mla.dequantize_fp8(window8, "v4_fp8").double().view(-1, DIM),
        ),
        lists=(idx, win_idx),
        lengths=(idx_len, win_len),
        sink=layer.sink.double(),
        scale=DIM**-0.5,
    )
    ref_out, ref_lse = reference(**inputs)
    ref_layer = ref_out.flatten(2) @ layer.w_o.double()
    return {"kgen": got, "reference": (ref_out, ref_lse, ref_layer), "inputs": inputs}


def reference(q, slots, lists, lengths, sink, scale):
    """float64 out [B, T, H, DIM] and lse [B, T, H] (without the sink): each query row's softmax
    over the first `length` entries of each of its two lists (-1 skipped), of the cache rows
    `slots` (one float64 [slots, DIM] per cache); out scaled by 1 / (1 + exp(sink - lse))."""
    batch, q_len, heads, _ = q.shape
    out = torch.zeros(batch, q_len, heads, DIM, dtype=torch.float64, device=q.device)
    lse = torch.full((batch, q_len, heads), float("-inf"), dtype=torch.float64, device=q.device)
    for b in range(batch):
        for t in range(q_len):
            keys = []
            for cache, listed, length in zip(slots, lists, lengths, strict=True):
                row = listed[b, t, : int(length[b, t])]
                keys.append(cache[row[row >= 0].long().to(cache.device)])
            k = torch.cat(keys)  # [n, DIM]: K and V
            if len(k) == 0:
                continue
            logits = scale * q[b, t] @ k.T  # [H, n]
            lse[b, t] = torch.logsumexp(logits, dim=-1)
            p = torch.exp(logits - lse[b, t, :, None])
            out[b, t] = (p @ k) / (1 + torch.exp(sink - lse[b, t]))[:, None]
    return out, lse


def relative_error(got, expected) -> float:
    return float((got.double() - expected).norm() / expected.norm())


if __name__ == "__main__":
    result = decode_step()
    (out, lse, layer_out), (ref_out, ref_lse, ref_layer) = result["kgen"], result["reference"]
    print(f"attention output: relative error {relative_error(out, ref_out):.2e}")
    print(f"lse: largest difference {float((lse.double() - ref_lse).abs().max()):.2e}")
    print(f"layer output: relative error {relative_error(layer_out, ref_layer):.2e}")
