"""``--client-table PATH``: the client cases that ran, written as the docs' Markdown table."""

import pathlib
import shlex

import pytest

from . import runner


def pytest_addoption(parser):
    parser.addoption(
        "--client-table",
        metavar="PATH",
        help="write the table of the client cases run to PATH (docs/clients.md); give tests/clients as a path",
    )


@pytest.fixture(scope="session")
def client_rows(request):
    """The (case, record) pairs of this session, in the order they ran."""
    rows, setting = [], runner.setting()  # before the cases run, and before anyone edits the checkout
    yield rows
    path = request.config.getoption("--client-table")
    if path:
        command = shlex.join(["pytest", *request.config.invocation_params.args])
        pathlib.Path(path).write_text(runner.markdown(rows, command, setting))
