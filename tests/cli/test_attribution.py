# SPDX-License-Identifier: MIT
"""A plain pytest suite (no plugin) under `reaper run`: each leak is named by the test that
started it, from the PYTEST_CURRENT_TEST pytest puts in its tests' environment; REAPER_TEST,
when set, wins."""
import os
import subprocess
import xml.etree.ElementTree as ET

from cli_util import load_json
from procutil import PY, REAPER, ROOT, kill_identified, start_time

SUITE = '''
import os, subprocess

def test_leaks_a_sleep():
    p = subprocess.Popen(["sleep", "600"])
    open(os.environ["PIDS"], "a").write("%d sleep\\n" % p.pid)

def test_names_itself():
    env = dict(os.environ, REAPER_TEST="chosen-name")
    p = subprocess.Popen(["sleep", "601"], env=env)
    open(os.environ["PIDS"], "a").write("%d named\\n" % p.pid)
'''


def run_suite(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_plain.py").write_text(SUITE)
    pids, report, junit = tmp_path / "pids", tmp_path / "r.json", tmp_path / "r.xml"
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "REAPER_TEST", "PYTEST_ADDOPTS", "GITHUB_ACTIONS") and not k.startswith("PYTEST_")}
    env["PIDS"] = str(pids)
    r = subprocess.run([REAPER, "run", "--timeout", "0", "--grace", "2", "--report", str(report), "--junit",
                        str(junit), "--", PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:reaper",
                        "test_plain.py"], cwd=suite, env=env, capture_output=True, timeout=300)
    left = {}
    for line in pids.read_text().splitlines() if pids.exists() else []:
        pid, what = line.split()
        left[what] = int(pid)
    return r, left, report, junit


def test_plain_pytest_suite_names_the_test_of_each_leak(tmp_path):
    r, left, report, junit = run_suite(tmp_path)
    try:
        assert r.returncode == 23, (r.stdout, r.stderr)
        procs = {p["pid"]: p for p in load_json(report)["processes"]}
        assert procs[left["sleep"]]["test"] == "test_plain.py::test_leaks_a_sleep"
        assert procs[left["named"]]["test"] == "chosen-name"
        err = r.stderr.decode()
        assert "test test_plain.py::test_leaks_a_sleep," in err and "(no test)" not in err, err
        assert "test_plain.py::test_leaks_a_sleep 1" in err
        cases = ET.parse(junit).getroot().iter("testcase")
        assert any(c.get("classname") == "test_plain" and c.get("name").startswith("test_leaks_a_sleep: leaked")
                   for c in cases)
    finally:
        for pid in left.values():
            st = start_time(pid)
            if st:
                kill_identified(pid, st)


def test_started_at_from_the_environment_in_every_format(tmp_path):
    """A harness that knows the spawning line puts it in REAPER_STARTED_AT (the test's frame)
    and REAPER_STARTED_IN (the innermost one); every format carries it, the GitHub annotation
    at that file and line. Without them the field is null and no line says it."""
    report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REAPER_", "PYTEST_"))}
    env.update(GITHUB_ACTIONS="true")
    script = ("REAPER_STARTED_AT=tests/test_x.py:12:test_y REAPER_STARTED_IN=tests/a:b.py:30:start_server "
              "sleep 600 & a=$!; sleep 601 & b=$!; "
              # until both have exec'd: found before, they would be shown as sh
              "for p in $a $b; do while [ \"$(cat /proc/$p/comm)\" != sleep ]; do sleep 0.01; done; done")
    r = subprocess.run([REAPER, "run", "--timeout", "0", "--grace", "2", "--report", str(report), "--junit",
                        str(junit), "--", "sh", "-c", script], env=env, capture_output=True, timeout=300)
    procs = load_json(report)["processes"]
    try:
        assert r.returncode == 23, r.stderr
        (site,) = [p for p in procs if p["cmdline"] == "sleep 600"]
        (plain,) = [p for p in procs if p["cmdline"] == "sleep 601"]
        assert site["started_at"] == {
            "test_frame": {"file": "tests/test_x.py", "line": 12, "function": "test_y"},
            "innermost": {"file": "tests/a:b.py", "line": 30, "function": "start_server"}}
        assert plain["started_at"] is None
        # worded as the pytest plugin words a site
        said = "started at tests/test_x.py:12 in test_y; tests/a:b.py:30 in start_server"
        assert r.stderr.decode().count(said) == 1, r.stderr
        assert junit.read_text().count("started at: " + said.replace("started at ", "")) == 1
        (failure,) = [c.find("failure") for c in ET.parse(junit).getroot().iter("testcase")
                      if c.find("failure") is not None and "sleep 600" in c.find("failure").get("message")]
        assert failure.get("message").endswith("; " + said), failure.get("message")
        notes = [x for x in r.stdout.decode().splitlines() if x.startswith("::error ")]
        (note,) = [x for x in notes if "::pid %d " % site["pid"] in x]
        assert note.startswith("::error file=tests/test_x.py,line=12,title=process leak::") and said in note
        (note,) = [x for x in notes if "::pid %d " % plain["pid"] in x]
        assert "started at" not in note and "file=" not in note
    finally:
        for p in procs:
            if start_time(p["pid"]) == p["start_time"]:
                kill_identified(p["pid"], p["start_time"])


