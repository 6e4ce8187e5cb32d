"""MLA variants without a GPU: every sampled valid config renders and compiles for sm_120 and
sm_90; invalid ones are refused before compiling, with the field and the reason."""

import contextlib
import re
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kgen.build
import kgen.render
from kgen.arch import ARCHS, resolve_arch
from kgen.mla import Config, ConfigError, Spec, build, layout_for, workspace
from kgen.mla.heuristic import default_config
from kgen.mla.mma_layout import three_row_config
from kgen.mla.program import mla_program
from kgen.mla.rules import DENSE, broken_rule
from kgen.mla.spec import head_groups_of
from kgen.mla.tiled_layout import tiled_config
from kgen.params import ParamError
from kgen.resources import cubin_arch
from kgen.sass import cuobjdump, disassemble, opcode_counts

from .strategies import configs, raw_configs, specs

INTERFACE_SPEC = Spec(
    heads=8, q_len=4, latent_dim=512, rope_dim=64, dtype="bfloat16", page_size=64, mask="tree"
)
INTERFACE_CONFIG = Config(
    heads_per_block=8, kv_splits=16, vec_width=8, smem_stages=2, num_warps=4, block_n=32
)
MMA = Config(heads_per_block=8, compute="mma", num_warps=4, col_groups=4, block_n=16, smem_stages=2)
# warps in two roles (body='specialized'): 8 warps, 4 column groups per role, the split softmax
WS = replace(
    MMA,
    heads_per_block=8,
    num_warps=8,
    col_groups=4,
    smem_stages=3,
    softmax="split",
    body="specialized",
)


def test_interface_example_builds_without_a_gpu():
    kernel = build(INTERFACE_SPEC, INTERFACE_CONFIG, arch="sm_120")
    assert "constexpr int HEADS_PER_BLOCK = 8;" in kernel.source
    assert cubin_arch(kernel.cubin) == "sm_120"
    res = kernel.resources
    assert res.arch == "sm_120" and res.registers > 0 and res.threads == 128
    assert res.dynamic_smem == 2 * 32 * 576 * 2 and res.smem <= ARCHS["sm_120"].smem_per_block
    assert 0 < res.occupancy.fraction <= 1


@settings(max_examples=6)
@given(data=st.data())
def test_valid_configs_compile_for_sm120_and_sm90(data):
    spec = data.draw(specs(max_q_len=64, small_dims=True), label="spec")
    config = data.draw(configs(spec, ARCHS["sm_120"]), label="config")
    for arch in ("sm_120", "sm_90"):
        kernel = build(spec, config, arch=arch)
        assert cubin_arch(kernel.cubin) == arch
        assert kernel.resources.occupancy.blocks_per_sm >= 1, kernel.resources


@settings(max_examples=200)
@given(data=st.data())
def test_invalid_configs_are_refused_before_compiling(data):
    spec = data.draw(specs(max_q_len=64), label="spec")
    config = data.draw(raw_configs(spec), label="config")
    arch = ARCHS["sm_120"]
    try:
        layout = layout_for(spec, config, arch)
    except ConfigError as err:
        assert str(err).startswith("Config.")
        with compiler_disabled(), pytest.raises(ConfigError):
            build(spec, config, arch="sm_120")  # refused before the compiler is reached
    else:  # what no accepted layout may break, checked here and not by the layout's own code
        ragged = spec.heads % config.heads_per_block  # the mma row path only
        assert config.heads_per_block <= spec.heads
        assert not ragged or config.compute == "mma"
        assert not ragged or config.body == "rows"
        assert layout.threads == 32 * config.num_warps <= arch.max_threads_per_block
        assert layout.dynamic_smem <= arch.smem_per_block


