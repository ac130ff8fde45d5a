# SPDX-License-Identifier: MIT
"""What the check found, said: the teardown error and its one-line summary, the terminal
summary, GitHub Actions annotations, and --reaper-report's JSON file."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Dict, List, Optional

import pytest

from .. import _site
from .host import SITES
from .options import MARKER

SCHEMA = "reaper-pytest/1.1"
#: what a test's check found (records), kept on its item for its teardown report
FOUND = pytest.StashKey()

def _replace_file(path: str, text: str) -> None:
    """Write path whole, as the reaper command writes its files: a new file with a random name
    in the same directory (exclusive create, so no symlink is followed), then renamed over
    path; a reader sees the old file or the new one, and a symlink at path is replaced."""
    # the name's own part cut so that the temporary name stays within NAME_MAX (255)
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path)[:200] + ".", suffix=".tmp",
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            os.fchmod(f.fileno(), 0o644)
            f.write(text)
            f.flush()
            os.fdatasync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


class _TeardownError(pytest.fail.Exception):
    """The plugin's verdict on a test at its teardown: the detail is the error's text, the
    summary what pytest's short test summary and --junitxml say after the test's id."""

    def __init__(self, detail: str, summary: Optional[str] = None):
        super().__init__(detail, pytrace=False)
        self.summary = summary or detail.split("\n", 1)[0].replace("reaper: ", "", 1)


SUMMARY_NAMES = 3      # leaks named in the short summary; the count says how many there are
SUMMARY_CMDLINE = 60   # characters of each one's cmdline there


def _leak_summary(leaks) -> str:
    """`left 2 processes: sleep 60, cat`: one line, short enough for a terminal's width
    (pytest trims it to that, except on CI, where it prints it whole)."""
    names = []
    for p in leaks[:SUMMARY_NAMES]:
        name = " ".join((p.cmdline or p.comm or f"pid {p.pid}").split())  # no newline breaks the line
        names.append(name if len(name) <= SUMMARY_CMDLINE else name[:SUMMARY_CMDLINE - 3] + "...")
    more = f", ... ({len(leaks) - SUMMARY_NAMES} more)" if len(leaks) > SUMMARY_NAMES else ""
    return f"left {len(leaks)} process{'es' if len(leaks) > 1 else ''}: {', '.join(names)}{more}"


def _name_reason(report, item, summary: str) -> None:
    """Make `summary` the crash message of a teardown report. pytest takes the short summary's
    reason (and --junitxml its message) from there, and a failure raised without a traceback
    has none; xdist carries it to the controller from the chain's last entry."""
    chain = getattr(report.longrepr, "chain", None)
    if not chain:
        return
    try:
        from _pytest._code.code import ReprFileLocation
    except ImportError:  # a pytest without it: the summary names only the test
        return
    path, lineno, _ = item.location
    crash = ReprFileLocation(path, (lineno or 0) + 1, summary)
    tb, _, descr = chain[-1]
    report.longrepr.chain = [*chain[:-1], (tb, crash, descr)]
    report.longrepr.reprcrash = crash


def _why(e) -> str:
    return e.strerror.replace("reaper: the result is incomplete: ", "")


def _holdings_lines(p) -> List[str]:
    """What a leak held when it was found still running (the port the next test cannot bind,
    the pipe that keeps a CI step waiting), for the teardown error."""
    if p.holds is None:
        return []
    lines = [f"      rss {p.rss / 1048576:.1f} MiB, cpu {p.cpu_time:.2f} s"]
    if p.holds:
        lines.append(f"      holds {p.holds}")
    return lines


def _record(p, test: Optional[str]) -> dict:
    return {
        "test": test, "pid": p.pid, "start_time": p.start_time, "cmdline": p.cmdline,
        "cwd": p.cwd, "exe": p.exe, "comm": p.comm, "state": p.state, "fate": p.fate,
        "age": round(p.age, 3), "ppid": p.ppid, "pgrp": p.pgrp, "uid": p.uid,
        "found_by": list(p.found_by), "ancestry": p.ancestry, "allowed": p.allowed,
        "host_child": p.host_child, "started_at": site.as_dict() if (site := _site_of(p)) else None,
    }


