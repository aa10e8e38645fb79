"""Third-party clients (Gymnasium, SB3, rl-zoo3, torchrl, CleanRL, PettingZoo, SBX, skrl, Tianshou,
Minari) running unmodified on gymjax envs: one test per case of ``cases.py``.

Each case runs in a fresh process with a timeout, its whole process group killed at the end, so
a hang or a crash fails that case alone. A client that is not installed skips its case. A case
with ``refused=`` passes only when it fails with that named error (a documented refusal, such as
a fork after JAX started); one with ``xfail=`` is an expected failure when it raises the client's
own error, which its Gymnasium reference case shows is not gymjax's.

Plain ``pytest`` (CI) runs the cheap cases, a few seconds each on the ``dev`` extra's clients.
The others are marked ``slow`` and deselected by ``addopts`` (``-m "not slow"``)::

    pytest tests/clients -m slow            # the slow cases alone
    pytest tests/clients -m "" -k torchrl   # every torchrl case
    CLEANRL_DIR=~/cleanrl/cleanrl nice pytest tests/clients -m "" --client-table docs/clients.md

The last runs every case (about ten minutes on 2 cores) and writes the docs' table from the run.
"""

import pytest

from .cases import CASES
from .runner import run


@pytest.mark.parametrize(
    "case", [pytest.param(case, id=case.name, marks=() if case.cheap else pytest.mark.slow) for case in CASES]
)
def test_client_runs_unmodified(case, client_rows):
    record = run(case)
    client_rows.append((case, record))
    if record.status == "skipped":
        pytest.skip(record.error)
    if case.xfail:
        assert record.status == "fail" and case.xfail in record.error, (
            f"expected the client's own error {case.xfail!r}, got {record.status}: {record.error}"
        )
        pytest.xfail(f"the client's own error: {record.error}")
    expected = "refused" if case.refused else "pass"
    assert record.status == expected, f"{record.status}: {record.error} (raised at {record.origin})"
