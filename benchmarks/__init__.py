"""gymjax's benchmarks: ``python -m benchmarks <command>``, run from a source checkout.

Commands (``__main__.COMMANDS``), each a module writing one record
``results/<stem>.{json,md,png}`` whose ``command`` regenerates it:
``throughput`` (env steps/s of gymjax's stacks, its adapters and their peers,
the MuJoCo C ceilings, ``--interleave``, ``--profile``), ``catalog`` (every
MuJoCo task against EnvPool, in and out of ``jit``, and MuJoCo's batch engine; MJX with ``--mjx``),
``single`` (one ``gymnasium.make`` env against Gymnasium's own, with the split of its step),
``training`` (PPO learning against the peers), ``distributed`` (PPO across
processes) and ``page`` (``results/README.md`` from the records' summaries).
:mod:`benchmarks.common` holds what they share: the record and its writer, the
process runner, interleaved timing. Peers (Brax, EnvPool, ...) are optional: a
missing one is reported as skipped.

benchmarks/ imports gymjax; gymjax never imports benchmarks/.
"""
