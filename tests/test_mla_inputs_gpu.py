"""Bad tensors get an error that names the tensor and what was expected; nothing is launched."""

import pytest

from kgen.mla import Config, Spec, attention, build
from kgen.mla.inputs import InputError
from kgen.mla.workload import make_workload

pytestmark = pytest.mark.gpu
SPEC = Spec(heads=4, q_len=2, dtype="bfloat16", page_size=16, mask="tree")


@pytest.fixture
def case():
    return build(SPEC, Config(heads_per_block=2, vec_width=8), "native"), make_workload(
        SPEC, [20, 33]
    )


def call(kernel, w, **changes):
    args = {
        "q": w.q,
        "kv_cache": w.kv_cache,
        "block_table": w.block_table,
        "seq_lens": w.seq_lens,
        "mask": w.mask,
        **changes,
    }
    return kernel(args["q"], args["kv_cache"], args["block_table"], args["seq_lens"], args["mask"])


@pytest.mark.parametrize(
    "name, change, message",
    [
        ("q", lambda w: w.q.float(), r"q: expected dtype torch.bfloat16"),
        ("q", lambda w: w.q[:, :1], r"q: expected shape \[2, 2, 4, 576\]"),
        ("q", lambda w: w.q.cpu(), r"q: expected a CUDA tensor"),
        (
            "q",
            lambda w: w.q.new_empty(w.q.numel() + 4)[4:].view(w.q.shape),
            r"q: .*aligned to 16 bytes",
        ),
        (
            "q",
            lambda w: w.q.transpose(2, 3).contiguous().transpose(2, 3),
            r"q: expected a contiguous last",
        ),
        (
            "kv_cache",
            lambda w: w.kv_cache[:, :8],
            r"kv_cache: expected shape \[num_pages, 16, 576\]",
        ),
        ("kv_cache", lambda w: w.kv_cache.half(), r"kv_cache: expected dtype torch.bfloat16"),
        (
            "kv_cache",
            lambda w: w.kv_cache.new_empty(w.kv_cache.shape[0], 16, 580)[..., :576],
            r"kv_cache: expected strides that are multiples of 8 elements",
        ),
        ("block_table", lambda w: w.block_table.long(), r"block_table: expected dtype torch.int32"),
        ("block_table", lambda w: w.block_table[:1], r"block_table: expected batch 2"),
        ("seq_lens", lambda w: w.seq_lens[:1], r"seq_lens: expected batch 2"),
        ("mask", lambda w: None, r"mask: expected a tree mask"),
        ("mask", lambda w: w.mask[:, :1], r"mask: expected bool shape"),
        ("mask", lambda w: w.mask.float(), r"mask: expected dtype bool"),
    ],
)
def test_bad_tensor_is_named(case, name, change, message, monkeypatch):
    import kgen.launch

    kernel, w = case
    bad = change(w)
    launched = []

    class Driver:  # kgen.launch's cuda.bindings.driver, its kernel launches recorded
        def __getattr__(self, attr):
            found = getattr(real, attr)
            if attr.startswith("cuLaunchKernel"):
                return lambda *args: launched.append(attr) or found(*args)
            return found

    real = kgen.launch.driver
    monkeypatch.setattr(kgen.launch, "driver", Driver())
    call(kernel, w)  # (the recording sees a good call's launches)
    assert launched
    launched.clear()
    with pytest.raises(InputError, match=message):
        call(kernel, w, **{name: bad})
    assert launched == []


def test_packed_and_broadcast_masks_agree(case):
    import torch

    from kgen.mla.inputs import pack_tree_mask

    kernel, w = case
    dense = kernel(*w.args())
    packed = kernel(w.q, w.kv_cache, w.block_table, w.seq_lens, pack_tree_mask(w.mask), w.scale)
    assert torch.equal(dense[0], packed[0])
    shared = w.mask[0]
    one = kernel(w.q, w.kv_cache, w.block_table, w.seq_lens, shared, w.scale)
    both = kernel(
        w.q, w.kv_cache, w.block_table, w.seq_lens, shared.expand(2, 2, 2).contiguous(), w.scale
    )
    assert torch.equal(one[0], both[0])
    # bool masks with other strides (an expanded or a transposed view): the same results
    strided = kernel(w.q, w.kv_cache, w.block_table, w.seq_lens, shared.expand(2, 2, 2), w.scale)
    assert torch.equal(one[0], strided[0]) and torch.equal(one[1], strided[1])
    flipped = w.mask.transpose(1, 2).contiguous().transpose(1, 2)  # same values, other strides
    assert not flipped.is_contiguous()
    other = kernel(w.q, w.kv_cache, w.block_table, w.seq_lens, flipped, w.scale)
    assert torch.equal(dense[0], other[0]) and torch.equal(dense[1], other[1])


def test_attention_needs_a_mask_for_several_tokens(case):
    _, w = case
    with pytest.raises(InputError, match="mask"):
        attention(w.q, w.kv_cache, w.block_table, w.seq_lens)


def test_kernel_for_another_arch_is_refused(case):
    import torch

    _, w = case
    major, _ = torch.cuda.get_device_capability()
    other = build(SPEC, Config(heads_per_block=2), "sm_120" if major != 12 else "sm_90")
    with pytest.raises(ValueError, match="built for"):
        other(*w.args())
