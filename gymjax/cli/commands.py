"""The ``gymjax`` command line, one module per command family.

- ``gymjax train``: trains PPO into a run directory (checkpoints, metrics,
  learning curve, video); ``--resume`` continues it.
- ``gymjax eval`` / ``gymjax render``: a run directory's latest checkpoint,
  evaluated or rendered to a video. (These three: :mod:`gymjax.cli.run`.)
- ``gymjax tune``: searches PPO's hyperparameters with Optuna; writes the best as a preset file
  for ``gymjax train --preset-file`` (:mod:`gymjax.cli.tune`).
- ``gymjax crosscheck``: GAE and episode metrics computed by gymjax, SB3 and
  the torch agent on one rollout; exits non-zero on a mismatch
  (:mod:`gymjax.cli.checks`).
- ``gymjax demo``: steps a vector env with random actions, prints throughput
  and writes a short video of one env (:mod:`gymjax.cli.demo`).

What several commands parse alike (``--env``, ``--env-kwargs``, ``--seed``,
``--run-dir``) is in :mod:`gymjax.cli.common`. Bad input ends in one line
naming what was expected, before any work starts. The benchmark harness is a
tool of the source checkout (``python -m benchmarks``), not a command: it
imports gymjax, never the other way round.
"""

from __future__ import annotations

import sys

import jax

import gymjax  # noqa: F401  (registers the ids with Gymnasium)
from gymjax.cli import checks, common, demo, run, tune


def main(argv: list[str] | None = None) -> int:
    parser = common.Parser(prog="gymjax", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (run, tune, checks, demo):
        module.add_commands(commands)

    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    args.argv = argv
    if getattr(args, "local_processes", None):
        return args.run(args)  # a launcher: JAX runs in the processes it starts, not here
    if hasattr(args, "setup"):
        args.setup(args)  # jax.distributed must start before anything touches JAX
    print(f"JAX {jax.__version__} on {jax.devices()[0].platform}", file=sys.stderr)
    return args.run(args)
