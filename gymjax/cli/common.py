"""What several commands parse the same way: the env and its options, the seed, the run directory,
counts; and how bad input is refused: one line naming what was expected, before any work starts.

Two kinds of refusal:

- what argparse itself sees (a count that is not a positive integer, a value not among the choices,
  a missing flag): exit status 2, the line on stderr (:class:`Parser`);
- the rest (an id not registered, an option the env does not take, a file where the run directory
  should be, a video path that is not .mp4) is each command's first check: ``SystemExit(line)``.
"""

from __future__ import annotations

import argparse
import pathlib
from typing import Any

from gymjax import envs
from gymjax.core import Env


class Parser(argparse.ArgumentParser):
    """An argument error is one line on stderr naming what was expected, exit status 2 as argparse's;
    the usage block argparse would print first stays with ``--help``."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# -- argument types: each names what it expects ----------------------------------------


def _int_at_least(low: int, expected: str):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if value < low:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    return parse


positive_int = _int_at_least(1, "a positive integer")
nonnegative_int = _int_at_least(0, "an integer >= 0")


# -- arguments shared by several commands ------------------------------------------------


DEFAULT_ENV = "JaxAnt-v0"


def add_env(
    parser: argparse.ArgumentParser, default: str | None = DEFAULT_ENV, default_help: str = "%(default)s"
) -> None:
    parser.add_argument("--env", default=default, help=f"registered id (default: {default_help})")
    parser.add_argument("--env-kwargs", nargs="*", default=[], metavar="KEY=VALUE",
                        help="env options, JSON values or bare words, e.g. engine=mujoco or solver=fast")


def add_seed(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=0, help="PRNG seed (default: %(default)s)")


def add_run_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run-dir", type=pathlib.Path, required=True, metavar="DIR", help="the run directory")


# -- the first checks of a command ---------------------------------------------------------


def make_env(env_id: str, env_kwargs: dict[str, Any]) -> Env:
    """The functional env, or one line saying why it cannot be built: an unknown id (the line lists the
    registered ones) or options the env does not take."""
    from gymjax.trainers import runs  # the trainer's stack, for the commands that need it

    try:
        return runs.make_env(env_id, env_kwargs)
    except runs.RunDirectoryError as e:
        raise SystemExit(str(e)) from None


def env_from_args(args: argparse.Namespace) -> tuple[dict[str, Any], Env]:
    """``--env-kwargs`` parsed, and the env they build: checked before a command starts its work."""
    env_kwargs = env_kwargs_arg(args.env_kwargs)
    return env_kwargs, make_env(args.env, env_kwargs)


def env_kwargs_arg(pairs: list[str]) -> dict[str, Any]:
    """``--env-kwargs`` as env options, or the command's one-line refusal."""
    try:
        return envs.parse_env_kwargs(pairs)
    except ValueError as e:
        raise SystemExit(str(e)) from None
