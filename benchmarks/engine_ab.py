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
env_id = ppo.presets.get(name).env_id
ppo.train(config, env_id, progress_bar=False, progress_fn=lambda steps, metrics: rates.append(metrics["sps"]))

# The split: the env alone, as the epoch steps it (its envs, unroll and time limit; random actions
# in place of the policy), so that the rest of an epoch's time is the policy and the updates.
import time, jax, gymjax
from gymjax.wrappers.training import wrap_for_training
base = gymjax.make(env_id)
env = wrap_for_training(base, episode_length=config.agent_episode_length(base))
n, unroll, low, high = config.num_envs, config.unroll_length, base.action_space.low, base.action_space.high

@jax.jit
def rollout(state, key):
    def one(state, key):
        return env.step(state, jax.random.uniform(key, (n, *low.shape), minval=low, maxval=high)), None
    return jax.lax.scan(one, state, jax.random.split(key, unroll))[0]

state = env.reset(jax.random.split(jax.random.PRNGKey(0), n))
keys = iter(jax.random.split(jax.random.PRNGKey(1), 10_000))
state = jax.block_until_ready(rollout(state, next(keys)))  # compiled
calls, start = 0, time.perf_counter()
while time.perf_counter() - start < 3.0:
    state = jax.block_until_ready(rollout(state, next(keys)))
    calls += 1
print(json.dumps({"sps": rates, "env_sps": calls * n * unroll / (time.perf_counter() - start)}))
"""

def run(checkout: pathlib.Path, preset: str, epochs: int, overrides: dict) -> dict:
    start = time.time()
    out = subprocess.run([sys.executable, "-c", WORKER, preset, str(epochs), json.dumps(overrides)], cwd=checkout,
                         capture_output=True, text=True, timeout=1800)
    if out.returncode:
        raise RuntimeError(f"{checkout} {preset}: {out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    rates = result["sps"]
    return {"sps": statistics.median(rates[1:] or rates), "env_sps": result["env_sps"], "epochs": len(rates),
            "wall_s": time.time() - start, "load": os.getloadavg()[0]}


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
                record = {"round": r, "preset": preset, "checkout": label,
                          **run(checkout, preset, args.epochs, overrides)}
                records.append(record)
                print(json.dumps(record), flush=True)
    summary = {}
    for preset in args.presets:
        ran = {label: [x for x in records if x["preset"] == preset and x["checkout"] == label]
               for label in ("base", "native")}
        rate = {label: statistics.median(x["sps"] for x in xs) for label, xs in ran.items()}
        env = {label: statistics.median(x["env_sps"] for x in xs) for label, xs in ran.items()}
        # µs per env step: the epoch's, the env's alone, and the rest (the policy and the updates)
        split = {label: {"epoch_us": 1e6 / rate[label], "env_us": 1e6 / env[label],
                         "rest_us": 1e6 / rate[label] - 1e6 / env[label]} for label in rate}
        summary[preset] = {**rate, "ratio": rate["native"] / rate["base"], "env_sps": env,
                           "env_ratio": env["native"] / env["base"], "split": split}
    (RESULTS / f"{args.stem}.json").write_text(json.dumps(
        {"base": base_commit.strip(), "native": ours_commit.strip(), "overrides": overrides, "records": records,
         "summary": summary}, indent=1))
    lines = [
        "# PPO training throughput: this checkout against a base checkout",
        "",
        f"Command: `python -m benchmarks.engine_ab --base <checkout of {base_commit.strip()[:10]}> "
        f"--presets {' '.join(args.presets)} --rounds {args.rounds} --epochs {args.epochs}"
        f"{' --set ' + ' '.join(args.set) if args.set else ''}"
        f"{'' if args.stem == 'engine_ab' else ' --stem ' + args.stem}`, "
        f"{time.strftime('%Y-%m-%d')}, this checkout at {ours_commit.strip()[:10]} (+ uncommitted changes if any).",
        "",
        f"Machine: {os.cpu_count()}-core CPU (the developers' 2-core machine, shared; the load is beside each "
        "row), processes alternated per preset. Env steps/s: median over a run's epochs after the first, "
        "median over rounds.",
        "",
        "| preset | base checkout | this checkout | ratio | env alone: base, this, ratio | µs an env step, base: "
        "env + rest | this: env + rest | load (1 min) over its runs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for preset, s in summary.items():
        loads = [x["load"] for x in records if x["preset"] == preset]
        b, t = s["split"]["base"], s["split"]["native"]
        lines.append(f"| {preset} | {s['base']:,.0f} | {s['native']:,.0f} | {s['ratio']:.2f} | "
                     f"{s['env_sps']['base']:,.0f}, {s['env_sps']['native']:,.0f}, {s['env_ratio']:.2f} | "
                     f"{b['env_us']:.0f} + {b['rest_us']:.0f} | {t['env_us']:.0f} + {t['rest_us']:.0f} | "
                     f"{min(loads):.1f}-{max(loads):.1f} |")
    lines += [
        "",
        "Env alone: the preset's envs, unroll and time limit stepped in a jitted `lax.scan` with random actions in "
        "place of the policy (env steps/s, 3 s after the compile, in the run's process). The rest of an epoch's "
        "time per env step is the policy's forward passes and the SGD updates, which the engine does not touch: "
        "an engine k times faster speeds an epoch by 1 / (rest share + env share / k).",
    ]
    (RESULTS / f"{args.stem}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
