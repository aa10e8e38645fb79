"""The cheap cases of the third-party client table (benchmarks/clients.py), run in CI.

Each case is unmodified client code (Gymnasium, SB3, PettingZoo: the ``dev`` extra) run by the
same function as in the table, in a fresh process with a timeout, so a hang or a crash fails
that case alone. A client that is not installed skips its case.

``KNOWN_FAILURES`` are the cases that fail today because of gymjax; they are marked
``xfail(strict=False)`` and their mark goes when the fix lands (an XPASS in the ``-ra`` summary
says which marks to remove).
"""

import pytest

from benchmarks import clients

KNOWN_FAILURES = {
    "Gymnasium: wrappers.vector.NormalizeObservation(make_vec(id, 4, 'vector_entry_point')) [JaxCartPole-v0]": (
        "GymnasiumVectorEnv defaults to AutoresetMode.SAME_STEP; Gymnasium's "
        "VectorObservationWrapper.__init__ accepts only NEXT_STEP (SyncVectorEnv's default) or DISABLED"
    ),
    "Gymnasium: make_vec(id, 2, 'async') (fork, the default) [JaxCartPole-v0]": (
        "Gymnasium's AsyncVectorEnv builds a dummy env in the parent for its spaces; gymjax's "
        "Session.__init__ (jax.random.PRNGKey at wrappers/session.py:292) starts JAX there, so the forked "
        "workers refuse"
    ),
}

CHEAP = [case for case in clients.CASES if case.cheap]


def _param(case):
    marks = (
        [pytest.mark.xfail(strict=False, reason=KNOWN_FAILURES[case.name])]
        if case.name in KNOWN_FAILURES
        else []
    )
    return pytest.param(case, id=case.name, marks=marks)


def test_known_failures_name_cheap_cases():
    assert set(KNOWN_FAILURES) <= {case.name for case in CHEAP}


@pytest.mark.parametrize("case", [_param(case) for case in CHEAP])
def test_client_runs_unmodified(case):
    result = clients.run_case(case)
    if result["status"] == "skipped":
        pytest.skip(result["error"])
    assert result["status"] == "pass", f"{result['error']} (raised at {result['origin']})"