@st.composite
def any_axes(draw, spec: Spec) -> Config:
    """A Config of any values of the axes, each valid on its own, most combinations not."""
    compute = draw(st.sampled_from(["fma", "mma", "tiled"]))
    return Config(
        heads_per_block=draw(st.sampled_from([1, 2, 3, 4, 8, 16, spec.heads])),
        vec_width=draw(st.sampled_from([4, 8])),
        smem_stages=draw(st.integers(0, 5)),
        num_warps=draw(st.sampled_from([1, 2, 4, 8] + [12] * (compute == "mma"))),
        block_n=draw(st.sampled_from([8, 16, 24, 32, 48, 64, 128])),
        compute=compute,
        col_groups=draw(st.sampled_from([1, 2, 4, 4, 8])),
        min_blocks=draw(st.sampled_from([0, 0, 1])),
        qk_ahead=draw(st.sampled_from([0, 0, 1])),
        softmax=draw(st.sampled_from(["warp", "split"])),
        merge=draw(st.sampled_from(["fused", "fused", "pdl"])),
        body=draw(st.sampled_from(["rows", "rows", "specialized"])),
        ring_slack=draw(st.sampled_from([0, 0, 1])),
    )


@settings(max_examples=400)
@given(data=st.data())
def test_build_refuses_by_the_rules_the_sweep_enumerates_by(data):
    """kgen.mla.rules, written once: a config that breaks a rule is refused by layout_for (so by
    build and the heuristic) naming that rule's field and reason, on every arch, unless a spec
    the path cannot take is refused first (compute, vec_width); one that layout_for accepts
    breaks no rule. The sweep enumerates only what the rules allow (test_tune)."""
    spec = data.draw(specs(max_q_len=64), label="spec")
    config = data.draw(any_axes(spec), label="config")
    rule = broken_rule(spec, config, DENSE)
    for arch in ("sm_80", "sm_90", "sm_120"):
        try:
            layout_for(spec, config, ARCHS[arch])
        except ConfigError as err:
            field = re.match(r"Config\.(\w+)=", str(err)).group(1)
            if rule is not None and field not in ("compute", "vec_width"):
                assert field == rule.field and rule.reason.split("{")[0] in str(err), (rule, err)
        else:
            assert rule is None, rule


@contextlib.contextmanager
def compiler_disabled():
    def no_compiling(*args, **kwargs):
        raise AssertionError("an invalid config reached the compiler")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kgen.build, "compile_cubin", no_compiling)
        yield


@pytest.mark.parametrize(
    "spec, config, field, reason",
    [
        (Spec(heads=8), Config(heads_per_block=3), "heads_per_block", "divide heads=8"),
        (Spec(heads=8, dtype="float32"), Config(vec_width=8), "vec_width", "32 bytes"),
        (
            Spec(heads=8, latent_dim=500, rope_dim=76),
            Config(vec_width=8),
            "vec_width",
            "must divide",
        ),
        (Spec(heads=8), Config(vec_width=1, smem_stages=2), "smem_stages", "cp.async"),
        (Spec(heads=8), Config(smem_stages=3, block_n=32), "smem_stages", "101376"),
        (
            Spec(heads=64, q_len=16, mask="tree"),
            Config(heads_per_block=64, num_warps=4),
            "num_warps",
            "per warp",
        ),
        (Spec(heads=8, dtype="float32"), MMA, "compute", "float16 or bfloat16"),
        (Spec(heads=8), replace(MMA, vec_width=4), "vec_width", "16-byte"),
        (Spec(heads=8), replace(MMA, block_n=24), "block_n", "multiple of 16"),
        (Spec(heads=8), replace(MMA, smem_stages=1), "smem_stages", "at least 2"),
        (Spec(heads=8), replace(MMA, col_groups=3), "col_groups", "divide num_warps"),
        (Spec(heads=8), replace(MMA, num_warps=8, col_groups=2), "col_groups", "row groups"),
        (Spec(heads=64), replace(MMA, heads_per_block=64), "heads_per_block", "101376"),
        (Spec(heads=8, latent_dim=40, rope_dim=8), MMA, "compute", "multiples of 16"),
        (Spec(heads=8), replace(MMA, block_n=48), "block_n", "divide the 128 threads"),
        (Spec(heads=8), replace(MMA, min_blocks=13), "min_blocks", "1536 threads per SM"),
        (Spec(heads=8), Config(min_blocks=1), "min_blocks", "'mma' only"),
        (Spec(heads=8), Config(qk_ahead=1), "qk_ahead", "'mma' only"),
        (Spec(heads=8), replace(MMA, qk_ahead=1), "smem_stages", "at least 3 stages"),
        (Spec(heads=8), Config(softmax="split"), "softmax", "'mma' only"),
        (
            Spec(heads=8),
            replace(MMA, col_groups=1, softmax="split"),
            "softmax",
            "col_groups > 1",
        ),
        (
            Spec(heads=8),
            replace(MMA, num_warps=8, block_n=48, softmax="split"),
            "block_n",
            "16, 32 or 64",
        ),
        (Spec(heads=8), Config(merge="pdl"), "merge", "'mma' and 'tiled' only"),
        (Spec(heads=8), Config(body="specialized"), "body", "'mma' only"),
        (Spec(heads=8), replace(WS, softmax="warp"), "softmax", "'split'"),
        (Spec(heads=8), replace(WS, smem_stages=2), "smem_stages", "at least 3 stages"),
        (
            Spec(heads=8, q_len=4, mask="causal"),
            replace(WS, col_groups=2),
            "col_groups",
            "col_groups = num_warps / 2",
        ),
        (Spec(heads=8), replace(WS, qk_ahead=1), "qk_ahead", "take 0"),
        # ragged head groups: the mma row path only
        (Spec(heads=8), Config(heads_per_block=3), "heads_per_block", "must divide heads=8"),
        (Spec(heads=8, dtype="float32"), tiled_config(3, 2), "heads_per_block", "divide heads=8"),
        (Spec(heads=8), replace(WS, heads_per_block=3), "heads_per_block", "body='rows' only"),
        (Spec(heads=8), replace(MMA, heads_per_block=9), "heads_per_block", "at most heads=8"),
    ],
)
def test_refusals_name_field_and_reason(spec, config, field, reason):
    with pytest.raises(ConfigError, match=rf"Config\.{field}=.*{reason}"):
        layout_for(spec, config, ARCHS["sm_120"])


