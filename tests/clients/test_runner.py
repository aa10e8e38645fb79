"""The runner's own claims: a hang is killed and reported, a crash reported with its raise site."""

import dataclasses

from .cases import CASES
from .runner import ROOT, raise_site, run

SYNC_MAKE_VEC = next(case for case in CASES if case.scenario == "gymnasium_make_vec")


def test_a_hang_is_killed_and_reported():
    record = run(dataclasses.replace(SYNC_MAKE_VEC, timeout_s=0.5))  # killed while it imports gymjax
    assert (record.status, record.error) == ("hangs", "no result within 0.5 s (killed)")
    assert record.seconds < 5


def test_a_crash_is_reported_where_it_was_raised():
    record = run(dataclasses.replace(SYNC_MAKE_VEC, kwargs={"no_such_option": 1}))
    assert record.status == "fail"
    assert record.error.startswith("TypeError: gymnasium_make_vec() got an unexpected keyword argument")
    assert record.origin.startswith("tests/clients/scenarios.py:")


def test_the_origin_names_the_gymjax_frame_on_the_way():
    output = f"""Traceback (most recent call last):
  File "{ROOT}/gymjax/wrappers/gymnasium.py", line 10, in step
    return other.step(action)
  File "/venv/lib/python3.11/site-packages/torch/utils/dlpack.py", line 186, in from_dlpack
    raise BufferError("bool")
BufferError: bool
"""
    assert raise_site(output) == (
        "BufferError: bool",
        "torch/utils/dlpack.py:186 in from_dlpack (via gymjax/wrappers/gymnasium.py:10 in step)",
    )
