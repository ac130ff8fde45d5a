# SPDX-License-Identifier: MIT
"""The composite GitHub action (action.yml) run step by step the way a runner does: its
expressions replaced by the inputs (and their defaults), each step's script run by bash with
the step's environment. A command that leaks fails the step with the leak exit code and leaves
the JUnit report, the annotations and the job summary behind."""
from __future__ import annotations

import os
import re
import subprocess
import textwrap

import pytest

from procutil import ROOT

yaml = pytest.importorskip("yaml", reason="PyYAML (python3-yaml) reads action.yml")


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
            "HOME": str(tmp_path)}
    r = None
    for step in action["runs"]["steps"]:
        assert step["shell"] == "bash"
        env = dict(base, **{k: expand(str(v)) for k, v in step.get("env", {}).items()})
        r = subprocess.run(["bash", "-e", "-c", expand(step["run"])], env=env, cwd=tmp_path, capture_output=True,
                           text=True, timeout=600)
        if r.returncode != 0:
            break
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


def test_action_passes_a_clean_command(tmp_path):
    r = run_action(tmp_path, {"command": "true", "junit": "", "report": ""})
    assert r.returncode == 0, r.stdout + r.stderr
    assert not (tmp_path / "reaper-junit.xml").exists()
    assert (tmp_path / "summary.md").read_text() == "### reaper: no leaked processes\n\n"