def test_hostile_spawn_sites_are_refused_or_escaped(tmp_path):
    """REAPER_STARTED_AT is whatever a process's environment holds: a value longer than any
    path, a line that is not a number, no colons, are not used; quotes, markup, newlines and
    GitHub's command syntax in a used one stay data in every format."""
    report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    values = {"6200": "huge" + "A" * 5000 + ".py:1:f", "6201": "bad.py:-1:f", "6202": "bad.py:x1:f",
              "6203": "nocolons", "6204": "a%0A::error::x,b:7:f\nnext", "6205": 'q"<&>.py:3:<g>"'}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REAPER_", "PYTEST_"))}
    env.update(GITHUB_ACTIONS="true")
    env.update({"V" + k: v for k, v in values.items()})
    # each background pid from $! (a command substitution's subshell has no jobs in dash), and
    # the shell exits only once every one of them runs sleep
    script = " ".join('REAPER_STARTED_AT="$V%s" sleep %s & ps="$ps $!";' % (k, k) for k in values)
    script += ' for p in $ps; do while [ "$(cat /proc/$p/comm)" != sleep ]; do sleep 0.01; done; done'
    r = subprocess.run([REAPER, "run", "--timeout", "0", "--grace", "2", "--report", str(report), "--junit",
                        str(junit), "--", "sh", "-c", script], env=env, capture_output=True, timeout=300)
    procs = load_json(report)["processes"]
    try:
        assert r.returncode == 23, r.stderr
        by = {p["cmdline"].split()[1]: p for p in procs}
        assert sorted(by) == sorted(values)
        for k in ("6200", "6201", "6202", "6203"):
            assert by[k]["started_at"] is None, (k, str(by[k]["started_at"])[:200])
        assert by["6204"]["started_at"]["test_frame"] == {"file": "a%0A::error::x,b", "line": 7, "function": "f\nnext"}
        assert by["6205"]["started_at"]["test_frame"]["file"] == 'q"<&>.py'
        ET.parse(junit)
        notes = [x for x in r.stdout.decode().splitlines() if x.startswith("::")]
        assert len(notes) == len(values) and all(x.startswith("::error ") for x in notes), notes
        (note,) = [x for x in notes if "::pid %d " % by["6204"]["pid"] in x]
        assert note.startswith("::error file=a%250A%3A%3Aerror%3A%3Ax%2Cb,line=7,title=process leak::"), note
        assert max(len(x) for x in notes + r.stderr.decode().splitlines()) < 2000
    finally:
        for p in procs:
            if start_time(p["pid"]) == p["start_time"]:
                kill_identified(p["pid"], p["start_time"])


def test_the_command_words_a_site_as_the_pytest_plugin_does(tmp_path):
    """One wording: what the plugin puts in a spawn's environment comes back from the command
    as the plugin's own text of that site, less the library call (which only the plugin sees)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("reaper_site", ROOT / "harness/python/reaper/_site.py")
    site_mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(site_mod)
    site = site_mod.Site(site_mod.Frame("test_x.py", 10, "test_helper"),
                         site_mod.Frame("helpers.py", 5, "start_server"), "subprocess.Popen")
    report = tmp_path / "r.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REAPER_", "PYTEST_"))}
    env.update({k: v for k, v in site.env().items() if v is not None})
    r = subprocess.run([REAPER, "run", "--timeout", "0", "--grace", "2", "--report", str(report), "--",
                        "sh", "-c", 'sleep 6210 & p=$!; while [ "$(cat /proc/$p/comm)" != sleep ]; do sleep 0.01; done'],
                       env=env, capture_output=True, timeout=300)
    procs = load_json(report)["processes"]
    try:
        assert r.returncode == 23, r.stderr
        plugin = site.text()
        assert plugin.endswith(", via subprocess.Popen")
        lines = [x.strip() for x in r.stderr.decode().splitlines() if "started at" in x]
        assert lines == ["started at " + plugin[:-len(", via subprocess.Popen")]], r.stderr
    finally:
        for p in procs:
            if start_time(p["pid"]) == p["start_time"]:
                kill_identified(p["pid"], p["start_time"])


def test_a_pytest_current_test_of_only_a_phase_names_no_test(tmp_path):
    report = tmp_path / "r.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REAPER_", "PYTEST_"))}
    env.update(VA=" (call)", VB="t.py::t (setup)\nx (call)")
    script = ('PYTEST_CURRENT_TEST="$VA" sleep 6230 & a=$!; PYTEST_CURRENT_TEST="$VB" sleep 6231 & b=$!;'
              ' for p in $a $b; do while [ "$(cat /proc/$p/comm)" != sleep ]; do sleep 0.01; done; done')
    r = subprocess.run([REAPER, "run", "--timeout", "0", "--grace", "2", "--report", str(report), "--",
                        "sh", "-c", script], env=env, capture_output=True, timeout=300)
    procs = load_json(report)["processes"]
    try:
        assert r.returncode == 23, r.stderr
        by = {p["cmdline"]: p["test"] for p in procs}
        assert by == {"sleep 6230": None, "sleep 6231": "t.py::t (setup)\nx"}, by
        assert "(no test) 1" in r.stderr.decode(), r.stderr
    finally:
        for p in procs:
            if start_time(p["pid"]) == p["start_time"]:
                kill_identified(p["pid"], p["start_time"])
