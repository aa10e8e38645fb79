"""Measures one stack in a process of its own: ``python -m benchmarks.worker SPEC.json``.

(``python -m benchmarks.worker --describe`` prints JAX's backend and devices.)

Started by :func:`benchmarks.harness.run_isolated`; the spec names the suite,
the stack, the sizes and the timing, and where to append the records (one
JSON line per size, or one per trainer). Its peak memory is the stack's alone.
"""

from __future__ import annotations

import json
import sys
import warnings

from benchmarks.harness import describe_jax, record_writer
from benchmarks.suites import SUITES


def main(argv: list[str]) -> int:
    if argv == ["--describe"]:  # JAX's backend and devices, for the parent (see describe_jax_elsewhere)
        print(json.dumps(describe_jax()))
        return 0
    spec = json.loads(open(argv[0]).read())
    suite = SUITES[spec["suite"]]
    stacks = {s.name: s for s in suite.STACKS}
    if spec["stack"] not in stacks:
        raise SystemExit(f"benchmarks.worker: no stack {spec['stack']!r} in suite {spec['suite']!r}")
    stack = stacks[spec["stack"]]
    warnings.simplefilter("ignore")  # peers' deprecation notices would bury a failure's traceback
    suite.work(stack, spec, record_writer(spec["records"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
