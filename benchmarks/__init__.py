"""gymjax's benchmark harness: ``python -m benchmarks``, run from a source checkout.

Suites (``benchmarks/suites/``): ``env`` (env steps/s and peak memory against
N), ``adapters`` (SB3 and PettingZoo adapters against the ecosystem's own) and
``train`` (PPO training steps/s and learning curves). ``harness`` times,
isolates and describes; ``report`` writes JSON, Markdown and PNGs; ``worker``
measures one stack in a process of its own. Peers (Brax, EnvPool, ...) are
optional: a missing one is reported as skipped.

The scripts beside them measure one question each and write
``results/<name>.{json,md,png}``: ``vector_ceiling`` (the C backend's vector
env against MuJoCo C alone and EnvPool), ``clients`` (third-party clients on
gymjax envs), ``learning`` (SB3 and gymjax PPO learning side by side) and
``distributed`` (PPO across processes).

benchmarks/ imports gymjax; gymjax never imports benchmarks/.
"""
