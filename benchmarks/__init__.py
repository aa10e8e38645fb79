"""gymjax's benchmark harness: ``python -m benchmarks`` or ``gymjax bench``.

Suites (``benchmarks/suites/``): ``env`` (env steps/s and peak memory against
N), ``adapters`` (SB3 and PettingZoo adapters against the ecosystem's own) and
``train`` (PPO training steps/s and learning curves). ``harness`` times,
isolates and describes; ``report`` writes JSON, Markdown and PNGs; ``worker``
measures one stack in a process of its own. Peers (Brax, EnvPool, ...) are
optional: a missing one is reported as skipped.

The scripts beside them (``env_throughput.py``, ``adapters.py``,
``ppo_train.py``, ``mujoco_backend.py``) are the earlier, single-purpose
measurements whose results the README quotes; they share the harness's code.
"""
