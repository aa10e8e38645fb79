"""``python -m benchmarks <command> [flags]``: every benchmark of the checkout, one entry point.

    python -m benchmarks throughput --quick --out /tmp/bench   # a smoke run
    python -m benchmarks page --check

Each command is a module with ``add_arguments(parser)`` and ``main(args, argv)``,
imported only when chosen (``page`` needs no JAX). See ``benchmarks/__init__.py``.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys

COMMANDS = {
    "throughput": "benchmarks.throughput",
    "catalog": "benchmarks.catalog",
    "single": "benchmarks.single",
    "first_step": "benchmarks.first_step",
    "memory": "benchmarks.memory",
    "training": "benchmarks.training",
    "distributed": "benchmarks.distributed",
    "external": "benchmarks.external",
    "suite": "benchmarks.suite",
    "page": "benchmarks.page",
    "note": "benchmarks.note",
    "gpu": "benchmarks.gpu",
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] not in COMMANDS:
        # -h and mistakes: the list of commands, without importing any of them
        parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0])
        parser.add_argument("command", choices=list(COMMANDS))
        parser.parse_args(argv[:1])
    command, rest = argv[0], argv[1:]
    module = importlib.import_module(COMMANDS[command])
    parser = argparse.ArgumentParser(
        prog=f"python -m benchmarks {command}", description=module.__doc__.split("\n\n")[0]
    )
    module.add_arguments(parser)
    return module.main(parser.parse_args(rest), rest)


def _exit_on_sigterm(signum, frame):
    # SystemExit unwinds like Ctrl-C, so common.run_process's clean-up kills the worker's process
    # group: a benchmark stopped by `kill` or a CI timeout leaves no worker running.
    sys.exit(128 + signum)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    sys.exit(main())
