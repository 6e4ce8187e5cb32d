"""Draft-tree decode of a DeepSeek-V3 attention layer from `transformers`, with kgen on a paged
latent cache, checked against the layer's own eager forward.

The layer (randomly initialised, small but with DeepSeek-V3's latent dims: 512 + 64) keeps
its weights; kgen runs the "absorbed" form a serving engine uses at decode time:

  cache row of token j:  [c_j, k_rope_j]    c_j = RMSNorm(W_DKV h_j), k_rope_j = RoPE(W_KR h_j)
  query of head h:       [W_UK[h]^T q_nope[h], q_rope[h]]   (W_UK: the key half of kv_b_proj)
  kgen:                  o[h] = sum_j softmax(scale * q . row_j) c_j    (the latent output)
  layer output:          o_proj(concat_h W_UV[h] o[h])                  (W_UV: the value half)

The reference runs the module's forward over each whole sequence (prefix and draft tokens) with
an additive mask that lets draft t see the prefix and its ancestors in the draft tree, and keeps
the draft rows. With kv_format="fp8_tensor" the cache is e4m3 under one float32 k_scale (vLLM's
and SGLang's kv_cache_dtype=fp8): the rows are quantized once written, with the scale taken from
them here (an engine calibrates it ahead). Run it: python examples/deepseek_v3_decode.py (needs a
GPU and transformers).
"""

from __future__ import annotations

import torch
from transformers import DeepseekV3Config
from transformers.models.deepseek_v3 import modeling_deepseek_v3 as deepseek

import kgen

PAGE_SIZE = 16


def small_config() -> DeepseekV3Config:
    config = DeepseekV3Config(
        hidden_size=256,
        num_attention_heads=8,
        num_key_value_heads=8,
        q_lora_rank=96,
        kv_lora_rank=512,
        qk_rope_head_dim=64,
        qk_nope_head_dim=32,
        v_head_dim=32,
        attention_bias=False,
    )
    config._attn_implementation = "eager"
    return config


class AbsorbedLayer:
    """A DeepseekV3Attention's weights in the absorbed form, decoding with kgen."""

    def __init__(self, attn: deepseek.DeepseekV3Attention, rotary, dtype: torch.dtype):
        self.attn, self.rotary, self.dtype = attn, rotary, dtype
        config = attn.config
        self.heads, self.latent = config.num_attention_heads, config.kv_lora_rank
        self.nope, self.rope, self.v_dim = (
            config.qk_nope_head_dim,
            config.qk_rope_head_dim,
            config.v_head_dim,
        )
        w = attn.kv_b_proj.weight.view(self.heads, self.nope + self.v_dim, self.latent)
        self.w_uk, self.w_uv = w[:, : self.nope], w[:, self.nope :]  # [H, nope|v, latent]

    def _rope(self, q_rope, k_rope, positions):
        """RoPE as the layer applies it: q_rope [1, H, n, r], k_rope [1, 1, n, r]."""
        cos, sin = self.rotary(k_rope, positions[None])
        if self.attn.config.rope_interleave:
            return deepseek.apply_rotary_pos_emb_interleave(q_rope, k_rope, cos, sin)
        return deepseek.apply_rotary_pos_emb(q_rope, k_rope, cos, sin)

    def cache_rows(self, hidden, positions):
        """[n, latent + rope]: what the paged cache holds for tokens `hidden` [n, hidden]."""
        latent, k_rope = self.attn.kv_a_proj_with_mqa(hidden).split([self.latent, self.rope], -1)
        q_dummy = k_rope.new_zeros(1, 1, *k_rope.shape)
        _, k_rope = self._rope(q_dummy, k_rope[None, None], positions)
        return torch.cat([self.attn.kv_a_layernorm(latent), k_rope[0, 0]], -1).to(self.dtype)

    def queries(self, hidden, positions):
        """[n, H, latent + rope]: the absorbed queries of tokens `hidden` [n, hidden]."""
        a = self.attn
        q = a.q_b_proj(a.q_a_layernorm(a.q_a_proj(hidden))).view(len(hidden), self.heads, -1)
        q_nope, q_rope = q.split([self.nope, self.rope], -1)
        k_dummy = q_rope.new_zeros(1, 1, len(hidden), self.rope)
        q_rope, _ = self._rope(q_rope.transpose(0, 1)[None], k_dummy, positions)
        q_latent = torch.einsum("nhd,hdc->nhc", q_nope, self.w_uk)
        return torch.cat([q_latent, q_rope[0].transpose(0, 1)], -1).to(self.dtype)

    def output(self, latent_out):
        """o_proj of the heads' values: latent_out [B, T, H, latent] -> [B, T, hidden]."""
        values = torch.einsum("bthc,hvc->bthv", latent_out.float(), self.w_uv)
        return self.attn.o_proj(values.flatten(2))


