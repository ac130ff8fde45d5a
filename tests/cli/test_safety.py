# SPDX-License-Identifier: MIT
"""Bad input and hostile files: every bad value a clear error, every file written whole and
never through a symlink, nothing trusted that another user controls."""
import os
import signal

import pytest

from cli_util import SLEEPER, reaper
from procutil import PY, REAPER, stat


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
    # below the smallest normal double: out of range whatever the libc's strtod says
    ("--timeout", "4.9e-324"), ("--grace", "1e-310ms"), ("--timeout", "1e-400"),
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


@pytest.mark.parametrize("flag", ["--report", "--junit"])
def test_report_whose_name_is_near_the_name_limit_is_written(home, tmp_path, flag):
    """The temporary name beside it must fit NAME_MAX too: any name the path may have works."""
    (tmp_path / "out").mkdir()
    path = tmp_path / "out" / ("r" * 255)
    r = reaper("scan", "--home", home, flag, str(path))
    assert r.returncode == 1, r.stderr  # nothing matched, the file written
    assert path.stat().st_size > 0
    assert os.listdir(tmp_path / "out") == [path.name]


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


def test_home_under_a_directory_another_user_controls_is_refused(tmp_path):
    """The owner of a parent can swap DIR after the check: nobody renames root's new DIR away and
    puts a directory of their own at the path, which then becomes root's HOME."""
    need_root()
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, nobody().pw_uid, nobody().pw_gid)
    swap = ("setpriv --reuid=%d --regid=%d --clear-groups sh -c 'mv %s/b %s/old && mkdir -p %s/b/c'; "
            "stat -c %%u \"$HOME\"") % (nobody().pw_uid, nobody().pw_gid, theirs, theirs, theirs)
    r = reaper("run", "--home", str(theirs / "b" / "c"), "--", "/bin/sh", "-c", swap)
    assert r.returncode == 64, (r.stdout, r.stderr)
    assert r.stdout == b""
    assert b"refused: a parent directory is owned by another user" in r.stderr, r.stderr
    # through a symlink to it, or a symlink of nobody's, or a group-writable parent: refused too
    (tmp_path / "link").symlink_to(theirs)
    r = reaper("run", "--home", str(tmp_path / "link" / "x"), "--", "/bin/true")
    assert r.returncode == 64 and b"owned by another user" in r.stderr, r.stderr
    ours = tmp_path / "ours"
    ours.mkdir(mode=0o755)
    (tmp_path / "their-link").symlink_to(ours)
    os.chown(tmp_path / "their-link", nobody().pw_uid, nobody().pw_gid, follow_symlinks=False)
    r = reaper("run", "--home", str(tmp_path / "their-link" / "x"), "--", "/bin/true")
    assert r.returncode == 64 and b"another user's symlink" in r.stderr, r.stderr
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o775)
    r = reaper("run", "--home", str(shared / "x"), "--", "/bin/true")
    assert r.returncode == 64 and b"writable by group or others (and not sticky)" in r.stderr, r.stderr
    assert not (shared / "x").exists() and not (theirs / "x").exists() and not (ours / "x").exists()
    # a symlink of ours on the way and a sticky world-writable parent (like /tmp) are fine
    (tmp_path / "our-link").symlink_to("ours")
    os.chmod(shared, 0o1777)
    for home in (tmp_path / "our-link" / "x", shared / "y"):
        r = reaper("run", "--home", str(home), "--", "/bin/sh", "-c", 'echo "$HOME"')
        assert r.returncode == 0 and r.stdout == b"%s\n" % str(home).encode(), r.stderr


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


# A recursive tree report took about 900 bytes of stack per level: 12,000 levels overflowed
# the usual 8 MB stack. Forking a chain costs more per level the deeper it is on some kernels
# (minutes for 12,000 on a busy VM), so the chain here is 1,500 deep and reaper gets a 512 KB
# stack: a recursion overflows it at about 580 levels, a loop never does.
DEPTH = 1500
STACK = 512 * 1024


def live_in_group(pgid):
    return sum(1 for d in os.listdir("/proc")
               if d.isdigit() and (s := stat(int(d))) and s["pgrp"] == pgid and s["state"] != "Z")


