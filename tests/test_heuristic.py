"""The heuristic defaults of both families are pinned, and every rule cites its evidence.

tests/data/heuristic_defaults.json was written by the heuristics as they were before the rule
table (commit 6dd1e47's code), for a fixed sample of shapes, batches, lengths, arches and SM
counts. A dense row holds the case (heads, q_len, latent_dim, rope_dim, dtype, page_size, mask,
batch, max_seq_len, arch, sm_count), then the default with every candidate accepted, the default
with a third of them refused (by a hash of their block's shape), how many candidates that second
call offered and a CRC of them in order, and the default when only the last of those is accepted
(as kgen.mla.dense.compiled_default asks where every candidate spills; null: none). A sparse row
holds (heads, q_len, topk, kv_format, page_size, dtype, batch, arch, sm_count) and the default
(null: ConfigError). Configs are indices into the *_configs tables, whose columns *_fields name
(a field the fixture does not name holds its default value).
"""

from __future__ import annotations

import json
import re
import warnings
import zlib
from pathlib import Path

import pytest

from kgen.arch import ARCHS
from kgen.mla import heuristic
from kgen.mla.layout import ConfigError
from kgen.mla.sparse import heuristic as sparse_heuristic
from kgen.mla.sparse.spec import SparseSpec
from kgen.mla.spec import Spec

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = json.loads((Path(__file__).parent / "data" / "heuristic_defaults.json").read_text())
# the fields of a block's shape: what the refusals hash (the offers' CRC adds ring_slack)
CORE = ("heads_per_block", "vec_width", "smem_stages", "num_warps", "block_n", "compute")
CORE += ("col_groups", "min_blocks")


def _core(config) -> list:
    return [getattr(config, name) for name in CORE]


def _offered(config) -> str:
    return json.dumps([*_core(config), config.ring_slack])


def _refuse_a_third(config) -> bool:
    return zlib.crc32(json.dumps(_core(config)).encode()) % 3 != 0


def _differs(config, family: str, expected: int | None) -> str | None:
    """Why `config` is not the fixture's config `expected` (None: it is)."""
    if expected is None:
        return f"expected no default, got {config.short_name()}"
    values = FIXTURE[f"{family}_configs"][expected]
    fields = dict(zip(FIXTURE[f"{family}_fields"], values, strict=True))
    with warnings.catch_warnings():  # (a field renamed since is taken under its former name)
        warnings.simplefilter("ignore", DeprecationWarning)
        wanted = type(config).from_dict(fields)
    return None if config == wanted else f"expected {wanted}, got {config}"


def _dense_mismatches(row: list) -> list[str]:
    *case, plain, refused, offers, crc, only = row
    heads, q_len, latent, rope, dtype, page, mask, batch, max_len, arch, sm_count = case
    spec = Spec(heads, q_len, latent, rope, dtype, page, mask)
    args = (spec, batch, max_len, ARCHS[arch], sm_count)
    offered = []

    def accept(config) -> bool:
        offered.append(_offered(config))
        return _refuse_a_third(config)

    problems = [
        _differs(heuristic.default_config(*args), "dense", plain),
        _differs(heuristic.default_config(*args, accept=accept), "dense", refused),
    ]
    got = f"{zlib.crc32(chr(10).join(offered).encode()):08x}"
    if (len(offered), got) != (offers, crc):
        problems.append(f"offered {len(offered)} candidates (CRC {got}), not {offers} ({crc})")
    last = offered[-1]
    try:
        alone = heuristic.default_config(*args, accept=lambda c: _offered(c) == last)
        problems.append(_differs(alone, "dense", only))
    except ConfigError:
        problems.append(None if only is None else "no default with only the last accepted")
    return [f"{case}: {problem}" for problem in problems if problem]


def test_dense_defaults_and_the_candidates_offered_are_those_of_the_fixture():
    mismatches = [m for row in FIXTURE["dense"] for m in _dense_mismatches(row)]
    assert not mismatches, f"{len(mismatches)} mismatches, first: {mismatches[:5]}"


