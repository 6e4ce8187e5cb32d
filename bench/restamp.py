"""Re-stamp tuning entries after a refactor that compiles to the same machine code. For each entry
(either family) whose code stamp the current templates no longer give, its config is compiled from
the tree at REV and from this tree, for the entry's arch and for sm_120, and the SASS compared
(cuobjdump, addresses dropped). Where the entry's own arch's SASS is identical, the kernel the
entry timed is the kernel the current code builds: its stamp is updated, provided that the sm_120
build is identical too or, where ptxas scheduled it differently, still spill-free (an H200 entry
is never used on sm_120; the issue's rule is that every tuned config compiles for sm_120 without
spills). Else the entry stays stale (it needs re-timing: bench/retune_shipped.py). Needs the
[sass] extra. Compiles with this machine's NVRTC, which may differ from the one that timed the
entry (the entry says which). Writes the database with the new stamps to OUT (to ship, copy it
over kgen/tuned/tuning.json).

    PYTHONPATH=. python3 bench/restamp.py REV OUT [--db DB]    (DB: kgen/tuned/tuning.json)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from base64 import b64decode
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kgen.mla.tuning import entry_stamp  # noqa: E402
from kgen.sass import cuobjdump, disassemble  # noqa: E402

# Run under a tree's PYTHONPATH: build each (family, spec, config, arch) of the JSON list on
# stdin and print the cubins, base64, as a JSON list (any tree's kgen can do this much).
# A tree from before the named fields (25cd079) takes their former 0/1 names.
BUILD = r"""
import base64, dataclasses, json, sys
from kgen.mla import Config, Spec, build
NAMED = {"softmax": ("split_softmax", ["warp", "split"]),
         "merge": ("pdl_combine", ["fused", "pdl"]),
         "body": ("specialize", ["rows", "specialized"])}
def config_of(cls, config):
    names = {f.name for f in dataclasses.fields(cls)}
    for new, (old, values) in NAMED.items():
        if new in config and new not in names:
            config[old] = values.index(config.pop(new))
    return cls.from_dict(config)
out = []
for family, spec, config, arch in json.load(sys.stdin):
    if family == "sparse":
        from kgen.mla import SparseConfig, SparseSpec, build_sparse
        kernel = build_sparse(SparseSpec.from_dict(spec), config_of(SparseConfig, config), arch)
    else:
        kernel = build(Spec.from_dict(spec), config_of(Config, config), arch)
    out.append([base64.b64encode(kernel.cubin).decode(), kernel.resources.spills])
print(json.dumps(out))
"""
_ADDRESS = re.compile(r"/\*[0-9a-f]{4,}\*/")


def sass_of(tree: Path, items: list) -> list[tuple[str, int]]:
    """The SASS (addresses dropped) and spilled bytes of each (family, spec, config, arch) built
    from `tree`, in a fresh cache."""
    env = {**os.environ, "PYTHONPATH": str(tree), "KGEN_CACHE_DIR": tempfile.mkdtemp()}
    run = subprocess.run(
        [sys.executable, "-c", BUILD],
        input=json.dumps(items),
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=tree,
    )
    listings = []
    for cubin, spills in json.loads(run.stdout):
        lines = [
            _ADDRESS.sub("", line).strip() for line in disassemble(b64decode(cubin)).splitlines()
        ]
        keep = [x for x in lines if x and not x.startswith(("Fatbin", "code for", "Function"))]
        listings.append(("\n".join(keep), spills))
    return listings


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("rev", help="the git revision whose code timed the entries")
    parser.add_argument("out", type=Path, help="where the re-stamped database is written")
    parser.add_argument("--db", type=Path, default=ROOT / "kgen/tuned/tuning.json")
    args = parser.parse_args()
    if cuobjdump() is None:
        raise SystemExit("restamp needs cuobjdump: pip install 'kgen[sass]'")
    rev = args.rev
    db = json.loads(args.db.read_text())
    stale = [e for e in db["entries"].values() if e.get("code") != entry_stamp(e)]
    if not stale:
        print("no stale entries")
        args.out.write_text(json.dumps(db, indent=1))
        return 0
    items = [
        (e.get("family", "dense"), e["spec"], e["config"], arch)
        for e in stale
        for arch in dict.fromkeys([e["arch"], "sm_120"])
    ]
    with tempfile.TemporaryDirectory() as old_tree:
        archive = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", old_tree], input=archive.stdout, check=True)
        before = sass_of(Path(old_tree), items)
    after = sass_of(ROOT, items)
    timed = {json.dumps([e["spec"], e["config"]], sort_keys=True): e["arch"] for e in stale}
    same: dict[str, bool] = {}
    for (family, spec, config, arch), (a, _), (b, spills) in zip(items, before, after, strict=True):
        key = json.dumps([spec, config], sort_keys=True)
        ok = a == b or (arch != timed[key] and spills == 0)
        same[key] = same.get(key, True) and ok
        verdict = "same" if a == b else f"resched ({spills} B spilled)" if ok else "DIFFERENT"
        print(f"{verdict:9s} {arch:7s} {family:6s} {key}"[:150])
    restamped = 0
    for e in stale:
        if same[json.dumps([e["spec"], e["config"]], sort_keys=True)]:
            e["code"] = entry_stamp(e)
            restamped += 1
    args.out.write_text(json.dumps(db, indent=1))
    print(f"{restamped} of {len(stale)} stale entries re-stamped (their arch's SASS as {rev}'s)")
    return 0 if restamped == len(stale) else 1


if __name__ == "__main__":
    raise SystemExit(main())
