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


@pytest.mark.parametrize("flag", ["--report", "--junit"])
def test_report_over_a_symlink_replaces_the_link_not_its_target(spawn, home, tmp_path, flag):
    """A symlink planted at the report path is replaced; the file it points at is untouched."""
    target = tmp_path / "victim"
    target.write_text("precious\n")
    link = tmp_path / "report"
    link.symlink_to(target)
    spawn.sleeper()
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "0", flag, str(link))
    assert r.returncode == 23, r.stderr
    assert target.read_text() == "precious\n"
    assert not link.is_symlink() and link.is_file()
    text = link.read_text()
    assert ("reaper-report/1" in text) if flag == "--report" else text.startswith("<?xml")
    assert sorted(os.listdir(tmp_path)) == ["home", "report", "victim"]  # no temporary file left


def test_report_is_replaced_whole_not_rewritten_in_place(home, tmp_path):
    """A reader holding the old report keeps reading all of it: the new one is a new file
    renamed over the path, never the old one truncated and written again."""
    path = tmp_path / "r.json"
    path.write_text("old report " * 1000)
    with open(path) as old:
        ino = os.fstat(old.fileno()).st_ino
        r = reaper("scan", "--home", home, "--report", str(path))
        assert r.returncode == 1, r.stderr
        assert old.read() == "old report " * 1000
    assert os.stat(path).st_ino != ino
    assert "reaper-report/1" in path.read_text()


def test_state_document_over_a_symlink_replaces_the_link(tmp_path):
    target = tmp_path / "victim"
    target.write_text("precious\n")
    link = tmp_path / "state.json"
    link.symlink_to(target)
    r = reaper("run", "--state", str(link), "--", "true")
    assert r.returncode == 0, r.stderr
    assert target.read_text() == "precious\n"
    assert not link.is_symlink() and oct(os.stat(link).st_mode & 0o777) == "0o600"
    assert sorted(os.listdir(tmp_path)) == ["state.json", "victim"]
