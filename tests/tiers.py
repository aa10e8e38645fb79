"""Which of a parametrized test's cases run in `make test`, the rest in `make test-slow`."""

import pytest


def slow_unless(kept, cases, key=lambda case: case[0] if isinstance(case, tuple) else case):
    """``cases`` as pytest params (a tuple is a case's arguments), each marked ``slow`` unless its
    ``key`` (its first argument) is in ``kept``: the ones `make test` runs, one of each kind."""
    return [pytest.param(*(case if isinstance(case, tuple) else (case,)),
                         marks=[] if key(case) in kept else [pytest.mark.slow]) for case in cases]
