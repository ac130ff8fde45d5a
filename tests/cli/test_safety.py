# SPDX-License-Identifier: MIT
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


def need_root():
    if os.geteuid() != 0:
        pytest.skip("needs root: directories owned by another user (nobody) and a chown")


def nobody():
    import pwd
    return pwd.getpwnam("nobody")


def test_home_symlink_to_a_world_writable_directory_of_nobody_is_refused(tmp_path):
    """The reproduction: a symlink to nobody's world-writable directory became root's HOME."""
    need_root()
    planted = tmp_path / "planted"
    planted.mkdir()
    os.chown(planted, nobody().pw_uid, nobody().pw_gid)
    os.chmod(planted, 0o777)
    (planted / ".profile").write_text("echo ran-the-rc-file\n")
    link = tmp_path / "home"
    link.symlink_to(planted)
    r = reaper("run", "--home", str(link), "--", "/bin/sh", "-c", "echo ran")
    assert r.returncode == 64, r.stderr
    assert r.stdout == b""
    assert b"--home %s refused: it is a symlink" % str(link).encode() in r.stderr


@pytest.mark.parametrize("rule", ["owner", "group-writable", "other-writable", "not-a-directory"])
def test_home_breaking_a_rule_is_refused_naming_the_rule(tmp_path, rule):
    need_root()
    home = tmp_path / "home"
    if rule == "not-a-directory":
        home.write_text("")
    else:
        home.mkdir(mode=0o700)
    if rule == "owner":
        os.chown(home, nobody().pw_uid, nobody().pw_gid)
    elif rule == "group-writable":
        os.chmod(home, 0o770)
    elif rule == "other-writable":
        os.chmod(home, 0o1703)  # sticky or not: others can put files there
    r = reaper("run", "--home", str(home), "--", "/bin/sh", "-c", "echo ran")
    assert r.returncode == 64, r.stderr
    assert r.stdout == b""
    want = {"owner": b"not owned by root", "group-writable": b"writable by group or others",
            "other-writable": b"writable by group or others", "not-a-directory": b"not a directory"}[rule]
    assert want in r.stderr, r.stderr


def test_home_that_is_safe_or_missing_is_used(tmp_path):
    home = tmp_path / "own"
    home.mkdir(mode=0o755)
    r = reaper("run", "--home", str(home), "--", "/bin/sh", "-c", 'echo "$HOME"')
    assert r.returncode == 0 and r.stdout == b"%s\n" % str(home).encode(), r.stderr
    missing = tmp_path / "new" / "deeper"
    r = reaper("run", "--home", str(missing), "--", "/bin/sh", "-c", 'echo "$HOME"')
    assert r.returncode == 0 and r.stdout == b"%s\n" % str(missing).encode(), r.stderr
    for d in (missing, missing.parent):
        st = os.lstat(d)
        assert st.st_uid == os.geteuid() and st.st_mode & 0o7777 == 0o700


GUARDIAN_CHECK = r"""
import json, os, stat, sys, time
state, out = sys.argv[1], sys.argv[2]
deadline = time.monotonic() + 60
verdict = "no guardian_pid in the state document"
while time.monotonic() < deadline:
    try:
        g = json.load(open(state)).get("guardian_pid")
    except (OSError, ValueError):
        g = None
    if g:
        # the guardian holds its pipe from reaper on an fd above 2 for the whole run
        try:
            fds = [int(n) for n in os.listdir("/proc/%d/fd" % g)]
            if any(n > 2 and stat.S_ISFIFO(os.stat("/proc/%d/fd/%d" % (g, n)).st_mode) for n in fds):
                verdict = "guardian holds its pipe"
                break
            verdict = "guardian without its pipe"
        except OSError:
            verdict = "guardian gone"
    time.sleep(0.02)
open(out, "w").write(verdict)
"""


def test_started_with_fds_0_to_2_closed_the_guardian_lives(tmp_path):
    """With 0-2 closed, the guardian's pipe landed on one of them and was replaced by /dev/null:
    the guardian saw EOF at once, took it for reaper's death and killed the run."""
    state, out = tmp_path / "state.json", tmp_path / "verdict"
    script = tmp_path / "check.py"
    script.write_text(GUARDIAN_CHECK)
    import subprocess
    p = subprocess.run(["/bin/sh", "-c", 'exec "$0" run --state "$1" -- "$2" "$3" "$1" "$4" <&- >&- 2>&-',
                        REAPER, str(state), PY, str(script), str(out)], timeout=120)
    assert out.read_text() == "guardian holds its pipe"
    assert p.returncode == 0
