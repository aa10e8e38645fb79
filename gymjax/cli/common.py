"""What several commands parse the same way: the env and its options, the seed, the run directory,
counts; and the one-line refusal every argument error ends in, before any work starts."""

from __future__ import annotations

import argparse
import pathlib
from typing import Any

from gymjax import envs
from gymjax.core import Env


class Parser(argparse.ArgumentParser):
    """An argument error is one line naming what was expected (argparse's usage block is kept for
    ``--help``), raised as ``SystemExit`` like every other refusal of the CLI."""

    def error(self, message: str):
        raise SystemExit(f"{self.prog}: {message} (see {self.prog} --help)")


# -- argument types: each names what it expects ----------------------------------------


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def nonnegative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def registered_env(text: str) -> str:
    ids = envs.registered_ids()
    if text not in ids:
        # worded like make_env's refusal: every env that cannot be built reads "cannot make ..."
        raise argparse.ArgumentTypeError(f"cannot make {text}: expected a registered env id ({', '.join(ids)})")
    return text


def run_dir(text: str) -> pathlib.Path:
    path = pathlib.Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"expected a run directory, {path} is a file")
    return path


# -- arguments shared by several commands ------------------------------------------------


def add_env(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--env", type=registered_env, default="JaxAnt-v0", help="registered id (default: %(default)s)")
    parser.add_argument("--env-kwargs", nargs="*", default=[], metavar="KEY=VALUE",
                        help="env options, JSON values or bare words, e.g. engine=mujoco or solver=fast")


def add_seed(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=0, help="PRNG seed (default: %(default)s)")


def add_run_dir(parser: argparse.ArgumentParser, help: str = "the run directory") -> None:
    parser.add_argument("--run-dir", type=run_dir, required=True, metavar="DIR", help=help)


def make_env(env_id: str, env_kwargs: dict[str, Any]) -> Env:
    """The functional env, or one line saying why it cannot be built with these options."""
    try:
        return envs.make(env_id, **env_kwargs)
    except (KeyError, TypeError, ValueError) as e:
        raise SystemExit(f"cannot make {env_id} with {env_kwargs}: {e}") from None


def env_from_args(args: argparse.Namespace) -> tuple[dict[str, Any], Env]:
    """``--env-kwargs`` parsed, and the env they build: checked before a command starts its work."""
    env_kwargs = envs.parse_env_kwargs(args.env_kwargs)
    return env_kwargs, make_env(args.env, env_kwargs)
