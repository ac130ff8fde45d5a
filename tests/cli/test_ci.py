# SPDX-License-Identifier: MIT
"""What CI systems read: JUnit that keeps the same testcase names from run to run and passes
a schema written from the Jenkins/Ant format (tests/junit.xsd, checked with xmllint), GitHub
annotations that point at the test's file (and line), the step summary table, and progress
lines in a CI log while leftovers are waited for."""
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from cli_util import reaper
from procutil import ROOT

XSD = os.path.join(ROOT, "tests", "junit.xsd")
NODE = "tests/e2e/test_server.py::TestServer::test_starts[ipv6]"

needs_xmllint = pytest.mark.skipif(not shutil.which("xmllint"), reason="xmllint (libxml2-utils) is not installed")


def xmllint(path):
    return subprocess.run(["xmllint", "--noout", "--schema", XSD, str(path)], capture_output=True, text=True)


def cases(path):
    return [(c.get("classname"), c.get("name")) for c in ET.parse(path).getroot().iter("testcase")]


def leak_run(spawn, home, tmp_path, tag, env=None):
    """One `reaper reap` over three leftovers: two from a pytest test (one twice), one unattributed."""
    spawn.sleeper("--port=%d" % (40000 + len(tag)), f"/tmp/tmp{tag}x_9/sock", env={"REAPER_TEST": NODE})
    spawn.sleeper("--port=%d" % (41000 + len(tag)), f"/tmp/tmp{tag}x_9/sock", env={"REAPER_TEST": NODE})
    spawn.sleeper("worker", "--id=%d" % len(tag))
    junit = tmp_path / f"{tag}.xml"
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "2", "--junit", str(junit), env=env)
    assert r.returncode == 23, r.stderr
    return junit, r


def test_junit_names_are_stable_across_runs_and_grouped_by_test(spawn, home, tmp_path):
    first, _ = leak_run(spawn, home, tmp_path, "a1b2c3")
    second, _ = leak_run(spawn, home, tmp_path, "zz9x")
    assert sorted(cases(first)) == sorted(cases(second))
    names = sorted(cases(first))
    assert ("tests.e2e.test_server.TestServer", "test_starts[ipv6]: leaked /usr/bin/pythonN -c import time\\nwhile "
            "True: time.sleep(N)\\n --port=N /tmp/tmp*/sock") in names
    assert ("tests.e2e.test_server.TestServer", "test_starts[ipv6]: leaked /usr/bin/pythonN -c import time\\nwhile "
            "True: time.sleep(N)\\n --port=N /tmp/tmp*/sock (2)") in names
    unattributed = [n for n in names if n[0] == "reaper"]
    assert len(unattributed) == 1 and unattributed[0][1].startswith("leaked /usr/bin/pythonN")
    assert unattributed[0][1].endswith(" worker --id=N")
    for path in (first, second):
        text = path.read_text()
        root = ET.parse(path).getroot()
        assert root.get("skipped") is None and root.find("testsuite").get("skipped") == "0"
        for pid_case in root.iter("failure"):  # the pid is in the details, never in a name
            assert pid_case.get("message").startswith("pid ")
        assert "pid:" in text


@needs_xmllint
def test_junit_validates_against_the_jenkins_schema(spawn, home, tmp_path):
    leaked, _ = leak_run(spawn, home, tmp_path, "v")
    assert xmllint(leaked).returncode == 0, xmllint(leaked).stderr
    clean = tmp_path / "clean.xml"
    assert reaper("reap", "--home", home, "--timeout", "0", "--junit", str(clean)).returncode == 0
    assert xmllint(clean).returncode == 0, xmllint(clean).stderr
    assert cases(clean) == [("reaper", "no leaked processes")]
    kept = spawn.sleeper("keep-me", env={"REAPER_TEST": "t\x01weird<&>"})
    spawn.sleeper("allow-me")
    policy = tmp_path / "policy.xml"
    reaper("reap", "--home", home, "--timeout", "0", "--grace", "2", "--keep", "*keep-me*", "--allow", "*allow-me*",
           "--junit", str(policy))
    assert kept.alive
    assert xmllint(policy).returncode == 0, xmllint(policy).stderr
    # the schema is not a rubber stamp: what Jenkins rejects, it rejects
    bad = tmp_path / "bad.xml"
    bad.write_text(clean.read_text().replace('<testsuites name="reaper"', '<testsuites skipped="0" name="reaper"'))
    assert xmllint(bad).returncode != 0 and "skipped" in xmllint(bad).stderr
    nameless = tmp_path / "nameless.xml"
    nameless.write_text(clean.read_text().replace('classname="reaper" ', ""))
    assert xmllint(nameless).returncode != 0


