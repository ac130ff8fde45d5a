# SPDX-License-Identifier: MIT
"""Configuration by flag and environment, usage errors, exec failures.
The settings in effect are read back from the state document; the leak exit code is also
shown by behaviour."""
import json
import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import script
from procutil import REAPER


def warnings(text):
    return [l for l in text.splitlines() if "warning" in l]


CASES = [
    # (flags, environment, timeout, grace, leak code, words every warning line must hold)
    ([], {}, 10, 5, 23, None),
    ([], {"REAPER_TIMEOUT": "3", "REAPER_GRACE": "250ms", "REAPER_LEAK_EXIT_CODE": "42"}, 3, 0.25, 42, None),
    (["--timeout", "1.5", "--grace", "1m", "--leak-exit-code", "43"],
     {"REAPER_TIMEOUT": "3", "REAPER_GRACE": "2", "REAPER_LEAK_EXIT_CODE": "42"}, 1.5, 60, 43, None),
    ([], {"REAPER_TIMEOUT": "abc"}, 10, 5, 23, ["REAPER_TIMEOUT", "abc"]),
    ([], {"REAPER_TIMEOUT": "nan"}, 10, 5, 23, ["REAPER_TIMEOUT", "nan"]),
    (["--timeout", "2h", "--grace", "0.5m"], {}, 7200, 30, 23, None),
    (["--timeout", "1d", "--grace", "1h"], {}, 86400, 3600, 23, None),
    (["--timeout", "250ms", "--grace", "1.5s"], {}, 0.25, 1.5, 23, None),
    ([], {"REAPER_TIMEOUT": "-1"}, 0, 5, 23, ["REAPER_TIMEOUT", "out of range"]),
    ([], {"REAPER_LEAK_EXIT_CODE": "64"}, 10, 5, 23, ["REAPER_LEAK_EXIT_CODE", "64"]),
    ([], {"REAPER_LEAK_EXIT_CODE": "200"}, 10, 5, 125, ["REAPER_LEAK_EXIT_CODE", "out of range"]),
    ([], {"REAPER_LEAK_EXIT_CODE": "x12"}, 10, 5, 23, ["REAPER_LEAK_EXIT_CODE", "x12"]),
    ([], {"REAPER_TIMEOUT": "", "REAPER_LEAK_EXIT_CODE": ""}, 10, 5, 23, None),  # empty: not set
]


@pytest.mark.parametrize("flags,env,timeout,grace,leak,warn", CASES)
def test_settings_from_flags_and_environment(run, flags, env, timeout, grace, leak, warn):
    r = run(flags, ["true"], env=env)
    assert r.wait(30) == 0, r.stderr
    doc = r.state()
    assert (doc["timeout"], doc["grace"], doc["leak_exit_code"]) == (timeout, grace, leak)
    got = warnings(r.stderr)
    if warn is None:
        assert got == []
    else:
        assert len(got) == 1, r.stderr
        for word in warn:
            assert word in got[0]


LEAK = "import os\nif os.fork() == 0:\n    os.setsid()\n    import time; time.sleep(300)\n"


def test_leak_exit_code_from_environment_and_flag(run):
    r = run(["--timeout", "0", "--grace", "0"], script(LEAK), env={"REAPER_LEAK_EXIT_CODE": "42"})
    assert r.wait(30) == 42, r.stderr
    r = run(["--timeout", "0", "--grace", "0", "--leak-exit-code", "43"], script(LEAK),
            env={"REAPER_LEAK_EXIT_CODE": "42"})
    assert r.wait(30) == 43, r.stderr


def test_failed_command_status_wins_over_the_leak_code(run):
    r = run(["--timeout", "0", "--grace", "0"], script(LEAK + "raise SystemExit(4)\n"))
    assert r.wait(30) == 4, r.stderr
    assert r.state()["leaks"] == 1