def test_human_report_of_a_deep_chain(spawn, home, tmp_path):
    """A chain of leftovers far deeper than a call stack allows: the tree report recursed once
    per level and ended reaper with SIGSEGV before the JSON was written and the status set."""
    import json
    import resource
    import subprocess
    import time
    with open("/proc/sys/kernel/pid_max") as f:
        room = int(f.read()) - sum(1 for d in os.listdir("/proc") if d.isdigit())
    if room < DEPTH + 2000:
        pytest.skip("pid_max leaves room for %d more processes, not %d" % (room, DEPTH + 2000))
    ready = tmp_path / "ready"
    first = spawn.orphan([os.path.join(os.path.dirname(REAPER), "fixtures", "deepchain"), str(DEPTH), str(ready)])
    # the chain is one process group (the orphan's, kept while first lives): cleaned up by it
    pgid = os.getpgid(first.pid)
    assert first.alive and pgid != os.getpgid(0)
    try:
        deadline = time.monotonic() + 900
        while not ready.exists() and time.monotonic() < deadline and first.alive:
            time.sleep(0.05)
        assert ready.read_text() == "%d\n" % DEPTH, "the chain did not grow to %d" % DEPTH
        report = tmp_path / "r.json"
        env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "REAPER_TIMEOUT")}
        r = subprocess.run([REAPER, "reap", "--home", home, "--timeout", "0", "--report-only", "--report", str(report)],
                           capture_output=True, env=env, timeout=900,
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_STACK, (STACK, STACK)))
        assert r.returncode == 23, (r.returncode, r.stderr[-2000:])
        assert b"reaper: %d processes left behind" % DEPTH in r.stderr
        assert b"SUMMARY: %d leaked" % DEPTH in r.stderr
        assert len(json.loads(report.read_text())["processes"]) == DEPTH
    finally:
        if first.alive:
            os.killpg(pgid, signal.SIGKILL)
        deadline = time.monotonic() + 900
        while live_in_group(pgid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert live_in_group(pgid) == 0


def orphan_as_nobody(spawn, env):
    """A sleeping python3 of the nobody user, double-forked and setsid, so it is no descendant
    of ours; tracked (pidfd) by spawn for cleanup. It runs a system binary from /, so nothing
    of the checkout needs to be reachable for nobody."""
    return spawn.orphan([PY, "-c", SLEEPER, "foreign-sleeper"], env=env, cwd="/", user=nobody())


def test_root_leaves_another_users_marker_only_match_alone(spawn, tmp_path):
    """As root, a process of nobody that carries the guessable marker (HOME=DIR) but is neither
    a descendant nor in the run's cgroup is reported as foreign, not signalled; --any-user
    signals it like any other."""
    need_root()
    home = "/tmp/reaper-foreign-%d" % os.getpid()  # never created: a marker is only a string
    p = orphan_as_nobody(spawn, {"PATH": "/usr/bin:/bin", "HOME": home})
    report = tmp_path / "r.json"
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "0", "--report", str(report))
    assert r.returncode == 0, r.stderr
    assert p.alive
    import json
    doc = json.loads(report.read_text())
    (proc,) = [x for x in doc["processes"] if x["pid"] == p.pid]
    assert proc["fate"] == "foreign" and proc["leak"] is False
    assert doc["summary"]["foreign"] == 1 and doc["summary"]["leaks"] == 0
    assert b"FOREIGN (foreign)" in r.stderr and b"1 foreign" in r.stderr
    # a scan says so too
    r = reaper("scan", "--home", home, "--json")
    assert [x["fate"] for x in json.loads(r.stdout)["processes"] if x["pid"] == p.pid] == ["foreign"]
    # and reaper run, whose own marker and tree do not reach it
    r = reaper("run", "--home", str(tmp_path / "h"), "--marker", "HOME=" + home, "--timeout", "0", "--grace", "0",
               "--", "true")
    assert r.returncode == 0, r.stderr
    assert p.alive
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "0", "--any-user")
    assert r.returncode == 23, r.stderr
    assert not p.alive


def test_the_command_is_position_independent_and_loads_where_it_says():
    """ASLR: the command is a PIE (ELF type ET_DYN), so the kernel maps it at a random address
    each run; a static link is a static PIE (no loader asked for), and a dynamic one asks for a
    loader this machine has (a static link's flags lost on the way give a PIE asking for one
    that is not there)."""
    with open(REAPER, "rb") as f:
        elf = f.read()
    num = lambda at, size: int.from_bytes(elf[at:at + size], "little")  # noqa: E731
    assert elf[:4] == b"\x7fELF" and elf[4] == 2, "a 64-bit ELF"
    assert num(16, 2) == 3, "ET_DYN: a PIE, mapped at a random address"
    phoff, phentsize, phnum = num(32, 8), num(54, 2), num(56, 2)
    for ph in range(phoff, phoff + phentsize * phnum, phentsize):
        if num(ph, 4) == 3:  # PT_INTERP
            loader = elf[num(ph + 8, 8):num(ph + 8, 8) + num(ph + 32, 8)].rstrip(b"\0").decode()
            assert os.path.exists(loader), f"asks for a loader that is not here: {loader}"
