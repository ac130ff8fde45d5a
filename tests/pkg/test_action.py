# SPDX-License-Identifier: MIT
"""The composite GitHub action (action.yml) run step by step the way a runner does: its
expressions replaced by the inputs (and their defaults), each step's script run by bash with
the step's environment, the outputs read back from GITHUB_OUTPUT. A command that leaks fails
the step with the leak exit code and leaves the JUnit report, the annotations, the job summary
and the leak count behind; the command and reaper's options are given one argument a line."""
from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap

import pytest

from procutil import ROOT

yaml = pytest.importorskip("yaml", reason="PyYAML (python3-yaml) reads action.yml")


def outputs(path) -> dict:
    """GITHUB_OUTPUT's NAME<<DELIMITER ... DELIMITER (and NAME=VALUE) entries."""
    out, lines = {}, path.read_text().split("\n") if path.exists() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line:
            name, delim = line.split("<<", 1)
            end = lines.index(delim, i + 1)
            out[name] = "\n".join(lines[i + 1:end])
            i = end + 1
        else:
            if "=" in line:
                name, value = line.split("=", 1)
                out[name] = value
            i += 1
    return out


# A job's own build settings, set for its project in the workflow's env: the action builds reaper
# with reaper's (each of these breaks a build that takes them).
JOB_BUILD_ENV = {"CFLAGS": "-include /nonexistent/the-jobs-config.h", "CPPFLAGS": "-DREAPER_VERSION=the-jobs",
                 "LDFLAGS": "-l:libthe-jobs-nonexistent.so", "LDLIBS": "-lthe-jobs-nonexistent",
                 "EXTRA_CFLAGS": "-include /nonexistent/the-jobs-extra.h"}

# The build step's output, made by the first test that runs the action: the tests after it reuse
# it (a link in their runner.temp) instead of building reaper again.
BUILT: dict = {}


def run_action(tmp_path, inputs: dict) -> subprocess.CompletedProcess:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    values = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    values.update(inputs)
    context = {"github.action_path": str(ROOT), "runner.temp": str(tmp_path / "runner")}
    context.update({f"inputs.{k}": v for k, v in values.items()})
    (tmp_path / "runner").mkdir()

    def expand(text: str) -> str:
        return re.sub(r"\$\{\{\s*([\w.]+)\s*\}\}", lambda m: context[m.group(1)], text)

    base = {"PATH": os.environ["PATH"], "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
            "HOME": str(tmp_path), "RUNNER_TEMP": str(tmp_path / "runner"), **JOB_BUILD_ENV}
    r = None
    steps = {}
    for n, step in enumerate(action["runs"]["steps"]):
        assert step["shell"] == "bash"
        out = tmp_path / "runner" / f"output-{n}"
        if step.get("name") == "Build reaper" and "dir" in BUILT:
            (tmp_path / "runner" / "reaper-build").symlink_to(BUILT["dir"])
            continue
        env = dict(base, GITHUB_OUTPUT=str(out), **{k: expand(str(v)) for k, v in step.get("env", {}).items()})
        r = subprocess.run(["bash", "-e", "-c", expand(step["run"])], env=env, cwd=tmp_path, capture_output=True,
                           text=True, timeout=600)
        if "id" in step:
            steps[step["id"]] = outputs(out)
        if r.returncode != 0:
            break
        if step.get("name") == "Build reaper":
            BUILT["dir"] = tmp_path / "runner" / "reaper-build"
    # the action's outputs, as the runner resolves ${{ steps.ID.outputs.NAME }}
    r.outputs = {}
    for name, spec in action["outputs"].items():
        m = re.fullmatch(r"\$\{\{\s*steps\.([\w-]+)\.outputs\.([\w-]+)\s*\}\}", spec["value"])
        assert m, spec
        r.outputs[name] = steps.get(m.group(1), {}).get(m.group(2), "")
    return r


# The command ends once its leftover runs sleep: until its exec the leftover is still a fork of
# bash, without the test name in its environment and with bash's command line.
LEAKY = textwrap.dedent("""\
    REAPER_TEST=tests/test_srv.py::test_up setsid sleep 300 </dev/null >/dev/null 2>&1 &
    while [ -e /proc/$! ]; do
        case $(readlink /proc/$!/exe) in */sleep) break ;; esac
        sleep 0.01
    done
    echo started
""")


def test_action_fails_the_step_on_a_leak_and_reports_it(tmp_path):
    r = run_action(tmp_path, {"command": LEAKY, "home": str(tmp_path / "sandbox"), "timeout": "0.5",
                              "grace": "1"})
    assert r.returncode == 23, r.stdout + r.stderr
    assert "started" in r.stdout
    assert "::error file=tests/test_srv.py,title=process leak::" in r.stdout
    assert "sleep 300" in r.stderr
    assert 'classname="tests.test_srv" name="test_up: leaked sleep N"' in (tmp_path / "reaper-junit.xml").read_text()
    assert (tmp_path / "reaper-report.json").exists()
    assert "| tests/test\\_srv.py::test\\_up | " in (tmp_path / "summary.md").read_text()
    assert r.outputs == {"leaks": "1", "report": str(tmp_path / "reaper-report.json"),
                         "junit": str(tmp_path / "reaper-junit.xml"), "exit-code": "23"}