def tree_mask(q_len: int) -> torch.Tensor:
    """A draft tree's ancestor-or-self mask: draft t's parent is draft (t - 1) // 2."""
    mask = torch.eye(q_len, dtype=torch.bool)
    for t in range(1, q_len):
        mask[t] |= mask[(t - 1) // 2]
    return mask


def reference(attn, rotary, hidden, tree):
    """The layer's eager forward over one whole sequence (prefix, then the drafts of `tree`);
    the draft rows [T, hidden]."""
    n, q_len = hidden.shape[0], tree.shape[0]
    visible = torch.ones(n, n, dtype=torch.bool, device=hidden.device).tril()
    visible[n - q_len :, n - q_len :] = tree
    mask = torch.zeros(1, 1, n, n, device=hidden.device).masked_fill(~visible, float("-inf"))
    positions = torch.arange(n, device=hidden.device)[None]
    cos, sin = rotary(hidden[None], positions)
    out, _ = attn(hidden_states=hidden[None], position_embeddings=(cos, sin), attention_mask=mask)
    return out[0, n - q_len :]


def decode_step(
    prefixes=(37, 70), q_len: int = 4, dtype=torch.bfloat16, seed: int = 0, kv_format="dtype"
):
    """One verify step of len(prefixes) sequences, the cache in q's dtype or an fp8 format of
    kgen.mla.kv_format ("fp8_tensor"); returns (kgen's draft rows, the reference's), each
    [B, T, hidden]."""
    torch.manual_seed(seed)
    device = torch.device("cuda")
    config = small_config()
    attn = deepseek.DeepseekV3Attention(config, layer_idx=0).to(device).eval()
    rotary = deepseek.DeepseekV3RotaryEmbedding(config=config).to(device)
    layer = AbsorbedLayer(attn, rotary, dtype)
    tree = tree_mask(q_len).to(device)

    lengths = [p + q_len for p in prefixes]
    width = max(-(-n // PAGE_SIZE) for n in lengths)
    pages = torch.randperm(len(prefixes) * width, device=device).view(len(prefixes), width)
    kv_cache = torch.zeros(pages.numel(), PAGE_SIZE, layer.latent + layer.rope, device=device)
    kv_cache = kv_cache.to(dtype)
    q = torch.empty(len(prefixes), q_len, layer.heads, layer.latent + layer.rope, device=device)
    q = q.to(dtype)
    hiddens = [torch.randn(n, config.hidden_size, device=device) for n in lengths]
    with torch.no_grad():
        for b, (hidden, n) in enumerate(zip(hiddens, lengths, strict=True)):
            positions = torch.arange(n, device=device)
            rows = layer.cache_rows(hidden, positions)  # written page by page, as an engine does
            for i in range(0, n, PAGE_SIZE):
                kv_cache[pages[b, i // PAGE_SIZE], : len(rows[i : i + PAGE_SIZE])] = rows[
                    i : i + PAGE_SIZE
                ]
            q[b] = layer.queries(hidden[n - q_len :], positions[n - q_len :])

        extra = {}
        if kv_format == "fp8_tensor":
            k_scale = kgen.mla.tensor_scale(kv_cache).reshape(1)
            kv_cache = kgen.mla.quantize_fp8(kv_cache, kv_format, scale=k_scale)
            extra = {"k_scale": k_scale}
        spec = kgen.mla.spec_for(q, kv_cache, tree, latent_dim=layer.latent)
        runner = kgen.mla.plan(spec, len(prefixes), width, scale=attn.scaling)
        seq_lens = torch.tensor(lengths, dtype=torch.int32, device=device)
        latent_out, _ = runner.run(
            q, kv_cache, pages.to(torch.int32), seq_lens, kgen.mla.pack_tree_mask(tree), **extra
        )
        got = layer.output(latent_out)
        expected = torch.stack([reference(attn, rotary, h, tree) for h in hiddens])
    return got, expected


def relative_error(got, expected) -> float:
    return float((got - expected).norm() / expected.norm())


if __name__ == "__main__":
    runs = [(torch.float32, "dtype"), (torch.bfloat16, "dtype"), (torch.bfloat16, "fp8_tensor")]
    for dtype, kv_format in runs:
        got, expected = decode_step(dtype=dtype, kv_format=kv_format)
        error = relative_error(got, expected)
        print(f"{dtype}, cache {kv_format}: relative error of the layer output {error:.2e}")
