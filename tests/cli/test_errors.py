# SPDX-License-Identifier: MIT
"""A report that cannot be written, `reaper run` with the report flags, and --help against
the man page."""
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from cli_util import by_pid, load_json, reaper
from procutil import PY, REAPER, ROOT, environ, wait_gone


def test_unwritable_report_other_outputs_still_written(spawn, home, tmp_path):
    p = spawn.sleeper()
    junit = tmp_path / "r.xml"
    bad = tmp_path / "no-such-dir" / "r.json"
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "2", "--report", str(bad), "--junit", str(junit),
               env={"GITHUB_ACTIONS": "true"})
    # a leak decides the status; the error is said, and nothing else is lost
    assert r.returncode == 23, r.stderr
    assert b"reaper: error: cannot write the JSON report %s: No such file or directory" % str(bad).encode() in r.stderr
    assert b"SUMMARY: 1 leaked" in r.stderr
    assert r.stdout.startswith(b"::error title=process leak::pid %d" % p.pid)
    assert not p.alive
    ts = ET.parse(junit).getroot().find("testsuite")
    assert ts.get("failures") == "1"
    # nothing leaked: the unwritable report alone makes the status 74
    r = reaper("reap", "--home", home, "--timeout", "0", "--report", str(bad), "--junit", str(junit))
    assert r.returncode == 74, r.stderr
    assert b"cannot write the JSON report" in r.stderr
    assert ET.parse(junit).getroot().find("testsuite").get("failures") == "0"
    r = reaper("scan", "--home", home, "--junit", str(tmp_path))  # a directory
    assert r.returncode == 74 and b"cannot write the JUnit report" in r.stderr


def test_run_takes_the_report_flags(home, tmp_path):
    report, junit, pidfile = tmp_path / "r.json", tmp_path / "r.xml", tmp_path / "pid"
    # the leftover lets go of the captured stdout/stderr, or run() would wait for it
    code = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    n = os.open('/dev/null', os.O_RDWR)\n"
            "    for fd in (0, 1, 2): os.dup2(n, fd)\n    open(%r, 'w').write(str(os.getpid()))\n"
            "    time.sleep(600)\n    os._exit(0)\nwhile not os.path.exists(%r): time.sleep(0.01)\n" % (str(pidfile), str(pidfile)))
    r = reaper("run", "--home", home, "--timeout", "0.2", "--grace", "2", "--report", str(report), "--junit", str(junit),
               "--allow", "*never*", "--", PY, "-c", code)
    assert r.returncode == 23, r.stderr
    leaked = int(pidfile.read_text())
    rep = load_json(report)
    assert rep["command"] == "run"
    assert by_pid(rep)[leaked]["fate"] == "terminated"
    assert rep["patterns"][0]["pattern"] == "*never*"
    assert ET.parse(junit).getroot().find("testsuite").get("failures") == "1"
    assert b"SUMMARY: 1 leaked" in r.stderr
    # report-only under run: the leftover stays; the test cleans it up through a pidfd
    pidfile.unlink()
    r = reaper("run", "--home", home, "--timeout", "0", "--report-only", "--keep", "*nomatch*", "--", PY, "-c", code)
    assert r.returncode == 23, r.stderr
    left = int(pidfile.read_text())
    fd = os.pidfd_open(left)
    try:
        assert b"HOME=" + home.encode() in environ(left)
        import signal
        signal.pidfd_send_signal(fd, signal.SIGKILL)
        assert not wait_gone([fd], 10)
    finally:
        os.close(fd)
    r = reaper("run", "--allow-file", str(tmp_path / "missing"), "--", "true")
    assert r.returncode == 64 and b"usage: reaper run" in r.stderr


def test_every_message_begins_with_the_tool_name(tmp_path):
    """Each line reaper writes on stderr starts 'reaper: ', for run, scan and reap alike: usage
    errors, refusals and failures (the usage synopsis and the pointer to --help that follow a
    usage error aside)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    cases = [
        (("run", "--marker", "=x", "--", "true"), 64),
        (("run", "--home", "relative", "--", "true"), 64),
        (("run", "--home", str(shared), "--", "true"), 64),
        (("run", "--", str(tmp_path / "missing")), 127),
        (("scan", "--env", "x"), 64),
        (("scan", "--timeout", "1", "--env", "A=b"), 64),
        (("reap", "--json", "--env", "A=b"), 64),
        (("reap", "--bogus"), 64),
    ]
    for args, code in cases:
        r = reaper(*args)
        assert r.returncode == code, (args, r.stderr)
        said = [x for x in r.stderr.decode().splitlines() if not x.startswith(("usage: ", " ", "Try 'reaper"))]
        assert said and all(x.startswith("reaper: ") for x in said), (args, r.stderr)


def man_options(path):
    """Every \\fB\\-\\-name\\fR the page sets in bold."""
    text = open(path).read()
    return {m.replace("\\-", "-") for m in re.findall(r"\\fB\\-\\-((?:[a-z]|\\-)+)\\fR", text)}


def help_options():
    out = subprocess.run([REAPER, "--help"], capture_output=True, check=True).stdout.decode()
    return set(re.findall(r"(?<![\w-])--([a-z][a-z-]*)", out)), out


def test_help_agrees_with_man_page():
    man = man_options(os.path.join(ROOT, "man", "reaper.1"))
    helped, out = help_options()
    assert man == helped, (man ^ helped)
    text = open(os.path.join(ROOT, "man", "reaper.1")).read()
    for sub in ("run", "scan", "reap"):
        assert "usage: reaper " + sub in out
        assert ".SS reaper %s" % sub in text or ".B reaper %s" % sub in text
    # every exit status the help names is in the man page
    for code in ("64", "74", "126", "127"):
        assert code in text
    assert "REAPER_TEST" in text and "NO_COLOR" in text and "GITHUB_ACTIONS" in text


def test_errors_are_worded_as_glibc_words_them_against_musl_too(tmp_path):
    """The command built against musl names every error as glibc does (musl/strerror.c), the
    ones it does not expect too: compared with this Python's strerror, glibc's."""
    musl = shutil.which("musl-gcc")
    if not musl:
        pytest.skip("no musl-gcc")
    main = tmp_path / "words.c"
    main.write_text('#include <stdio.h>\nchar *musl_strerror(int e);\n'
                    'int main(void) { for (int e = -1; e < 140; e++) printf("%d\\t%s\\n", e, musl_strerror(e)); }\n')
    exe = tmp_path / "words"
    subprocess.run([musl, "-static", "-o", str(exe), str(main), str(ROOT / "musl" / "strerror.c")], check=True)
    got = dict(line.split("\t", 1) for line in subprocess.run([str(exe)], capture_output=True, text=True,
                                                             check=True).stdout.splitlines())
    wrong = {e: (w, os.strerror(int(e))) for e, w in got.items() if w != os.strerror(int(e))}
    assert not wrong, wrong