def test_sparse_defaults_are_those_of_the_fixture():
    mismatches = []
    for *case, expected in FIXTURE["sparse"]:
        heads, q_len, topk, kv_format, page, dtype, batch, arch, sm_count = case
        spec = SparseSpec(heads, q_len, topk, kv_format, page, dtype)
        try:
            config = sparse_heuristic.default_sparse_config(spec, batch, ARCHS[arch], sm_count)
            if expected is None:  # the fixture's gap: H with no divisor in 16..32, now ragged
                groups = -(-heads // 32)
                ragged = heads > 32 and not any(heads % d == 0 for d in range(16, 33))
                ok = ragged and config.heads_per_block == -(-heads // groups)
                problem = None if ok else f"a default ({config.short_name()}) where none was"
            else:
                problem = _differs(config, "sparse", expected)
        except ConfigError:
            problem = None if expected is None else "no default"
        if problem:
            mismatches.append(f"{case}: {problem}")
    assert not mismatches, f"{len(mismatches)} mismatches, first: {mismatches[:5]}"


@pytest.mark.parametrize("kv_format", ["fp8", "bf16", "v4_fp8", "v4_bf16", "v41_fp8"])
def test_every_head_count_has_a_sparse_default(kv_format):
    """H 1..128 of both ops (ragged head groups where no divisor of H fits two m16 tiles)."""
    for heads in range(1, 129):
        spec = SparseSpec(heads, 1, 512, kv_format, 64)
        config = sparse_heuristic.default_sparse_config(spec, 4, ARCHS["sm_120"], 188)
        assert config.heads_per_block <= min(heads, 32) or heads % config.heads_per_block == 0


def test_the_sample_reaches_every_rule():
    """Every row of RULES and RIVALS chooses some default of the fixture's sample."""
    chosen = set()
    for row in FIXTURE["dense"]:
        heads, q_len, latent, rope, dtype, page, mask, batch, max_len, arch, sm_count = row[:11]
        spec = Spec(heads, q_len, latent, rope, dtype, page, mask)
        facts = heuristic.Facts(spec, ARCHS[arch], batch, sm_count)
        last_resorts = [_offered(c) for c in heuristic._mma_last_resorts(facts)]

        def spilling_last_resorts(config, last_resorts=last_resorts) -> bool:
            return _offered(config) not in last_resorts  # (as compiled_default finds on sm_120)

        for accept in (lambda config: True, _refuse_a_third, spilling_last_resorts):
            first = heuristic._first(facts, heuristic.RULES, accept)
            rules = (rule for rule in heuristic.RULES if heuristic._first(facts, [rule], accept))
            chosen.add(next(rules).name)
            for rival in heuristic.RIVALS:
                if rival.when(facts, first[0]) and rival.find(facts, first[0], accept):
                    chosen.add(rival.name)
    names = {rule.name for rule in heuristic.RULES} | {rival.name for rival in heuristic.RIVALS}
    assert names <= chosen, f"never chosen: {sorted(names - chosen)}"


DECISIONS = (ROOT / "docs" / "decisions.md").read_text()


@pytest.mark.parametrize(
    "row",
    [*heuristic.RULES, *heuristic.RIVALS, *sparse_heuristic.PREFERENCES],
    ids=lambda row: row.name,
)
def test_every_rule_cites_lines_of_the_decisions(row):
    for name in row.evidence.split(";"):
        assert f"**{name.strip()}**" in DECISIONS, f"{row.name}: no line **{name.strip()}**"


@pytest.mark.parametrize("module", [heuristic, sparse_heuristic], ids=lambda m: m.__name__)
def test_every_decision_the_code_cites_is_there(module):
    text = " ".join(Path(module.__file__).read_text().split())
    cited = re.findall(r"docs/decisions\.md: ([^)]+)\)", text)
    assert cited
    for names in cited:
        for name in names.split(";"):
            assert f"**{name.strip()}**" in DECISIONS, f"no line **{name.strip()}**"
