# SPDX-License-Identifier: MIT
"""`make install` puts the package where Debian's python3 looks, registers the pytest entry
point, and installs <reaper/check.h> with libreaper-check.a; `make uninstall` takes it all away."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from procutil import BUILD, ROOT

# `make install` installs the package for Debian's python3 (the Makefile's PYTHON), whichever
# interpreter runs this suite: that is the one that must find it.
PYTHON = "/usr/bin/python3"


def make_install(dest: Path, prefix: str) -> None:
    subprocess.run(["make", "-s", "-C", str(ROOT), f"BUILD={BUILD}", f"DESTDIR={dest}", f"PREFIX={prefix}",
                    f"PYTHON={PYTHON}", "install-python", "install-check"], check=True, capture_output=True)


def site_of(prefix: str) -> str:
    out = subprocess.run([PYTHON, "-c", "import sys; print('\\n'.join(sys.path))"],
                         capture_output=True, text=True, check=True, env={"PATH": os.environ["PATH"]})
    return next(p for p in out.stdout.split() if p.startswith(prefix + "/lib/python3") and "dist-packages" in p)


@pytest.mark.parametrize("prefix", ["/usr", "/usr/local"])
def test_installed_package_is_importable_and_registers_the_plugin(tmp_path, prefix):
    make_install(tmp_path, prefix)
    site = tmp_path / site_of(prefix).lstrip("/")
    assert (site / "reaper" / "__init__.py").exists() and (site / "reaper" / "pytest_plugin.py").exists()
    assert (site / "reaper" / "pytest" / "session.py").exists()
    (dist,) = site.glob("pytest_reaper-*.dist-info")
    assert "[pytest11]\nreaper = reaper.pytest_plugin\n" in (dist / "entry_points.txt").read_text()
    assert not (site / "reaper" / "libreaper.so").exists()  # it loads the one installed beside it
    assert (site / "reaper" / "_installed.py").read_text() == f'LIBDIR = "{prefix}/lib"\n'
    assert (tmp_path / prefix.lstrip("/") / "include/reaper/check.h").exists()
    assert (tmp_path / prefix.lstrip("/") / "lib/libreaper-check.a").exists()
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(site), "PYTHONDONTWRITEBYTECODE": "1"}
    env["REAPER_LIBRARY"] = str(BUILD / "libreaper.so")  # nothing installed it in /usr
    code = ("import importlib.metadata as m, os, reaper, reaper._lib as l; "
            "print([e.value for e in m.entry_points(group='pytest11') if e.name == 'reaper']); "
            "os.environ.pop('REAPER_LIBRARY'); print(l.candidates()[0]); print(reaper.__file__)")
    out = subprocess.run([PYTHON, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=tmp_path)
    assert out.stdout.split("\n")[:3] == ["['reaper.pytest_plugin']", f"{prefix}/lib/libreaper.so.0",
                                          str(site / "reaper" / "__init__.py")]
    # pytest loads it by itself through the entry point
    helped = subprocess.run([PYTHON, "-m", "pytest", "--help"], env=env,
                            capture_output=True, text=True, cwd=tmp_path)
    assert helped.returncode == 0 and "--reaper-timeout" in helped.stdout


def test_uninstall_removes_what_install_put(tmp_path):
    args = ["make", "-s", "-C", str(ROOT), f"BUILD={BUILD}", f"DESTDIR={tmp_path}", "PREFIX=/usr"]
    subprocess.run(args + ["install"], check=True, capture_output=True)
    assert (tmp_path / "usr/lib/libreaper.so.0").exists()
    subprocess.run(args + ["uninstall"], check=True, capture_output=True)
    left = [str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if not p.is_dir()]
    assert left == []
    assert not (tmp_path / "usr/lib/python3/dist-packages/reaper").exists()  # nor the package's directories


def test_installed_check_header_builds_the_example(tmp_path):
    make_install(tmp_path, "/usr")
    libs = subprocess.run(["pkg-config", "--libs", "check"], capture_output=True, text=True).stdout.split() \
        or ["-lcheck", "-lsubunit", "-lm", "-lrt", "-lpthread"]
    exe = tmp_path / "example"
    subprocess.run(["cc", "-std=gnu11", "-Wall", "-Werror", f"-I{tmp_path}/usr/include", "-o", str(exe),
                    str(ROOT / "harness/examples/check/example.c"), f"{tmp_path}/usr/lib/libreaper-check.a",
                    str(BUILD / "libreaper.a"), *libs, "-lpthread"], check=True)
    run = subprocess.run([str(exe)], capture_output=True, text=True, env={**os.environ, "REAPER_CHECK_TIMEOUT": "0.5"})
    assert run.returncode == 1
    assert "leaves_a_daemon:0: reaper: test leaves_a_daemon left 1 process running" in run.stdout
    assert "sleep 300 [killed" in run.stdout and "Checks: 2, Failures: 1" in run.stdout
