"""PPO training throughput on two checkouts, processes alternated: the engine change's A/B.

    python -m benchmarks.engine_ab --base /path/to/landed/checkout --presets hopper half_cheetah ant

Each round trains every preset once per checkout, one process at a time, in alternation (base,
this checkout, base, ...), for ``--epochs`` epochs of the preset's settings (its envs, unroll,
minibatches and SGD passes; fewer steps than its budget); a run's figure is the median env steps/s
of its epochs after the first (``sps``: one compiled epoch, rollout and updates, evaluation and
compile apart). A checkout is imported by running from its root (``python -c`` puts it first on
``sys.path``); both use this interpreter. ``--set`` lays the same fields over both checkouts' presets
(where a preset changed between them). Writes ``benchmarks/results/<stem>.{json,md}``, ``engine_ab`` by default.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
HERE = pathlib.Path(__file__).resolve().parent.parent

WORKER = """
import json, sys
from gymjax.trainers import ppo
name, epochs, overrides = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
config = ppo.PPOConfig.preset(name).replace(**overrides)
per_epoch = max(1, 100_000 // config.env_steps_per_iteration)  # about 100k env steps an epoch
config = config.replace(num_timesteps=epochs * per_epoch * config.env_steps_per_iteration, epoch_iterations=per_epoch,
                        num_evals=0)
rates = []
ppo.train(config, ppo.presets.get(name).env_id, progress_bar=False,
          progress_fn=lambda steps, metrics: rates.append(metrics["sps"]))
print(json.dumps({"sps": rates}))
"""

def run(checkout: pathlib.Path, preset: str, epochs: int, overrides: dict) -> dict:
    start = time.time()
    out = subprocess.run([sys.executable, "-c", WORKER, preset, str(epochs), json.dumps(overrides)], cwd=checkout,
                         capture_output=True, text=True, timeout=1800)
    if out.returncode:
        raise RuntimeError(f"{checkout} {preset}: {out.stderr[-3000:]}")
    rates = json.loads(out.stdout.strip().splitlines()[-1])["sps"]
    return {"sps": statistics.median(rates[1:] or rates), "epochs": len(rates), "wall_s": time.time() - start,
            "load": os.getloadavg()[0]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", required=True, type=pathlib.Path, help="the landed checkout's root")
    p.add_argument("--presets", nargs="+", default=["hopper", "half_cheetah", "ant"])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--set", nargs="+", default=[], metavar="FIELD=VALUE",
                   help="PPOConfig fields laid over the preset in both checkouts (JSON values), so that two "
                        "checkouts whose presets differ train the same settings")
    p.add_argument("--stem", default="engine_ab", help="the record: benchmarks/results/<stem>.{json,md}")
    args = p.parse_args()
    overrides = {field: json.loads(value) for field, value in (item.split("=", 1) for item in args.set)}
    base_commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=args.base, capture_output=True, text=True).stdout
    ours_commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True, text=True).stdout
    records = []
    for r in range(args.rounds):
        for preset in args.presets:
            for label, checkout in (("base", args.base), ("native", HERE)):
                record = {"round": r, "preset": preset, "checkout": label, **run(checkout, preset, args.epochs, overrides)}
                records.append(record)
                print(json.dumps(record), flush=True)
    summary = {}
    for preset in args.presets:
        rate = {label: statistics.median(x["sps"] for x in records if x["preset"] == preset and x["checkout"] == label)
                for label in ("base", "native")}
        summary[preset] = {**rate, "ratio": rate["native"] / rate["base"]}
    (RESULTS / f"{args.stem}.json").write_text(json.dumps(
        {"base": base_commit.strip(), "native": ours_commit.strip(), "overrides": overrides, "records": records,
         "summary": summary}, indent=1))
    lines = [
        "# PPO training throughput: this checkout against a base checkout",
        "",
        f"Command: `python -m benchmarks.engine_ab --base <checkout of {base_commit.strip()[:10]}> "
        f"--presets {' '.join(args.presets)} --rounds {args.rounds} --epochs {args.epochs}"
        f"{' --set ' + ' '.join(args.set) if args.set else ''}{'' if args.stem == 'engine_ab' else ' --stem ' + args.stem}`, "
        f"{time.strftime('%Y-%m-%d')}, this checkout at {ours_commit.strip()[:10]} (+ uncommitted changes if any).",
        "",
        f"Machine: {os.cpu_count()}-core CPU (the developers' 2-core machine, shared; the load is beside each "
        "row), processes alternated per preset. Env steps/s: median over a run's epochs after the first, "
        "median over rounds.",
        "",
        "| preset | base checkout | this checkout | ratio | load (1 min) over its runs |",
        "|---|---|---|---|---|",
    ]
    for preset, s in summary.items():
        loads = [x["load"] for x in records if x["preset"] == preset]
        lines.append(f"| {preset} | {s['base']:,.0f} | {s['native']:,.0f} | {s['ratio']:.2f} | "
                     f"{min(loads):.1f}-{max(loads):.1f} |")
    (RESULTS / f"{args.stem}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
