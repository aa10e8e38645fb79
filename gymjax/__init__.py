"""gymjax: fast, jitted JAX environments for the whole RL ecosystem.

``import gymjax`` registers every gymjax id (:mod:`gymjax.envs`), with Gymnasium too, so that
``gymnasium.make("JaxAnt-v0")`` and ``gymnasium.make_vec("JaxAnt-v0", num_envs=256)``
work.
"""

from gymjax import program

if program.starts_the_program():
    # `python -m gymjax` imports this package before its __main__ runs, the gymjax script before
    # its entry point: the command's Ctrl-C guard starts here, ahead of the imports below
    # (gymnasium, numpy), where a Ctrl-C is a traceback, or is swallowed (raised in importlib's own
    # weakref callback, Python prints "Exception ignored" and goes on) and the run goes on.
    # Imported by any other program, gymjax leaves its process as it found it.
    program.guard_the_start()

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

