"""``gymjax crosscheck``: the options of :mod:`gymjax.crosscheck` and its report; exit status 1 on any mismatch.

Named for what the command does, not after the library module it parses for: one module per name."""

from __future__ import annotations

import argparse
import importlib.util

from gymjax import crosscheck
from gymjax.cli import common


def _unit_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}")
    return value


def crosscheck_command(args: argparse.Namespace) -> int:
    missing = [name for name in ("stable_baselines3", "torch") if importlib.util.find_spec(name) is None]
    if missing:
        raise SystemExit(f"gymjax crosscheck compares against {' and '.join(missing)}: pip install 'gymjax[sb3]'")
    env_kwargs, _ = common.env_from_args(args)
    checks = crosscheck.run(args.env, num_envs=args.num_envs, steps=args.steps,
                            max_episode_steps=args.max_episode_steps, seed=args.seed, gamma=args.gamma,
                            gae_lambda=args.gae_lambda, **env_kwargs)
    print(crosscheck.format_table(checks))
    failed = [c.name for c in checks if not c.passed]
    print(f"\n{len(checks) - len(failed)}/{len(checks)} checks passed" + (f"; FAILED: {failed}" if failed else ""))
    return 1 if failed else 0


def add_commands(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("crosscheck", help="GAE and episode metrics: gymjax vs SB3 vs the torch agent",
                            description=crosscheck.__doc__.split("\n\n")[0])
    common.add_env(p)
    p.add_argument("--num-envs", type=common.positive_int, default=4, help="(default: %(default)s)")
    p.add_argument("--steps", type=common.positive_int, default=64, help="rollout length (default: %(default)s)")
    p.add_argument("--max-episode-steps", type=common.positive_int, default=20,
                   help="time limit, short so that timeouts fall inside the window (default: %(default)s)")
    common.add_seed(p)
    p.add_argument("--gamma", type=_unit_float, default=0.99, help="(default: %(default)s)")
    p.add_argument("--gae-lambda", type=_unit_float, default=0.95, help="(default: %(default)s)")
    p.set_defaults(run=crosscheck_command)
