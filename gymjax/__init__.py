"""gymjax: fast, jitted JAX environments for the whole RL ecosystem.

``import gymjax`` registers every gymjax id (:mod:`gymjax.envs`), with Gymnasium too, so that
``gymnasium.make("JaxAnt-v0")`` and ``gymnasium.make_vec("JaxAnt-v0", num_envs=256)``
work.
"""

import os
import sys

if sys.argv[:1] == ["-m"] or os.path.basename(sys.argv[0]) == "gymjax":
    # gymjax is the program (python -m gymjax, the gymjax script): its Ctrl-C guard starts before
    # the imports below, in which a KeyboardInterrupt can be swallowed (raised in importlib's own
    # weakref callback, Python prints "Exception ignored" and goes on) and the run goes on.
    from gymjax.cli import guard_the_start

    guard_the_start()

from gymjax import envs  # registers every id, with Gymnasium too

__version__ = "0.1.0"
__all__ = ["Env", "State", "Wrapper", "envs", "make"]

make = envs.make


def __getattr__(name: str):
    # JAX loads on first use, not on import: `gymjax --help` and a Ctrl-C at start stay quick.
    if name in ("Env", "State", "Wrapper"):
        from gymjax import core

        return getattr(core, name)
    raise AttributeError(f"module 'gymjax' has no attribute {name!r}")