def test_state_path_from_environment_and_flag_precedence(run, tmp_path):
    env_path, flag_path = tmp_path / "env.json", tmp_path / "flag.json"
    r = run([], ["true"], state=False, env={"REAPER_STATE": str(env_path)})
    assert r.wait(30) == 0
    assert env_path.exists()
    env_path.unlink()
    r = run(["--state", str(flag_path)], ["true"], state=False, env={"REAPER_STATE": str(env_path)})
    assert r.wait(30) == 0
    assert flag_path.exists() and not env_path.exists()


def test_nested_run_does_not_inherit_the_state_path(run, tmp_path):
    """REAPER_STATE names this reaper's document; a reaper run inside COMMAND must not take it
    over (the other settings are inherited on purpose)."""
    path = tmp_path / "outer.json"
    r = run([], script("""
        import os
        print(os.environ.get("REAPER_STATE"), os.environ.get("REAPER_GRACE"), flush=True)
    """), state=False, env={"REAPER_STATE": str(path), "REAPER_GRACE": "2"})
    assert r.line() == "None 2"
    assert r.wait(30) == 0
    assert path.exists()


def test_command_environment_sets_each_name_once(run, tmp_path):
    """COMMAND's environment is built before its start: HOME, REAPER_RUN and each --marker
    appear once, with the run's value, whatever the caller's environment held for them."""
    home = tmp_path / "home"
    r = run(["--home", str(home), "--marker", "FOO=new"], script("""
        import json, os
        env = open("/proc/self/environ", "rb").read().split(b"\\0")
        names = [e.split(b"=", 1)[0].decode() for e in env if e]
        print(json.dumps({n: names.count(n) for n in ("HOME", "FOO", "REAPER_RUN", "KEEP")}), flush=True)
        print(os.environ["HOME"], os.environ["FOO"], os.environ["REAPER_RUN"], os.environ["KEEP"], flush=True)
    """), env={"FOO": "old", "REAPER_RUN": "outer", "KEEP": "kept"})
    assert json.loads(r.line()) == {"HOME": 1, "FOO": 1, "REAPER_RUN": 1, "KEEP": 1}
    assert r.line() == "%s new %s kept" % (home, r.state()["run_id"])
    assert r.wait(30) == 0, r.stderr


