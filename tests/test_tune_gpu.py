"""A tiny real sweep on the GPU ranks only correct variants, and config='auto' then picks the
stored winner (also inside CUDA-graph capture, where it must not benchmark)."""

import pytest

from kgen.mla import Spec, attention
from kgen.mla.choose import choose, choose_config
from kgen.mla.kernel import MLAKernel
from kgen.mla.workload import make_workload
from kgen.tune.space import Axes, Case
from kgen.tune.sweep import SweepOptions, run_sweep

pytestmark = pytest.mark.gpu
SABOTAGED_HPB = 4


def test_tiny_sweep_ranks_only_correct_variants_and_auto_uses_the_winner(tmp_path, monkeypatch):
    import torch

    call = MLAKernel.__call__

    def sabotaged(self, *args, **kwargs):  # the fastest-looking variant computes a wrong answer
        out, lse = call(self, *args, **kwargs)
        if self.config.heads_per_block == SABOTAGED_HPB:
            out.mul_(1.1)
        return out, lse

    monkeypatch.setattr(MLAKernel, "__call__", sabotaged)
    case = Case("tiny", Spec(heads=4, q_len=2, mask="causal"), batch=2, prefix=900)
    options = SweepOptions(
        compile_only=False,
        axes=Axes(num_warps=(4,), stage_tiles=((0, 2), (2, 16))),
        reps=5,
        in_process=True,
        db_path=tmp_path / "db.json",
        jobs=4,
    )
    report = run_sweep([case], tmp_path / "out", options)
    (entry,) = report["cases"]
    wrong = {t["config"]["heads_per_block"] for t in entry["trials"] if t["status"] == "wrong"}
    assert wrong == {SABOTAGED_HPB}
    assert (
        entry["best"]["status"] == "ok"
        and entry["best"]["config"]["heads_per_block"] != SABOTAGED_HPB
    )
    assert entry["torch"]["status"] == "ok" and entry["best"]["graph"]["median_us"] > 0
    monkeypatch.setattr(MLAKernel, "__call__", call)

    monkeypatch.setenv("KGEN_TUNING_DB", str(tmp_path / "db.json"))
    choose.cache_clear()  # (choose_config is choose for the dense family)
    w = make_workload(case.spec, case.seq_lens, seed=5)
    picked = choose_config(case.spec, case.batch, case.max_len, w.q.device.index)
    assert picked.to_dict() == entry["best"]["config"]

    expected = attention(w.q, w.kv_cache, w.block_table, w.seq_lens, "causal", w.scale)
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.graph(graph, stream=stream):
        out, lse = attention(w.q, w.kv_cache, w.block_table, w.seq_lens, "causal", w.scale)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, expected[0]) and torch.equal(lse, expected[1])
    choose.cache_clear()  # (choose_config is choose for the dense family)