def test_the_pdl_merge_needs_sm90():
    with pytest.raises(ConfigError, match=r"Config\.merge='pdl': .*sm_90 or later"):
        layout_for(Spec(heads=8), replace(MMA, merge="pdl"), ARCHS["sm_80"])


def test_the_pdl_merge_builds_both_kernels_for_sm120_without_spills():
    """merge="pdl": the attention kernel and mla_combine in one cubin; the attention kernel has
    no merge code (so no arrival counters), and both fit sm_120 without spills."""
    config = replace(MMA, smem_stages=3, merge="pdl")
    kernel = build(Spec(heads=8), config, "sm_120")
    fused = build(Spec(heads=8), replace(config, merge="fused"), "sm_120")
    assert kernel.binary.program.entry_points == ("mla_attention", "mla_combine")
    assert fused.binary.program.entry_points == ("mla_attention",)
    assert set(kernel.binary.usage) == {"mla_attention", "mla_combine"}
    for usage in kernel.binary.usage.values():
        assert usage.spill_stores == usage.spill_loads == 0
    assert "mla_combine(" in kernel.source and "mla_combine(" not in fused.source
    assert config.short_name().endswith("_pc") and not fused.config.short_name().endswith("_pc")
    if cuobjdump() is not None:  # (the [sass] extra) the fused merge's counters are atomics
        assert attention_atomics(kernel) == 0 < attention_atomics(fused)


def attention_atomics(kernel) -> int:
    """Atomic instructions in the SASS of a kernel's mla_attention entry."""
    counts = opcode_counts(disassemble(kernel.cubin, "mla_attention"))
    return sum(n for op, n in counts.items() if op.startswith(("ATOM", "RED")))


def test_specialize_builds_for_sm120_without_spills():
    """body="specialized": the two-role kernel entry (mla/mma/specialized.cuh), one row group a
    role, two score buffers; the sm_120 default's shape of it (16 heads, 4 stages, the PDL
    merge) fits sm_120 without spills, and a one-role build of the same tile shape has the other
    entry.
    (Where ptxas chooses the registers, min_blocks 0, it may spill other shapes on sm_120: WS
    itself took 80 registers and 76 B of spill once the grid's x became the head group, 99 and
    none before; compiled_default passes such a candidate over.)"""
    spec = Spec(heads=16, q_len=1, dtype="bfloat16", page_size=64)
    shipped = replace(WS, heads_per_block=16, smem_stages=4, merge="pdl")
    default = default_config(spec, 64, 4096, resolve_arch("sm_120"), 188)
    assert replace(default, kv_splits=1) == shipped
    kernel = build(spec, shipped, "sm_120")
    one_role = build(spec, replace(shipped, body="rows", num_warps=4), "sm_120")
    usage = kernel.binary.usage["mla_attention"]
    assert usage.spill_stores == usage.spill_loads == 0
    assert "hand_off()" in kernel.source and "hand_off()" not in one_role.source
    assert kernel.layout.threads == 256 and kernel.layout.row_groups == 1
    assert kernel.layout.score_bytes > one_role.layout.score_bytes  # double-buffered partials
    assert WS.short_name().endswith("_ss_ws") and shipped.short_name().endswith("_ss_pc_ws")


