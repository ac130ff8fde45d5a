# SPDX-License-Identifier: MIT
"""`pip install` of harness/python into a fresh venv, offline (Debian's setuptools, no build
isolation): the wheel builds and bundles libreaper, the package loads the bundled copy, and
the pytest plugin it registers turns a leaking test into an error naming test and command.
The one wheel (py3-none-PLATFORM) installs and works on the oldest and newest Python it claims."""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

from conftest import copy_checkout
from procutil import ROOT, stat

LEAKY_SUITE = """
import os, subprocess

def test_clean():
    subprocess.run(["true"], check=True)

def test_clean_by_absolute_path():
    # Python 3.13 starts a program given by path through os.posix_spawn with env None
    subprocess.run(["/bin/true"], check=True)

def test_leaks_a_daemon():
    p = subprocess.Popen(["sleep", "300"], start_new_session=True)
    with open(os.environ["LEAK_PIDFILE"], "w") as f:
        f.write(str(p.pid))
"""


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pip")
    src = copy_checkout(tmp / "src")
    env_dir = tmp / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(env_dir)], check=True)
    py = env_dir / "bin" / "python"
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation", "--no-deps",
                        str(src / "harness/python")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return py


def clean_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REAPER_", "PYTHON"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def test_installed_package_loads_its_bundled_library(venv):
    out = subprocess.run([str(venv), "-c", "import importlib.metadata, reaper, reaper._lib as l; "
                          "print(reaper.library_path); print(reaper.__version__); print(l.candidates()[0]); "
                          "print(importlib.metadata.version('pytest-reaper'))"],
                         capture_output=True, text=True, check=True, env=clean_env(), cwd="/").stdout.split("\n")
    site = Path(venv).parent.parent / "lib"
    assert out[0].startswith(str(site)) and out[0].endswith("/reaper/libreaper.so"), out
    assert out[0] == out[2]
    # the wheel's metadata (setup.py reads the header) and the bundled library's own version
    # (what reaper.__version__ reports) are the header's
    header = (ROOT / "reaper/reaper.h").read_text()
    assert f'REAPER_VERSION "{out[1]}"' in header
    assert out[3] == out[1], out


