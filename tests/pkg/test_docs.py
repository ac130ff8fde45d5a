# SPDX-License-Identifier: MIT
"""What the docs state, checked against what the code does: the exit statuses against
harness/exits.h, every variable the code reads in an ENVIRONMENT section, the state document's
keys against a real one, every suite and check target in docs/TESTING.md, the man pages clean
under `man --warnings`, and the README short, with its commands on the first screen."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from procutil import BUILD, ROOT

MAN = sorted((ROOT / "man").glob("*.[0-9]"))


def section(page, name: str) -> str:
    """The text of one .SH section of a man page."""
    text = page.read_text()
    m = re.search(r"^\.SH \"?%s\"?\n(.*?)(?=^\.SH |\Z)" % re.escape(name), text, re.M | re.S)
    assert m, f"{page.name} has no {name} section"
    return m.group(1)


def exits() -> dict[str, int]:
    """EXIT_NAME -> value, from harness/exits.h (EXIT_KILLED is 128 + 9)."""
    text = (ROOT / "harness" / "exits.h").read_text()
    vals = {k: int(v) for k, v in re.findall(r"^#define (EXIT_\w+) (\d+)\s*$", text, re.M)}
    for k, base, off in re.findall(r"^#define (EXIT_\w+) \((EXIT_\w+) \+ (\d+)\)", text, re.M):
        vals[k] = vals[base] + int(off)
    assert {"EXIT_USAGE", "EXIT_LEAK_DEFAULT", "EXIT_KILLED", "EXIT_SIGNAL_BASE"} <= vals.keys(), vals
    return vals


def test_man_pages_are_clean_under_man_warnings():
    assert {p.name for p in MAN} >= {"reaper.1", "libreaper.3", "reaper_check.3"}
    if not shutil.which("man"):
        pytest.fail("man is not installed (ci/deps.sh installs man-db)")
    for page in MAN:
        r = subprocess.run(["man", "--warnings", "-l", str(page)], capture_output=True, text=True,
                           env={**os.environ, "MANWIDTH": "80", "MAN_KEEP_FORMATTING": ""})
        assert r.returncode == 0 and r.stderr == "", (page.name, r.stderr)
        assert r.stdout.count("\n") > 20, page.name


def test_every_exit_status_is_documented_in_the_man_page_and_the_readme():
    vals = exits()
    man = section(ROOT / "man" / "reaper.1", "EXIT STATUS")
    readme = (ROOT / "README.md").read_text()
    rows = re.findall(r"^\| *([0-9][^|]*?) *\|", readme, re.M)
    table = set()
    for cell in rows:
        table |= {int(n) for n in re.findall(r"^\d+$|^\d+(?=\+N$)", cell.strip())}
    assert table, "the README has no exit status table"
    for name, v in vals.items():
        if name == "EXIT_SIGNAL_BASE":
            assert "128+\\fIN\\fR" in man and "128+N" in readme, name
            continue
        assert re.search(r"(?<![\d.])%d(?![\d.])" % v, man), f"{name} ({v}) not in reaper(1) EXIT STATUS"
        assert v in table or name == "EXIT_KILLED" and "137" in readme, f"{name} ({v}) not in the README's table"
    # and the table names no status the command does not have
    assert table <= set(vals.values()), table - set(vals.values())


def c_environment(paths) -> set[str]:
    """Every variable the C code reads: getenv("X") and the REAPER_* names it looks for."""
    names = set()
    for p in paths:
        text = p.read_text()
        names |= set(re.findall(r'getenv\("([A-Z_]+)"\)', text))
        names |= set(re.findall(r'"(REAPER_[A-Z_]+)=?', text))
        names |= set(re.findall(r'#define \w+ "(REAPER_[A-Z_]+)"', text))
    return names


def documented(text: str) -> set[str]:
    return set(re.findall(r"\b([A-Z][A-Z0-9_]{2,})\b", text.replace("\\fB", " ").replace("\\fR", " ")))


def test_every_variable_the_command_reads_is_in_reaper1_environment():
    code = c_environment(sorted((ROOT / "harness").glob("*.[ch]")) + sorted((ROOT / "reaper").glob("*.c")))
    assert {"REAPER_TIMEOUT", "REAPER_GRACE", "REAPER_STATE", "GITHUB_ACTIONS"} <= code, code
    missing = code - documented(section(ROOT / "man" / "reaper.1", "ENVIRONMENT"))
    assert not missing, f"read by the command, not in reaper(1) ENVIRONMENT: {sorted(missing)}"


def test_every_variable_the_check_helper_reads_or_sets_is_in_its_page():
    code = c_environment([ROOT / "harness" / "check" / "check.c"])
    assert {"REAPER_CHECK_TIMEOUT", "REAPER_CHECK_CGROUP"} <= code, code
    missing = code - documented(section(ROOT / "man" / "reaper_check.3", "ENVIRONMENT"))
    assert not missing, f"not in reaper_check(3) ENVIRONMENT: {sorted(missing)}"


def test_every_variable_the_python_package_uses_is_on_its_page():
    code = set()
    for p in sorted((ROOT / "harness" / "python" / "reaper").rglob("*.py")):
        code |= set(re.findall(r'"(REAPER_[A-Z_]+)"', p.read_text()))
    assert {"REAPER_LIBRARY", "REAPER_TEST"} <= code, code
    missing = code - documented((ROOT / "harness" / "python" / "README.md").read_text())
    assert not missing, f"not on harness/python/README.md: {sorted(missing)}"


def test_state_document_example_has_the_keys_of_a_real_one(tmp_path):
    files = section(ROOT / "man" / "reaper.1", "FILES")
    m = re.search(r"^\.nf\n\.RS\n(\{.*?\})\n\.RE", files, re.M | re.S)
    assert m, "no example state document in reaper(1) FILES"
    example = json.loads(m.group(1).replace("\\-", "-"))
    state = tmp_path / "state.json"
    r = subprocess.run([str(BUILD / "reaper"), "run", "--cgroup", "off", "--state", str(state), "--", "/bin/true"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    real = json.loads(state.read_text())
    assert list(example) == list(real), set(example) ^ set(real)
    for key in real:
        assert "\\fB%s\\fR" % key in files or key in ("version", "run_id", "reaper_pid", "command_pid",
                                                         "active_children", "reaped_children_total",
                                                         "reaped_orphans_total", "leaks", "updated_at"), key


def check_targets() -> set[str]:
    # the data base of a dry run of a target whose recipes start no make of their own (a dry
    # run still runs every recipe line that does)
    out = subprocess.run(["make", "-s", "-C", str(ROOT), f"BUILD={BUILD}", "-pn", "all"],
                         capture_output=True, text=True).stdout
    (line,) = [x for x in out.splitlines() if x.startswith("CHECK_TARGETS :=")]
    return set(line.split(":=", 1)[1].split())


def test_testing_md_names_every_suite_and_check_target():
    text = (ROOT / "docs" / "TESTING.md").read_text()
    suites = {p.stem for p in (ROOT / "tests").glob("check_*.c")}
    missing = {s for s in suites if f"`{s}`" not in text}
    assert not missing, f"Check suites docs/TESTING.md does not place: {sorted(missing)}"
    targets = check_targets()
    assert {"check-c", "check-cli", "check-python"} <= targets, targets
    missing = {t for t in targets if f"make {t}" not in text}
    assert not missing, f"make check targets docs/TESTING.md does not list: {sorted(missing)}"
    for d in ("tests/cli/", "tests/supervisor/", "tests/pkg/", "harness/python/tests/"):
        assert d in text, d


def test_readme_is_a_short_map():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines: move the details to the pages it points at"
    text = "\n".join(lines)
    for cmd in ("make check", "make demo", "reaper run", "reaper reap", "import reaper", "reaper_check_tcase",
                "--reaper"):
        assert cmd in text, cmd
    for page in re.findall(r"\]\(([^)#]+)\)", text):
        assert (ROOT / page).exists(), f"README.md links to {page}, which is not there"


def test_install_puts_the_check_helper_page_with_a_link_per_function(tmp_path):
    if not (BUILD / "libreaper-check.a").exists():
        pytest.fail("the Check helper was not built (Check's header is missing: make deps installs it)")
    args = ["make", "-s", "-C", str(ROOT), f"BUILD={BUILD}", f"DESTDIR={tmp_path}", "PREFIX=/usr",
            "MANDIR=/usr/share/man"]
    r = subprocess.run(args + ["install"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    man3 = tmp_path / "usr/share/man/man3"
    assert (man3 / "reaper_check.3").read_bytes() == (ROOT / "man" / "reaper_check.3").read_bytes()
    header = (ROOT / "harness" / "check" / "reaper" / "check.h").read_text()
    funcs = set(re.findall(r"^[a-z_]+ \*?(reaper_check_\w*[a-z])\(", header, re.M))
    assert {"reaper_check_tcase", "reaper_check_fork"} <= funcs, funcs
    for fn in funcs:
        assert (man3 / f"{fn}.3").read_text() == ".so man3/reaper_check.3\n", fn
    r = subprocess.run(args + ["uninstall"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert [p for p in tmp_path.rglob("*") if not p.is_dir()] == []


def test_readme_usage_names_only_options_the_command_has():
    out = subprocess.run([str(BUILD / "reaper"), "--help"], capture_output=True, text=True, check=True).stdout
    helped = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", out))
    used = set()
    for line in (ROOT / "README.md").read_text().splitlines():
        m = re.match(r"^ {4}(?:reaper (?:run|scan|reap)\b| {12}\[|FINDERS:|REPORT OPTIONS:)(.*)", line)
        if m:
            used |= set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", m.group(1).split(" -- ")[0]))
    assert {"--home", "--timeout", "--junit"} <= used, used
    assert used <= helped, f"in the README's usage, not in reaper --help: {sorted(used - helped)}"


def test_the_defaults_the_docs_state_are_the_commands(tmp_path):
    """--timeout, --grace and --leak-exit-code: the default reaper(1), --help and the README
    give is what a run without them uses (read back from its state document)."""
    state = tmp_path / "state.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("REAPER_")}
    r = subprocess.run([str(BUILD / "reaper"), "run", "--cgroup", "off", "--state", str(state), "--", "/bin/true"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    real = json.loads(state.read_text())
    man = (ROOT / "man" / "reaper.1").read_text().replace("\\-", "-").replace("\\fB", "").replace("\\fR", "")
    helped = subprocess.run([str(BUILD / "reaper"), "--help"], capture_output=True, text=True).stdout
    readme = (ROOT / "README.md").read_text()
    for flag, key, var in (("--timeout", "timeout", "REAPER_TIMEOUT"), ("--grace", "grace", "REAPER_GRACE"),
                           ("--leak-exit-code", "leak_exit_code", "REAPER_LEAK_EXIT_CODE")):
        for name, text in (("reaper(1)", man), ("--help", helped)):
            said = set(re.findall(r"%s,\s+default (\d+)" % var, text))
            assert said == {str(real[key])}, (name, flag, said, real[key])
    assert f"`--timeout` seconds (default {real['timeout']})" in readme
    assert f"`--grace` seconds (default\n{real['grace']})" in readme or f"`--grace` seconds (default {real['grace']})" in readme
    assert f"| {real['leak_exit_code']} | run: COMMAND succeeded but left processes behind" in readme


def test_the_plugin_options_and_defaults_on_its_page_are_the_plugins():
    plugin = (ROOT / "harness" / "python" / "reaper" / "pytest" / "options.py").read_text()
    page = (ROOT / "harness" / "python" / "README.md").read_text()
    options = set(re.findall(r'addoption\("(--reaper[a-z-]*)"', plugin))
    ini = set(re.findall(r'addini\("(reaper[a-z_]*)"', plugin))
    assert {"--reaper", "--reaper-timeout", "--reaper-report"} <= options and "reaper_timeout" in ini
    missing = {o for o in options | ini if f"`{o}" not in page}
    assert not missing, f"plugin options not on harness/python/README.md: {sorted(missing)}"
    for what in ("TIMEOUT", "GRACE"):
        (value,) = re.findall(r"^DEFAULT_%s = ([0-9.]+)$" % what, plugin, re.M)
        opt = f"--reaper-{what.lower()}"
        said = re.findall(r"`%s` seconds \(default ([0-9.]+)" % opt, page)
        assert said and float(said[0]) == float(value), (opt, said, value)


def test_the_check_helpers_default_timeout_on_its_page_is_the_helpers():
    (value,) = re.findall(r"^#define DEFAULT_TIMEOUT ([0-9.]+)$",
                          (ROOT / "harness" / "check" / "check.c").read_text(), re.M)
    page = (ROOT / "man" / "reaper_check.3").read_text()
    said = set(re.findall(r"default ([0-9.]+)", page))
    assert said == {"%g" % float(value)}, (said, value)