@settings(max_examples=200)
@given(
    batch=st.integers(1, 256),
    head_groups=st.sampled_from([1, 2, 4, 8, 64, 128]),
    rows=st.integers(1, 1024),
    latent_dim=st.sampled_from([16, 64, 192, 512]),
    splits=st.integers(2, 1024),
)
def test_combine_shape_fits_the_merge_kernel(batch, head_groups, rows, latent_dim, splits):
    """mla_combine reads its column chunks (gridDim.y / ROWS) and slices (blockDim.x / quads)
    back from its launch shape: every shape must cut the row's float4 columns evenly and stay
    within the kernel's __launch_bounds__."""
    source = (kgen.render.template_dir() / "mla/combine_kernel.cuh").read_text()
    for name in ("COMBINE_THREADS", "COMBINE_LOADS"):
        declared = re.search(rf"constexpr int {name} = (\d+);", source).group(1)
        assert int(declared) == getattr(workspace, name)
    grid, block = workspace.combine_shape(batch, head_groups, rows, latent_dim, splits)
    quads = latent_dim // 4
    chunks = grid[1] // rows
    assert grid == (head_groups, rows * chunks, batch) and quads % chunks == 0
    assert grid[1] <= 65535  # (gridDim.y's limit)
    per_block = quads // chunks
    assert block[0] % per_block == 0 and block[1:] == (1, 1)
    slices = block[0] // per_block
    assert slices & (slices - 1) == 0 and slices <= workspace.MAX_COMBINE_SLICES
    assert block[0] <= workspace.COMBINE_THREADS
    assert slices * workspace.COMBINE_LOADS >= splits or slices == workspace.MAX_COMBINE_SLICES


def test_removed_axes_are_refused_and_their_zeros_dropped_with_a_warning():
    """swap_rows, split_reduce and a ring slack past one tile were removed (CHANGELOG.md): a
    value that selects them is a ConfigError saying what to take instead; 0, what every kept
    variant took, is accepted under the old name with a DeprecationWarning."""
    for removed in ({"swap_rows": 1}, {"split_reduce": 1}, {"ring_slack": 2}):
        with pytest.raises(ConfigError, match=r"Config\.\w+=\d: .*removed"):
            replace(MMA, **removed)
        with pytest.raises(ConfigError, match="removed"):
            Config.from_dict({**MMA.to_dict(), **removed})
    with pytest.warns(DeprecationWarning, match="swap_rows was removed"):
        assert replace(MMA, swap_rows=0) == MMA
    with pytest.warns(DeprecationWarning, match="split_reduce was removed"):
        assert Config.from_dict({**MMA.to_dict(), "split_reduce": 0}) == MMA


def test_former_field_names_still_work_for_a_release_with_a_warning():
    """split_softmax, pdl_combine and specialize became softmax, merge and body (CHANGELOG.md):
    Config(...), from_dict(...) and replace(...) take the former names with a DeprecationWarning
    (a former name beside its new field wins, as replace passes both), they read back as 0/1,
    and to_dict() writes the new names; the short name is the same."""
    new = replace(MMA, softmax="split", merge="pdl", body="specialized", num_warps=8)
    former = {"split_softmax": 1, "pdl_combine": 1, "specialize": 1}
    with pytest.warns(DeprecationWarning) as caught:
        old = Config(**{**MMA.to_dict(), "num_warps": 8, **former})
        assert replace(new, pdl_combine=0) == replace(new, merge="fused")
        assert Config.from_dict({"compute": "mma", "specialize": 1}).body == "specialized"
        assert (new.split_softmax, new.pdl_combine, new.specialize) == (1, 1, 1)
    assert "Config.split_softmax is now softmax: split_softmax=1 is softmax='split'" in {
        str(w.message).split(" (")[0] for w in caught
    }
    assert all(w.filename == __file__ for w in caught)  # the line that used the former name
    assert old == new and old.short_name() == new.short_name()
    assert not set(former) & set(new.to_dict())
    with pytest.raises(ParamError, match="split_softmax=2: must be 0 or 1"):
        Config(split_softmax=2)


