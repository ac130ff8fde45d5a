"""Bad input and hostile files: every bad value a clear error, every file written whole and
never through a symlink, nothing trusted that another user controls."""
import os
import signal

import pytest

from cli_util import PY, REAPER, reaper


def test_more_finders_than_the_limit_is_a_usage_error():
    args = []
    for i in range(40):
        args += ["--home", "/nonexistent/reaper-home-%d" % i]
    for sub in ("scan", "reap"):
        r = reaper(sub, *args)
        assert r.returncode == 64, (sub, r.returncode, r.stderr)
        assert b"too many finders" in r.stderr
    # 32 is allowed (none of them matches anything)
    r = reaper("scan", *args[:64])
    assert r.returncode == 1, r.stderr


@pytest.mark.parametrize("flag,value", [
    ("--timeout", "abc"), ("--timeout", "-3"), ("--grace", "2w"), ("--grace", "nan"),
    ("--leak-exit-code", "64"), ("--leak-exit-code", "0"),
])
def test_reap_bad_flag_values_are_usage_errors(flag, value):
    r = reaper("reap", "--home", "/nonexistent/reaper-home", flag, value)
    assert r.returncode == 64, r.stderr
    first = r.stderr.splitlines()[0].decode()
    assert flag in first and "'%s'" % value in first, first
