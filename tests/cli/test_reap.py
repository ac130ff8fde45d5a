# SPDX-License-Identifier: MIT
"""`reaper reap` after a suite that ran without the wrapper, and its JSON / JUnit / GitHub
outputs read back by real parsers."""
import json
import xml.etree.ElementTree as ET

from cli_util import SLEEPER, by_pid, load_json, reaper
from procutil import PY, wait_gone

WEIRD = b"q\"uote 'single' <lt> &amp; back\\slash\nnew line\ttab\x01\x1b[31mred\x7f \xff\xfe bad \xc3( end"


def test_reap_after_suite_kills_and_reports(spawn, home, tmp_path):
    polite = spawn.sleeper("polite")
    stubborn = spawn.sleeper("stubborn", stubborn=True)
    report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    r = reaper("reap", "--home", home, "--timeout", "0.2", "--grace", "0.5", "--report", str(report),
               "--junit", str(junit))
    assert r.returncode == 23, r.stderr
    assert not wait_gone([polite.fd, stubborn.fd], 5)
    rep = load_json(report)
    assert rep["schema"] == "reaper-report/1.2" and rep["command"] == "reap"
    procs = by_pid(rep)
    assert procs[polite.pid]["fate"] == "terminated"
    assert procs[stubborn.pid]["fate"] == "killed"
    assert rep["summary"]["leaks"] == 2 and rep["summary"]["escalated"] is True
    assert rep["summary"]["terminated"] == 1 and rep["summary"]["killed"] == 1
    assert rep["options"]["timeout"] == 0.2 and rep["options"]["grace"] == 0.5
    assert rep["leaks_per_test"] == [{"test": None, "leaks": 2}]

    suite = ET.parse(junit).getroot()
    assert suite.tag == "testsuites"
    ts = suite.find("testsuite")
    assert ts.get("name") == "reaper" and ts.get("failures") == "2" and ts.get("tests") == "2"
    cases = ts.findall("testcase")
    assert len(cases) == 2
    names = {c.get("name") for c in cases}
    # stable names: no pid, digits normalised; the pid is in the failure text
    assert any(n.startswith("leaked /usr/bin/pythonN -c") and "stubborn" in n and str(stubborn.pid) not in n
               for n in names), names
    for c in cases:
        assert c.get("classname") == "reaper"
        f = c.find("failure")
        assert f is not None and f.get("type") == "process leak"
        assert "cwd:" in f.text and "found by: env HOME=" + home in f.text


def test_reap_nothing_left_exits_0_with_passing_case(home, tmp_path):
    report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    r = reaper("reap", "--home", home, "--timeout", "0", "--report", str(report), "--junit", str(junit))
    assert r.returncode == 0, r.stderr
    assert r.stderr == b"", "a clean reap says nothing"
    rep = load_json(report)
    assert rep["summary"]["leaks"] == 0 and rep["processes"] == []
    ts = ET.parse(junit).getroot().find("testsuite")
    cases = ts.findall("testcase")
    assert len(cases) == 1 and cases[0].get("name") == "no leaked processes"
    assert cases[0].find("failure") is None and ts.get("failures") == "0"


def test_exit_in_time_is_not_a_leak(spawn, home, tmp_path):
    p = spawn.orphan([PY, "-c", "import time; time.sleep(1.5)"])
    report = tmp_path / "r.json"
    r = reaper("reap", "--home", home, "--timeout", "20", "--report", str(report))
    assert r.returncode == 0, r.stderr
    assert not p.alive
    rep = load_json(report)
    assert by_pid(rep)[p.pid]["fate"] == "exited" and by_pid(rep)[p.pid]["leak"] is False


def test_leak_exit_code_flag_env_and_bad_values(spawn, home):
    spawn.sleeper()
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "0", "--leak-exit-code", "42")
    assert r.returncode == 42, r.stderr
    spawn.sleeper()
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "0", env={"REAPER_LEAK_EXIT_CODE": "7"})
    assert r.returncode == 7, r.stderr
    # a bad flag value is a usage error and nothing is reaped; in the environment, a warning
    p = spawn.sleeper()
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "0", "--leak-exit-code", "nope")
    assert r.returncode == 64 and b"--leak-exit-code: 'nope' is not a usable exit code" in r.stderr
    assert p.alive
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "0", env={"REAPER_LEAK_EXIT_CODE": "nope"})
    assert r.returncode == 23 and b"REAPER_LEAK_EXIT_CODE: 'nope' is not a usable exit code" in r.stderr
    r = reaper("reap", "--home", home, "--timeout", "abc", "--grace", "99999")
    assert r.returncode == 64
    assert b"--timeout: 'abc' is not a duration" in r.stderr
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "99999")
    assert r.returncode == 64
    assert b"--grace: '99999' is out of range" in r.stderr
    r = reaper("reap", "--home", home, env={"REAPER_TIMEOUT": "abc", "REAPER_GRACE": "99999"})
    assert r.returncode == 0
    assert b"REAPER_TIMEOUT: 'abc' is not a duration; using 10" in r.stderr
    assert b"REAPER_GRACE: 99999 is out of range" in r.stderr