def test_a_register_estimate_is_no_refusal():
    """Over 255 estimated registers is a pruning hint for the sweep: build still compiles it."""
    spec, config = Spec(heads=8), Config(smem_stages=0, block_n=64)
    layout = layout_for(spec, config, ARCHS["sm_120"])
    assert layout.registers_estimate > ARCHS["sm_120"].max_regs_per_thread
    kernel = build(spec, config, "sm_120")
    (usage,) = kernel.binary.usage.values()
    assert kernel.cubin and 0 < usage.registers <= ARCHS["sm_120"].max_regs_per_thread
    assert "spills" in kernel.resources.summary()  # reported, whatever ptxas made of it


def test_sm90_takes_what_sm120_cannot():
    config = Config(smem_stages=3, block_n=32)
    layout_for(Spec(heads=8), config, ARCHS["sm_90"])  # 110592 bytes fit sm_90's 227 KB


def test_split_count_does_not_change_the_binary():
    a = build(INTERFACE_SPEC, INTERFACE_CONFIG, "sm_120")
    b = build(INTERFACE_SPEC, Config(**{**INTERFACE_CONFIG.to_dict(), "kv_splits": 3}), "sm_120")
    assert a.binary.key == b.binary.key


@pytest.mark.parametrize(
    "config",
    [
        MMA,
        Config(heads_per_block=8, num_warps=4),
        tiled_config(8, smem_stages=2),
    ],
    ids=["mma", "fma", "tiled"],
)
def test_one_row_causal_renders_the_decode_kernel(config):
    """Causal over a single draft row hides nothing: every path renders exactly the mask-'none'
    kernel for it (whose GPU tests cover it; a draft-tile loop would round in another order)."""
    arch = resolve_arch("sm_120")
    dtype = "float32" if config.compute == "tiled" else "float16"
    decode, causal = Spec(heads=8, dtype=dtype), Spec(heads=8, dtype=dtype, mask="causal")
    source = mla_program(decode, config, layout_for(decode, config, arch)).source
    assert mla_program(causal, config, layout_for(causal, config, arch)).source == source
    tree = Spec(heads=8, dtype=dtype, mask="tree")  # a tree row may hide its own draft
    assert mla_program(tree, config, layout_for(tree, config, arch)).source != source


def test_the_tiled_path_takes_the_pdl_merge_from_sm90_on():
    spec = Spec(heads=8, q_len=8, dtype="float32", mask="tree")
    kernel = build(spec, tiled_config(8, smem_stages=2, kv_splits=4, merge="pdl"), "sm_120")
    assert "mla_combine" in kernel.binary.usage and "PDL_COMBINE = true" in kernel.source
    assert kernel.config.short_name().endswith("_tiled_pc")
    with pytest.raises(ConfigError, match="merge"):
        build(spec, tiled_config(8, smem_stages=2, merge="pdl"), "sm_80")
    fused = build(spec, tiled_config(8, smem_stages=2, kv_splits=4), "sm_120")
    assert "mla_combine" not in fused.binary.usage


def test_a_causal_chain_takes_the_registers_of_a_tree():
    """Causal draft bits are computed, a tree's are loaded; the kernel must not be specialised on
    the computed form: for kimi-tp8-verify-batch's shipped config the causal kernel took 227
    registers on sm_90 (two blocks per SM, 1.5x the tree kernel's time) where the tree took 168."""
    config = replace(
        MMA, heads_per_block=2, kv_splits=6, smem_stages=3, softmax="split", merge="pdl"
    )
    tree = Spec(heads=8, q_len=8, dtype="bfloat16", mask="tree")
    tree_usage = build(tree, config, "sm_90").binary.usage["mla_attention"]
    causal_usage = build(replace(tree, mask="causal"), config, "sm_90").binary.usage[
        "mla_attention"
    ]
    assert causal_usage.registers <= tree_usage.registers + 8, (causal_usage, tree_usage)


