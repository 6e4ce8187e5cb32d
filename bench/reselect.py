"""Re-pick the shipped tuning entries whose config spills with this machine's NVRTC: the fastest
correct trial of the sweep (results.csv) whose config compiles for every target arch without
spills. The sweep applies the same rule with the device's NVRTC; ptxas versions differ in where
they cap registers, so the shipped configs are held to both. Entries that pass, and FMA entries
(not held to it), are left as they are; the others are re-picked (without results.csv, from the
trials each entry keeps). The database is written to OUT (to ship, copy it over
kgen/tuned/tuning.json).

    python3 bench/reselect.py OUT [--csv SWEEP/results.csv] [--db DB]   (DB: kgen/tuned/tuning.json)
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kgen.mla import Config, Spec  # noqa: E402
from kgen.mla.spec import COMPUTES  # noqa: E402
from kgen.mla.tuning import code_stamp  # noqa: E402
from kgen.tune.sweep import fits_targets  # noqa: E402

CONFIG_FIELDS = [f.name for f in dataclasses.fields(Config)]


def config_of(row: dict) -> Config:
    """The Config of a results.csv row (of this kgen's sweep, or an older one's former names)."""
    names = [*CONFIG_FIELDS, *Config.FORMER_NAMES]
    fields = {k: row[k] for k in names if row.get(k) not in (None, "")}
    return Config.from_dict({k: int(v) if v.isdigit() else v for k, v in fields.items()})


_NAME_FIELDS = {
    "hb": "heads_per_block",
    "v": "vec_width",
    "st": "smem_stages",
    "w": "num_warps",
    "n": "block_n",
    "c": "col_groups",
    "mb": "min_blocks",
    "rs": "ring_slack",
}
_NAME_FLAGS = {  # a short name's flag -> the field and its value
    "qa": ("qk_ahead", 1),
    "ss": ("softmax", "split"),
    "pc": ("merge", "pdl"),
    "ws": ("body", "specialized"),
}


def config_named(name: str, kv_splits: int) -> Config:
    """The Config whose short_name() is `name`, with kv_splits."""
    fields: dict = {"kv_splits": kv_splits}
    for token in name.split("_"):
        if token in COMPUTES:
            fields["compute"] = token
        elif token in _NAME_FLAGS:
            field, value = _NAME_FLAGS[token]
            fields[field] = value
        else:
            key = token.rstrip("0123456789")
            fields[_NAME_FIELDS[key]] = int(token[len(key) :])
    config = Config.from_dict(fields)
    assert config.short_name() == name, (name, config.short_name())
    return config


def entry_rows(entry: dict) -> list[dict]:
    """An entry's trials as results.csv rows (config fields, median_us)."""
    return [
        {"case": entry["case"], "median_us": us, **config_named(name, splits).to_dict()}
        for name, splits, us in entry["trials"]
    ]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path, help="where the database is written")
    parser.add_argument("--csv", type=Path, help="a sweep's results.csv to pick from")
    parser.add_argument("--db", type=Path, default=ROOT / "kgen/tuned/tuning.json")
    args = parser.parse_args()
    rows = None
    if args.csv:
        with open(args.csv) as f:
            rows = [r for r in csv.DictReader(f) if r["status"] == "ok"]
    db = json.loads(args.db.read_text())
    for entry in db["entries"].values():
        if "case" not in entry or entry.get("family", "dense") != "dense":
            continue  # trials and results.csv rows carry dense Config fields only
        spec, current = Spec.from_dict(entry["spec"]), Config.from_dict(entry["config"])
        if fits_targets(spec, current):
            continue
        trials = sorted(
            (r for r in rows or entry_rows(entry) if r["case"] == entry["case"]),
            key=lambda r: float(r["median_us"]),
        )
        for row in trials:
            config = config_of(row)
            if fits_targets(spec, config):
                break
        else:
            raise SystemExit(f"{entry['case']}: no trial fits the targets spill-free")
        if config.to_dict() != entry["config"]:
            print(
                f"{entry['case']}: {Config.from_dict(entry['config']).short_name()} "
                f"s{entry['config']['kv_splits']} {entry['median_us']:.1f} us -> "
                f"{config.short_name()} s{config.kv_splits} {float(row['median_us']):.1f} us"
            )
            entry["config"], entry["median_us"] = config.to_dict(), float(row["median_us"])
            entry["code"] = code_stamp(spec, config, entry["arch"])  # same sweep, same code
    args.out.write_text(json.dumps(db, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