def test_action_passes_a_clean_command(tmp_path):
    r = run_action(tmp_path, {"command": "true", "junit": "", "report": ""})
    assert r.returncode == 0, r.stdout + r.stderr
    assert not (tmp_path / "reaper-junit.xml").exists()
    assert (tmp_path / "summary.md").read_text() == "### reaper: no leaked processes\n\n"
    # the count still comes from a report, written to the runner's scratch space and removed
    assert r.outputs == {"leaks": "0", "report": "", "junit": "", "exit-code": "0"}
    assert not list((tmp_path / "runner").glob("reaper-action.*"))


def test_argv_is_one_argument_a_line_without_a_shell(tmp_path):
    """Spaces, quotes, $ and ; stay inside their argument; nothing is evaluated."""
    script = ("REAPER_TEST=tests/t.py::test_a setsid sleep 300 </dev/null >/dev/null 2>&1 & "
              "while [ -e /proc/$! ]; do case $(readlink /proc/$!/exe) in */sleep) break ;; esac; sleep 0.01; done; "
              'printf "[%s]\\n" "$@"')
    argv = "\n".join(["sh", "-c", script, "argv0", "two  words", "it's \"quoted\"", "", "$HOME; touch pwned"])
    r = run_action(tmp_path, {"argv": argv, "timeout": "0.5", "grace": "1"})
    assert r.returncode == 23, r.stdout + r.stderr
    assert "[two  words]\n[it's \"quoted\"]\n[$HOME; touch pwned]\n" in r.stdout
    assert not (tmp_path / "pwned").exists()
    assert r.outputs["leaks"] == "1" and r.outputs["exit-code"] == "23"


@pytest.mark.parametrize("args", ["--allow\nsleep 30*", "--allow=sleep 30*\n"])
def test_args_are_one_argument_a_line(tmp_path, args):
    """An allow pattern holding a space is one argument: the leftover it matches is cleaned
    up and not counted (split on spaces, `30*` was a stray word: a usage error)."""
    r = run_action(tmp_path, {"command": LEAKY, "args": args, "timeout": "0.5", "grace": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.outputs["leaks"] == "0", r.outputs
    report = json.loads((tmp_path / "reaper-report.json").read_text())
    assert report["summary"]["allowed"] == 1 and report["summary"]["leaks"] == 0, report["summary"]


def test_leak_count_is_the_reports(tmp_path):
    """Three leftovers of one command: the output counts each, as the report's summary does."""
    three = "for i in 1 2 3; do\n" + LEAKY.replace("echo started", "done")
    r = run_action(tmp_path, {"command": three, "timeout": "0.5", "grace": "1"})
    assert r.returncode == 23, r.stdout + r.stderr
    report = json.loads((tmp_path / "reaper-report.json").read_text())
    assert r.outputs["leaks"] == str(report["summary"]["leaks"]) and report["summary"]["leaks"] >= 3, r.outputs


@pytest.mark.parametrize("inputs,says", [({"command": "true", "argv": "true"}, "not both"),
                                        ({}, "no command")])
def test_command_and_argv_are_one_or_the_other(tmp_path, inputs, says):
    r = run_action(tmp_path, inputs)
    assert r.returncode == 64, r.stdout + r.stderr
    assert f"::error title=reaper action::" in r.stdout and says in r.stdout
    assert r.outputs["exit-code"] == "64" and r.outputs["leaks"] == ""


def test_outputs_name_only_what_this_run_wrote(tmp_path):
    """Reports an earlier run left in the workspace (a step before, a reused self-hosted
    runner) are not this run's: after a usage error the outputs are empty, and the old files
    are left as they were."""
    stale = '{\n  "summary": {"processes": 4, "leaks": 4, "exited": 0},\n  "procs": []\n}\n'
    (tmp_path / "reaper-report.json").write_text(stale)
    (tmp_path / "reaper-junit.xml").write_text("<testsuites/>\n")
    r = run_action(tmp_path, {"command": "true", "args": "--no-such-option"})
    assert r.returncode == 64, r.stdout + r.stderr
    assert r.outputs == {"leaks": "", "report": "", "junit": "", "exit-code": "64"}, r.outputs
    assert (tmp_path / "reaper-report.json").read_text() == stale
    assert (tmp_path / "reaper-junit.xml").read_text() == "<testsuites/>\n"


@pytest.mark.parametrize("args", ["--report\nmine.json\n--junit\nmine.xml", "--report=mine.json\n--junit=mine.xml"])
def test_report_and_junit_given_in_args_are_the_outputs(tmp_path, args):
    """`--report FILE` / `--junit FILE` among the args are what reaper writes (the last one
    given wins): the outputs name those files, and the leak count is read from that report."""
    r = run_action(tmp_path, {"command": LEAKY, "args": args, "timeout": "0.5", "grace": "1"})
    assert r.returncode == 23, r.stdout + r.stderr
    assert json.loads((tmp_path / "mine.json").read_text())["summary"]["leaks"] == 1
    assert "<testsuite" in (tmp_path / "mine.xml").read_text()
    assert r.outputs == {"leaks": "1", "report": str(tmp_path / "mine.json"), "junit": str(tmp_path / "mine.xml"),
                         "exit-code": "23"}, r.outputs


def test_command_fails_at_its_first_failing_line(tmp_path):
    """A multi-line `command` runs as a `run:` step with `shell: bash` does (bash -e -o
    pipefail): a line that fails ends it with that status, also inside a pipeline; the lines
    after it do not run and cannot turn the step green."""
    r = run_action(tmp_path, {"command": "echo one\nfalse | cat\necho two\n", "junit": "", "report": ""})
    assert r.returncode == 1, r.stdout + r.stderr
    assert "one" in r.stdout and "two" not in r.stdout
    assert r.outputs["exit-code"] == "1" and r.outputs["leaks"] == "0", r.outputs