@pytest.mark.skipif(cuobjdump() is None, reason="needs cuobjdump (the [sass] or [test] extra)")
def test_ring_slack_builds_stage_barriers_for_sm120_without_spills_and_refuses_what_cannot_work():
    """ring_slack: the three-row block's KV tile ring on mbarriers (a full and an empty barrier a
    stage, after the row states), the block barrier at the top of a tile gone; sm_120's
    verification shape of it (H = 64, 16 draft tokens, 3 heads a block, 4 stages) fits sm_120
    without spills; ring_slack 0 renders none of it. Refused: the other loops (specialized
    roles, q.K ahead) and a copy lead under one tile."""
    spec = Spec(heads=64, q_len=16, dtype="bfloat16", page_size=64, mask="tree")
    lockstep = three_row_config(3, smem_stages=4, min_blocks=1, softmax="split", merge="pdl")
    for slack in (1,):
        config = replace(lockstep, ring_slack=slack)
        kernel = build(spec, config, "sm_120")
        usage = kernel.binary.usage["mla_attention"]
        assert usage.spill_stores == usage.spill_loads == 0, (slack, usage)
        assert kernel.resources.smem <= ARCHS["sm_120"].smem_per_block
        assert kernel.layout.ring_bytes == 64  # 2 x 4 stages x 8 bytes
        assert kernel.layout.main_smem == build(spec, lockstep, "sm_120").layout.main_smem + 64
        assert f"constexpr int RING_SLACK = {slack};" in kernel.source
        assert config.short_name().endswith(f"_ss_pc_rs{slack}")
        counts = opcode_counts(disassemble(kernel.cubin, "mla_attention"))
        assert any(op.startswith("SYNCS") for op in counts), sorted(counts)  # mbarrier ops
    in_step = build(spec, lockstep, "sm_120")
    assert "constexpr int RING_SLACK = 0;" in in_step.source
    in_step_counts = opcode_counts(disassemble(in_step.cubin, "mla_attention"))
    assert not any(op.startswith("SYNCS") for op in in_step_counts), sorted(in_step_counts)
    refusals = {
        "smem_stages": replace(lockstep, smem_stages=2, ring_slack=1),
        "softmax": replace(lockstep, softmax="warp", ring_slack=1),
        "qk_ahead": replace(lockstep, qk_ahead=1, ring_slack=1),
        "body": replace(WS, heads_per_block=16, smem_stages=4, ring_slack=1),
    }
    for field, config in refusals.items():
        target = spec if field != "body" else Spec(heads=16, q_len=1, dtype="bfloat16")
        with pytest.raises(ConfigError, match=rf"Config\.{field}="):
            layout_for(target, config, ARCHS["sm_120"])


def test_ragged_head_groups_and_12_warp_blocks_fit_sm120():
    """The mma row path takes head groups that do not divide the heads (the last holds the
    rest) and 12 warps (three row groups): 48-row blocks at H = 128, one an SM on sm_120 at 12
    warps (two 4-warp blocks fit there, at 8), without spills, and with a grid of ceil(H / 48)
    head groups."""
    spec = Spec(heads=128, q_len=1, dtype="bfloat16", page_size=64)
    config = three_row_config(48, smem_stages=3, softmax="split", min_blocks=1)
    kernel = build(spec, config, "sm_120")
    usage, resources = kernel.binary.usage["mla_attention"], kernel.resources
    assert usage.spill_stores == usage.spill_loads == 0
    assert resources.smem <= ARCHS["sm_120"].smem_per_block
    assert resources.occupancy.blocks_per_sm * resources.threads // 32 == 12
    assert kernel.layout.rows == 48 and kernel.layout.row_groups == 3
    assert head_groups_of(spec, config) == 3 and head_groups_of(spec, MMA) == 16
    assert "constexpr int HEAD_GROUPS = (HEADS + HEADS_PER_BLOCK - 1) / HEADS_PER_BLOCK;" in (
        kernel.source
    )
    with pytest.raises(ParamError, match=r"Config\.num_warps=12: must be a power of two"):
        Config(num_warps=12)  # (the CUDA-core paths)
