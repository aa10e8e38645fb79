"""A note kept with a record: why a run reached what it did, said by the person who read its curve.

    python -m benchmarks note suite_hopper_60min Hopper-v5 "It passed the target at 12 minutes, ..."
    python -m benchmarks note suite_hopper_60min Hopper-v5 ""      # removes it

A note explains one task of one record (``record["notes"][task]``), so it travels with the figures
it explains: a rerun writes a new record, which has no note until someone reads the new curve,
and a stale explanation cannot outlive its run. Reports that render a task's row (the suite's
"Targets missed") show its records' notes; the record's own report is not rewritten.
"""

from __future__ import annotations

import argparse
import json

from benchmarks import common


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("stem", help="the record: benchmarks/results/<stem>.json")
    p.add_argument("task", help="what the note is about, as the record names it (a reference id: Hopper-v5)")
    p.add_argument("text", help="the note; empty removes it")


def main(args: argparse.Namespace, argv: list[str]) -> int:
    path = common.RESULTS / f"{args.stem}.json"
    if not path.is_file():
        raise SystemExit(f"no record {path}")
    record = json.loads(path.read_text())
    tasks = {e["reference_id"] for e in record.get("results", {}).get("tasks", {}).values()}
    if tasks and args.task not in tasks:
        raise SystemExit(f"{args.stem} has no task {args.task!r}; it has {sorted(tasks)}")
    notes = record.setdefault("notes", {})
    if args.text:
        notes[args.task] = args.text
    else:
        notes.pop(args.task, None)
    from gymjax.trainers.store import files

    files.replace_text(path, json.dumps(record, indent=1, default=float) + "\n")
    print(f"{'noted' if args.text else 'removed the note of'} {args.task} in {path}")
    return 0