@pytest.mark.parametrize("argv", [
    [],
    ["--"],
    ["--timeout", "1"],
    ["--bogus", "--", "true"],
    ["--marker", "novalue", "--", "true"],
    ["--marker", "=x", "--", "true"],
    ["--home", "relative/dir", "--", "true"],
    ["--timeout"],
])
def test_usage_errors_exit_64(argv):
    p = subprocess.run([REAPER, "run"] + argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    assert p.returncode == 64
    assert b"usage:" in p.stderr


@pytest.mark.parametrize("flag,value", [
    ("--timeout", "abc"), ("--timeout", "2x"), ("--timeout", ""), ("--timeout", "nan"), ("--timeout", "inf"),
    ("--timeout", "-1"), ("--timeout", "2d"), ("--timeout", "0x10"), ("--grace", "soon"), ("--grace", "99999"),
    ("--grace", "-0.5"), ("--leak-exit-code", "64"), ("--leak-exit-code", "1"), ("--leak-exit-code", "126"),
    ("--leak-exit-code", ""), ("--leak-exit-code", "x12"),
    # strtod/strtol skip leading blanks; a value that is refused with a trailing blank is refused
    # with a leading one too
    ("--timeout", " 5"), ("--timeout", "\t5s"), ("--grace", " 1"), ("--leak-exit-code", " 23"),
])
def test_bad_flag_values_are_usage_errors_naming_flag_and_value(flag, value):
    """A bad or out-of-range flag value is never replaced by a default: the command does not
    run, and the message names the flag and the value."""
    p = subprocess.run([REAPER, "run", flag, value, "--", "/bin/sh", "-c", "echo ran"],
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    assert p.returncode == 64, p.stderr
    assert p.stdout == b""
    line = p.stderr.splitlines()[0].decode()
    assert flag in line and "'%s'" % value in line, line


def test_help_is_not_an_error():
    p = subprocess.run([REAPER, "run", "--help"], capture_output=True, timeout=30)
    assert p.returncode == 0 and b"usage:" in p.stdout


def exec_failure(run, argv, code, reason):
    r = run([], argv)
    assert r.wait(30) == code
    lines = [l for l in r.stderr.splitlines() if argv[0] in l]
    assert lines and reason in lines[0], r.stderr
    doc = r.state()
    assert doc["runner_exit_code"] == code and doc["phase"] == "exited"


def test_not_found_is_127(run, tmp_path):
    exec_failure(run, [str(tmp_path / "no-such-program")], 127, "No such file or directory")
    exec_failure(run, ["no-such-program-%d" % os.getpid()], 127, "No such file or directory")


@pytest.fixture
def unsearchable(tmp_path):
    """A user that cannot search one directory: (reaper to run, Popen options, that directory,
    a directory it can search). Root searches everything, so as root that user is nobody,
    running a private copy of reaper (nobody may not reach this checkout); otherwise it is us
    with a directory of mode 0."""
    if os.geteuid() != 0:
        hidden, shown = tmp_path / "hidden", tmp_path / "bin"
        hidden.mkdir(mode=0o700)
        shown.mkdir()
        hidden.chmod(0)
        yield REAPER, {}, str(hidden), str(shown)
        hidden.chmod(0o700)
        return
    hidden = tmp_path  # root's 0700 directory
    private = tempfile.mkdtemp(prefix="reaper-test-")
    try:
        os.chmod(private, 0o711)
        reaper = os.path.join(private, "reaper")
        shutil.copy(REAPER, reaper)
        os.chmod(reaper, 0o755)
        yield reaper, {"user": 65534, "group": 65534, "extra_groups": [], "cwd": "/"}, str(hidden), private
    finally:
        shutil.rmtree(private)


def test_unsearchable_path_directory_is_not_found(run, unsearchable):
    reaper, as_user, hidden, shown = unsearchable
    path = "%s:/usr/bin:/bin:%s" % (hidden, shown)
    name = "no-such-program-%d" % os.getpid()
    r = run(None, [reaper, "run", "--", name], state=False, env={"PATH": path}, **as_user)
    assert r.wait(30) == 127, r.stderr
    line = [l for l in r.stderr.splitlines() if name in l][0]
    assert "not found in PATH" in line and "No such file or directory" in line and hidden in line, line
    # found after the directory it cannot search: runs
    r = run(None, [reaper, "run", "--", "true"], state=False, env={"PATH": path}, **as_user)
    assert r.wait(30) == 0, r.stderr
    # found, but not executable: 126, naming the file
    f = os.path.join(shown, "not-executable-%d" % os.getpid())
    with open(f, "w") as out:
        out.write("#!/bin/sh\nexit 0\n")
    os.chmod(f, 0o644)
    r = run(None, [reaper, "run", "--", os.path.basename(f)], state=False, env={"PATH": path}, **as_user)
    assert r.wait(30) == 126, r.stderr
    line = [l for l in r.stderr.splitlines() if os.path.basename(f) in l][0]
    assert f in line and "Permission denied" in line, line


def test_a_file_without_an_interpreter_line_runs_through_sh_with_a_long_argument_list(run, tmp_path):
    """A file the kernel cannot run as a program is run by /bin/sh, its argument list copied
    onto the stack of the child that starts it: 100,000 arguments (800 KB of pointers) still
    fit, with the run's cgroup (COMMAND starts on a stack of its own there) and without."""
    f = tmp_path / "no-interpreter-line"
    f.write_text('echo "$#"\n')
    os.chmod(f, 0o755)
    args = [str(i) for i in range(100000)]
    for mode in ("auto", "off"):
        r = run(["--cgroup", mode], [str(f)] + args)
        assert r.wait(60) == 0, (mode, r.stderr[-2000:])
        assert r.out.strip() == "100000", (mode, r.out[-200:])


def test_not_executable_is_126(run, tmp_path):
    f = tmp_path / "not-executable.sh"
    f.write_text("#!/bin/sh\nexit 0\n")
    os.chmod(f, 0o644)
    exec_failure(run, [str(f)], 126, "Permission denied")
    exec_failure(run, [str(tmp_path)], 126, "Is a directory")