def test_bad_library_is_named_with_what_was_tried(venv, tmp_path):
    env = clean_env()
    # on a copy of the installed package, not the venv itself
    site = subprocess.run([str(venv), "-c", "import reaper, os; print(os.path.dirname(reaper.__file__))"],
                          capture_output=True, text=True, check=True, env=env).stdout.strip()
    subprocess.run(["cp", "-r", site, str(tmp_path / "reaper")], check=True)
    (tmp_path / "reaper" / "libreaper.so").write_text("not a library")
    env["PYTHONPATH"] = str(tmp_path)
    env["REAPER_LIBRARY"] = "/nonexistent/libreaper.so"
    # importing works (installed, the pytest plugin is imported by every pytest run): the first
    # call that needs the library says what was tried
    imp = subprocess.run([str(venv), "-c", "import reaper"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert imp.returncode == 0, imp.stderr
    r = subprocess.run([str(venv), "-c", "import reaper; reaper.adopted()"], capture_output=True, text=True,
                       env=env, cwd=tmp_path)
    assert r.returncode != 0
    assert "cannot load libreaper; tried, in order:" in r.stderr
    assert str(tmp_path / "reaper" / "libreaper.so") in r.stderr and "/nonexistent/libreaper.so: not found" in r.stderr


def test_plugin_from_the_installed_package_catches_a_leak(venv, tmp_path):
    (tmp_path / "test_leaky.py").write_text(textwrap.dedent(LEAKY_SUITE))
    env = clean_env()
    env["LEAK_PIDFILE"] = str(tmp_path / "leak.pid")
    helped = subprocess.run([str(venv), "-m", "pytest", "--help"], capture_output=True, text=True, env=env,
                            cwd=tmp_path).stdout
    enable = ["--reaper"] if "--reaper " in helped or "--reaper\n" in helped else []
    r = subprocess.run([str(venv), "-m", "pytest", "-p", "no:cacheprovider", "--reaper-timeout", "1", *enable,
                        "test_leaky.py"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    pid = int((tmp_path / "leak.pid").read_text())
    try:
        out = r.stdout + r.stderr
        assert r.returncode == 1, out
        assert "ERROR at teardown of test_leaks_a_daemon" in out
        assert "sleep 300" in out
        assert "3 passed, 1 error" in out  # the body passed; its teardown errs
        st = stat(pid)  # read once: a zombie may be collected between two reads
        assert st is None or st["state"] == "Z"
    finally:
        kill_if_sleep(pid)


def kill_if_sleep(pid: int) -> None:
    """The leaked sleep, should a check have missed it (pidfd first, then the check)."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return
    try:
        if "sleep" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace"):
            signal.pidfd_send_signal(fd, signal.SIGKILL)
    except OSError:
        pass
    finally:
        os.close(fd)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel pip builds from a copy of the checkout under a path with spaces."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = copy_checkout(tmp / "my projects" / "re aper")
    out = tmp / "wheels"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-index", "--no-build-isolation", "--no-deps",
                        "-w", str(out), str(src / "harness/python")], capture_output=True, text=True, timeout=600,
                       env=clean_env())
    assert r.returncode == 0, r.stdout + r.stderr
    whl, = out.glob("pytest_reaper-*.whl")
    return whl


def test_wheel_builds_from_a_checkout_under_a_path_with_spaces(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "reaper/libreaper.so" in names
    assert "reaper/pytest_plugin.py" in names and "reaper/pytest/session.py" in names, names
    # the MIT licence asks for its text in every copy: the wheel carries it
    licence = [n for n in names if n.endswith(".dist-info/LICENSE")]
    assert licence, names
    assert "MIT" in zipfile.ZipFile(wheel).read(licence[0]).decode()


def test_wheel_is_for_any_python3_and_its_library_is_stripped(wheel, tmp_path):
    """ctypes only, no extension module: py3-none-PLATFORM, not the building interpreter's
    cp3X-cp3X tag (which pip refuses on every other Python)."""
    z = zipfile.ZipFile(wheel)
    meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/WHEEL"))).decode()
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    assert wheel.name == f"pytest_reaper-{wheel.name.split('-')[1]}-py3-none-{plat}.whl", wheel.name
    assert f"Tag: py3-none-{plat}\n" in meta and "Root-Is-Purelib: false" in meta, meta
    lib = tmp_path / "libreaper.so"
    lib.write_bytes(z.read("reaper/libreaper.so"))
    sections = subprocess.run(["readelf", "-S", "-W", str(lib)], capture_output=True, text=True, check=True).stdout
    assert ".symtab" not in sections and ".debug_info" not in sections, sections
    exported = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True).stdout
    assert " T reaper_reap\n" in exported  # what ctypes binds is still there


def claimed_pythons() -> list:
    """The oldest Python the package claims (requires-python) and the newest (its classifiers)."""
    text = (ROOT / "harness/python/pyproject.toml").read_text()
    oldest = re.search(r'^requires-python = ">=(3\.\d+)"', text, re.M).group(1)
    newest = max(re.findall(r'"Programming Language :: Python :: (3\.\d+)"', text), key=lambda v: int(v[2:]))
    return [oldest, newest]


def interpreter(version: str):
    """A CPython of that version: pyenv's (PYENV_ROOT, ~/.pyenv, /root/.pyenv), else on PATH."""
    roots = [os.environ.get("PYENV_ROOT"), os.path.expanduser("~/.pyenv"), "/root/.pyenv"]
    for root in filter(None, roots):
        try:
            found = sorted(Path(root, "versions").glob(f"{version}.*/bin/python{version}"),
                           key=lambda p: [int(x) for x in re.findall(r"\d+", p.parts[-3])])
        except PermissionError:  # another user's pyenv (/root/.pyenv for a plain user)
            continue
        if found:
            return str(found[-1])
    return shutil.which(f"python{version}")


# Debian's pytest (python3-pytest; on 3.9 and 3.10 with python3-exceptiongroup and python3-tomli)
# is pure Python: a fresh venv of another Python runs it from there, offline.
DEBIAN_SITE = "/usr/lib/python3/dist-packages"


@pytest.mark.parametrize("version", claimed_pythons())
def test_wheel_catches_a_leak_on_the_oldest_and_newest_python(wheel, version, tmp_path):
    py = interpreter(version)
    if not py:
        pytest.skip(f"no Python {version} on this machine (pyenv or python{version} on PATH) to test the wheel on")
    env_dir = tmp_path / "venv"
    subprocess.run([py, "-m", "venv", str(env_dir)], check=True, capture_output=True, timeout=300)
    vpy = str(env_dir / "bin" / "python")
    r = subprocess.run([vpy, "-m", "pip", "install", "-q", "--no-index", "--no-deps", str(wheel)],
                       capture_output=True, text=True, timeout=300, env=clean_env())
    assert r.returncode == 0, r.stdout + r.stderr
    env = clean_env()
    env["PYTHONPATH"] = DEBIAN_SITE
    env["LEAK_PIDFILE"] = str(tmp_path / "leak.pid")
    probe = subprocess.run([vpy, "-c", "import sys, reaper; print('%d.%d' % sys.version_info[:2]); "
                            "print(reaper.library_path); import pytest; print(pytest.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path)
    assert probe.returncode == 0, probe.stderr
    got, lib, pytest_file = probe.stdout.split()
    assert got == version
    assert lib.startswith(str(env_dir)) and lib.endswith("/reaper/libreaper.so"), lib
    assert pytest_file.startswith(DEBIAN_SITE), pytest_file
    (tmp_path / "test_leaky.py").write_text(textwrap.dedent(LEAKY_SUITE))
    r = subprocess.run([vpy, "-m", "pytest", "-p", "no:cacheprovider", "--reaper", "--reaper-timeout", "1",
                        "test_leaky.py"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    pid = int((tmp_path / "leak.pid").read_text())
    try:
        out = r.stdout + r.stderr
        assert r.returncode == 1, out
        assert f"platform linux -- Python {version}." in out
        # found through the wheel's pytest11 entry point (other installed plugins may come first)
        assert re.search(r"^plugins: (.*, )?reaper-", out, re.M), out
        assert "ERROR at teardown of test_leaks_a_daemon" in out and "sleep 300" in out
        assert "3 passed, 1 error" in out
        st = stat(pid)  # read once: a zombie may be collected between two reads
        assert st is None or st["state"] == "Z"
    finally:
        kill_if_sleep(pid)


def test_a_library_without_the_api_is_named_not_a_crash(tmp_path):
    """REAPER_LIBRARY naming a library that loads but is not this libreaper (another
    library, an older libreaper without a function this package calls)."""
    libc = subprocess.run(["/usr/bin/python3", "-c", "import ctypes.util; print(ctypes.util.find_library('c'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    env = clean_env()
    env["PYTHONPATH"] = str(ROOT / "harness/python")
    env["REAPER_LIBRARY"] = libc
    r = subprocess.run(["/usr/bin/python3", "-c", "import reaper; reaper.adopted()"], capture_output=True, text=True, env=env,
                       cwd=tmp_path)
    assert r.returncode != 0
    assert "ImportError: reaper: cannot load libreaper; tried, in order:" in r.stderr, r.stderr
    assert f"{libc}: not libreaper " in r.stderr and "undefined symbol: reaper_" in r.stderr
