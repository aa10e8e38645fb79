"""The cheap cases of the third-party client table (benchmarks/clients.py), run in CI.

Each case is unmodified client code (Gymnasium, SB3, PettingZoo: the ``dev`` extra) run by the
same function as in the table, in a fresh process with a timeout, so a hang or a crash fails
that case alone. A client that is not installed skips its case. A case with ``refused=`` passes
only when it fails with that named error (a documented refusal, such as a fork after JAX started).
"""

import pytest

from benchmarks import clients

CHEAP = [case for case in clients.CASES if case.cheap]


@pytest.mark.parametrize("case", CHEAP, ids=[case.name for case in CHEAP])
def test_client_runs_unmodified(case):
    result = clients.run_case(case)
    if result["status"] == "skipped":
        pytest.skip(result["error"])
    expected = "refused" if case.refused is not None else "pass"
    assert result["status"] == expected, f"{result['error']} (raised at {result['origin']})"