def test_github_annotation_names_the_test_file_and_line(spawn, home, tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    _, r = leak_run(spawn, home, tmp_path, "gh", env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary),
                                                       "REAPER_TEST_LOCATION": "tests/e2e/test_server.py:42"})
    lines = [line for line in r.stdout.decode().split("\n") if line]
    assert len(lines) == 3
    located = [line for line in lines if line.startswith("::error file=tests/e2e/test_server.py,line=42,title=process leak::")]
    assert len(located) == 2 and "test " + NODE in located[0]
    assert sum(line.startswith("::error title=process leak::") for line in lines) == 1  # no test, no file
    text = summary.read_text()
    assert text.startswith("earlier step\n### reaper: 3 leaked processes\n")
    assert "| test | pid | fate | age | command | cwd |" in text
    assert "| tests/e2e/test\\_server.py::TestServer::test\\_starts[ipv6] | " in text
    assert "| (no test) | " in text and text.count("| terminated |") == 3


def test_github_location_of_another_file_gives_no_line(spawn, home, tmp_path):
    _, r = leak_run(spawn, home, tmp_path, "gh2", env={"GITHUB_ACTIONS": "true",
                                                        "REAPER_TEST_LOCATION": "tests/other.py:7"})
    out = r.stdout.decode()
    assert "::error file=tests/e2e/test_server.py,title=process leak::" in out and "line=" not in out


def test_step_summary_says_when_nothing_leaked(home, tmp_path):
    summary = tmp_path / "summary.md"
    r = reaper("reap", "--home", home, "--timeout", "0", env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert r.returncode == 0
    assert summary.read_text() == "### reaper: no leaked processes\n\n"


def test_off_a_tty_the_wait_prints_progress_lines(spawn, home):
    spawn.sleeper("slow-to-go", stubborn=True)
    r = reaper("reap", "--home", home, "--timeout", "2", "--grace", "0")
    assert r.returncode == 23
    err = r.stderr.decode()
    assert "reaper: waiting for 1 process to exit; next step in " in err
    assert "\r" not in err and "\033[" not in err


def test_a_parameter_id_holding_double_colons_stays_in_the_name(spawn, home, tmp_path):
    """pytest keeps "::" of a parameter id as it is (an IPv6 address, say): only the node id's
    path is split at "::"."""
    spawn.sleeper("v6", env={"REAPER_TEST": "tests/test_net.py::TestConn::test_connect[::1]"})
    spawn.sleeper("br", env={"REAPER_TEST": "tests/[odd]/test_x.py::test_y[a::b::c]"})
    junit = tmp_path / "v6.xml"
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "2", "--junit", str(junit),
               env={"GITHUB_ACTIONS": "true"})
    assert r.returncode == 23, r.stderr
    got = sorted((c, n.split(": leaked ")[0]) for c, n in cases(junit))
    assert got == [("tests.[odd].test_x", "test_y[a::b::c]"), ("tests.test_net.TestConn", "test_connect[::1]")], got
    out = r.stdout.decode()
    assert "::error file=tests/test_net.py,title=" in out and "::error file=tests/[odd]/test_x.py,title=" in out


@pytest.mark.parametrize("kind", ["directory", "symlink", "missing-dir"])
def test_an_unwritable_step_summary_is_a_warning_not_a_failure(spawn, home, tmp_path, kind):
    target = tmp_path / "elsewhere.md"
    summary = {"directory": tmp_path, "symlink": tmp_path / "link.md",
               "missing-dir": tmp_path / "gone" / "summary.md"}[kind]
    if kind == "symlink":
        summary.symlink_to(target)
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    clean = tmp_path / "clean.xml"
    r = reaper("reap", "--home", home, "--timeout", "0", "--junit", str(clean), env=env)
    assert r.returncode == 0, r.stderr  # a clean run stays clean
    assert "reaper: warning: cannot append to GITHUB_STEP_SUMMARY" in r.stderr.decode()
    assert cases(clean) == [("reaper", "no leaked processes")]
    spawn.sleeper("left-over", env={"REAPER_TEST": NODE})
    leaked = tmp_path / "leaked.xml"
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "2", "--junit", str(leaked), env=env)
    assert r.returncode == 23, r.stderr
    assert r.stdout.decode().startswith("::error file=tests/e2e/test_server.py,title=process leak::")
    assert len(cases(leaked)) == 1
    assert not target.exists()  # never written through the link


def test_annotation_file_property_is_visible_escaped_text(spawn, home):
    spawn.sleeper("esc", env={"REAPER_TEST": "tests/\x1b[31mred,a:b%\r.py::test_x"})
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "2", env={"GITHUB_ACTIONS": "true"})
    assert r.returncode == 23, r.stderr
    line, = [ln for ln in r.stdout.decode().split("\n") if ln.startswith("::error")]
    assert line.startswith("::error file=tests/\\e[31mred%2Ca%3Ab%25\\r.py,title=process leak::"), line
    assert "\x1b" not in r.stdout.decode() and "\r" not in r.stdout.decode()
