"""The cheap cases of the third-party client table (benchmarks/clients.py) run in CI.

Each case is unmodified client code (Gymnasium, SB3, PettingZoo: the ``dev`` extra) run in a
fresh process, so a hang or a crash in one fails that case alone.
"""

import pytest

from benchmarks import clients

CHEAP = [case for case in clients.CASES if case.cheap]


@pytest.mark.parametrize("case", CHEAP, ids=[case.name for case in CHEAP])
def test_client_runs_unmodified(case):
    result = clients.run_case(case)
    if result["status"] == "skipped":
        pytest.skip(result["error"])
    assert result["status"] == "pass", result["error"]