def _github(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def _annotation(r: dict) -> str:
    """A leak as a GitHub Actions error annotation, at the line that started it when known,
    else at the test's file."""
    at = r.get("started_at") or {}
    frame = at.get("test_frame") or at.get("innermost")
    test = r["test"] or ""
    where = f"file={_github(frame['file'], True)},line={frame['line']}," if frame else \
        (f"file={_github(test.split('::', 1)[0], True)}," if "::" in test else "")
    msg = f"{test or 'no test'} left pid {r['pid']} running ({r['fate']}): {r['cmdline'][:300]}"
    site = _record_site(r)
    if site:
        msg += f"; started at {site.text()}"
    return f"::error {where}title={_github('reaper: leaked process', True)}::{_github(msg)}"


def _record_site(r: dict) -> Optional[_site.Site]:
    at = r.get("started_at")
    if not at:
        return None
    return _site.Site(*(_site.Frame(**f) if f else None for f in (at.get("test_frame"), at.get("innermost"))),
                      at.get("via"))


def _site_of(p) -> Optional[_site.Site]:
    return SITES.of(p.pid, p.start_time, p.ancestry, p.started_at, p.started_in)


class Reports:
    """The session's hooks that report: the teardown error's summary, the terminal summary,
    GitHub annotations, --reaper-report's file."""

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        if call.when == "teardown":
            found = item.stash.get(FOUND, None)
            if found:  # on the report before xdist's worker sends it on
                del item.stash[FOUND]
                outcome.get_result().reaper_leaks = found
        if call.excinfo is not None and isinstance(call.excinfo.value, _TeardownError):
            _name_reason(outcome.get_result(), item, call.excinfo.value.summary)

    def pytest_terminal_summary(self, terminalreporter):
        for note in self.notes:
            terminalreporter.line(f"reaper: warning: {note}", yellow=True)
        # an interrupted session tears its last test down after the protocol, and a crashed
        # xdist worker none: no report can carry an error for them, so the leaks are listed here
        for title, records, red in (("left by tests torn down at the session's end", self.late_leaks, True),
                                    ("left by xdist workers that crashed", self.crash_leaks, True),
                                    ("left by fixtures wider than a test", self.shared_leaks, False)):
            if records:
                terminalreporter.section(f"reaper: {title}", red=red, yellow=not red)
                for r in records:
                    terminalreporter.line(f"{r['pid']}: {r['cmdline'][:160]}  [{r['fate']}, {r['test']}]")
                    at = _record_site(r)
                    if at:
                        terminalreporter.line(f"    started at {at.text()}")
        if os.environ.get("GITHUB_ACTIONS") == "true":
            seen = set()
            for r in [r for r in self.records if not r["allowed"]] + self.late_leaks + self.shared_leaks:
                if (r["pid"], r["start_time"]) not in seen:
                    seen.add((r["pid"], r["start_time"]))
                    terminalreporter.write_line(_annotation(r))

    def _write(self, path: str) -> None:
        leaks = [r for r in self.records if not r["allowed"]]
        per_test: Dict[str, int] = {}
        for r in leaks:
            per_test[r["test"]] = per_test.get(r["test"], 0) + 1
        doc = {
            "schema": SCHEMA,
            "reaper_version": self.reaper.__version__,
            "marker": MARKER,
            "session": self.prefix,
            "tracking": self.tracking.split()[0],
            "tests_checked": self.checked,
            "leaks": leaks,
            "allowed": [r for r in self.records if r["allowed"]],
            "fixture_leaks": self.shared_leaks,
            "summary": {"leaks": len(leaks), "tests_with_leaks": len(per_test), "per_test": per_test},
        }
        _replace_file(path, json.dumps(doc, indent=2, ensure_ascii=True) + "\n")

    # The records travel on the teardown report as an attribute of their own (xdist carries
    # it to the controller); user_properties would put them in --junitxml's testcases, where
    # xunit2 allows no <properties>.
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report):
        if report.when != "teardown":
            return
        self.checked += 1
        self.records.extend(getattr(report, "reaper_leaks", None) or ())
