"""The suites: ``env``, ``adapters`` (training is ``benchmarks.training``).

Each module has ``NAME``, ``STACKS`` (:class:`~benchmarks.harness.Stack` s),
``INTERNAL_RATIOS``, ``default_sizes(quick, backend)`` and ``work(stack, spec,
emit)``, which measures one stack inside a worker process.
"""

from benchmarks.suites import adapters, env

SUITES = {module.NAME: module for module in (env, adapters)}