def test_weird_cmdline_json_and_junit_read_back(spawn, home, tmp_path):
    p = spawn.sleeper(WEIRD, env={"REAPER_TEST": "test_<weird>&\"name\"\x02"})
    report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "1", "--report", str(report), "--junit",
               str(junit), env={"GITHUB_ACTIONS": "true"})
    assert r.returncode == 23, r.stderr
    rep = load_json(report)
    proc = by_pid(rep)[p.pid]
    raw = b" ".join([PY.encode(), b"-c", SLEEPER.encode(), WEIRD])
    # the exact bytes survive in cmdline_hex; the text replaced only the invalid bytes
    assert bytes.fromhex(proc["cmdline_hex"]) == raw
    assert proc["cmdline"] == raw.decode("utf-8", "replace")
    assert "\n" in proc["cmdline"] and "\x01" in proc["cmdline"] and "<lt> &amp;" in proc["cmdline"]
    assert proc["test"] == "test_<weird>&\"name\"\x02" and "test_hex" not in proc
    assert rep["leaks_per_test"] == [{"test": "test_<weird>&\"name\"\x02", "leaks": 1}]

    ts = ET.parse(junit).getroot().find("testsuite")
    (case,) = ts.findall("testcase")
    assert case.get("classname") == "reaper"  # not a pytest node id: the test is the name
    name = case.get("name")
    assert name.startswith("test_<weird>&\"name\"\\x02: leaked /usr/bin/pythonN ")
    assert "\\n" in name and "\n" not in name
    failure = case.find("failure")
    assert "q\"uote 'single' <lt> &amp; back\\slash\\nnew line\\ttab\\x01\\e[31mred\\x7f \\xff\\xfe bad \\xc3( end" \
        in failure.text
    assert failure.get("message").startswith("pid %d leaked (terminated): " % p.pid)

    # GitHub: one ::error line per leak, no line break inside it
    lines = [line for line in r.stdout.split(b"\n") if line]
    assert len(lines) == 1
    assert lines[0].startswith(b"::error title=process leak::pid %d (terminated" % p.pid)
    assert b"\\nnew line" in lines[0] and b"\\xff\\xfe bad" in lines[0]
    assert b"test test_<weird>&\"name\"\\x02" in lines[0]


def test_github_annotations_only_under_github_actions(spawn, home):
    a, b = spawn.sleeper("one"), spawn.sleeper("two", env={"REAPER_TEST": "t2"})
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "1", env={"GITHUB_ACTIONS": "true"})
    assert r.returncode == 23
    lines = r.stdout.decode().splitlines()
    assert len(lines) == 2 and all(x.startswith("::error title=process leak::") for x in lines)
    assert {int(x.split("::pid ")[1].split()[0]) for x in lines} == {a.pid, b.pid}
    assert any("test t2" in x for x in lines)
    spawn.sleeper()
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "1", env={"GITHUB_ACTIONS": "false"})
    assert r.returncode == 23 and r.stdout == b""


def test_scan_json_escapes_everything(spawn, home):
    p = spawn.sleeper(WEIRD)
    r = reaper("scan", "--home", home, "--json")
    assert r.returncode == 0
    rep = json.loads(r.stdout.decode("utf-8"))
    assert WEIRD in bytes.fromhex(by_pid(rep)[p.pid]["cmdline_hex"])
    # the text listing shows the bytes visibly, on one line
    r = reaper("scan", "--home", home)
    out = r.stdout.split(b"\n")
    assert out[0].startswith(b"%d " % p.pid) and out[1] == b""
    assert b"\\nnew line\\ttab\\x01\\e[31mred\\x7f \\xff\\xfe bad \\xc3( end" in out[0]
