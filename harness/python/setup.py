# SPDX-License-Identifier: MIT
"""Build steps pyproject.toml cannot say: the version, read from reaper/reaper.h (its one
home; at run time the package reports the loaded library's, reaper_version()), and
libreaper, compiled from the checkout's C sources by the top-level Makefile and bundled into
the package.

The package is ctypes over a plain C library, no extension module: the wheel is tagged
py3-none-PLATFORM (any Python 3 on that platform), and the bundled library is stripped.

REAPER_PY_LIBDIR=DIR builds a package without a bundled library that loads DIR/libreaper.so.0
instead (what `make install` does, beside the library it installs)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

try:  # setuptools 70.1 and later carry bdist_wheel; before, the wheel package does
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    try:
        from wheel.bdist_wheel import bdist_wheel
    except ImportError:  # no wheel is being built (e.g. an sdist)
        bdist_wheel = None

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
HEADER = ROOT / "reaper" / "reaper.h"


def version() -> str:
    try:
        text = HEADER.read_text()
    except OSError as e:
        raise SystemExit(f"pytest-reaper: {HEADER}: {e.strerror}; build from a reaper checkout "
                         "(the wheel compiles libreaper from its C sources)")
    m = re.search(r'^#define REAPER_VERSION "([^"]+)"', text, re.M)
    if not m:
        raise SystemExit(f"pytest-reaper: no REAPER_VERSION in {HEADER}")
    return m.group(1)


def installed_libdir() -> str | None:
    return os.environ.get("REAPER_PY_LIBDIR") or None


class BuildWithLibrary(build_py):
    """build_py, plus libreaper.so built by `make` into the build tree and copied in."""

    def run(self):
        super().run()
        pkg = Path(self.build_lib) / "reaper"
        libdir = installed_libdir()
        # the build tree is reused between builds: drop what the other kind of build left
        (pkg / ("libreaper.so" if libdir else "_installed.py")).unlink(missing_ok=True)
        if libdir:
            (pkg / "_installed.py").write_text(f'LIBDIR = "{libdir}"\n')
            return
        out = Path(self.get_finalized_command("build").build_temp).resolve() / "libreaper"
        # make splits file names at blanks: the build tree is named relative to the checkout
        # (harness/python/build/...), so a checkout under "/path with spaces" builds too
        try:
            target = out.relative_to(ROOT)
        except ValueError:
            target = out
        scratch = None
        if any(c.isspace() for c in str(target)):
            target = out = Path(scratch := tempfile.mkdtemp(prefix="pytest-reaper-"))
        make = os.environ.get("MAKE", "make")
        cmd = [make, "--no-print-directory", "-C", str(ROOT), f"BUILD={target}", f"{target}/libreaper.so"]
        self.announce("building libreaper: " + " ".join(cmd), level=2)
        try:
            subprocess.run(cmd, check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            raise SystemExit(f"pytest-reaper: building libreaper failed ({e}); it needs make and "
                             "a C compiler")
        shutil.copy2(out / "libreaper.so", pkg / "libreaper.so")
        strip(pkg / "libreaper.so")
        if scratch:
            shutil.rmtree(scratch)

    def get_outputs(self, include_bytecode=True):
        pkg = Path(self.build_lib) / "reaper"
        extra = "_installed.py" if installed_libdir() else "libreaper.so"
        return super().get_outputs(include_bytecode) + [str(pkg / extra)]


def strip(lib: Path) -> None:
    """Debug information and the local symbol table out of the bundled copy (a third of its
    size); its dynamic symbols, the API ctypes binds, stay."""
    tool = os.environ.get("STRIP", "strip")
    try:
        subprocess.run([tool, "--strip-unneeded", str(lib)], check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"pytest-reaper: stripping {lib} failed ({e}); it needs {tool} (binutils)")


class LibraryDistribution(Distribution):
    """A wheel that bundles a compiled library is platform-specific."""

    def has_ext_modules(self):
        return not installed_libdir()


# The egg-info goes to the build tree: in the package's own directory it would register the
# pytest entry point for anyone who puts that directory on PYTHONPATH (the test suites do).
(HERE / "build").mkdir(exist_ok=True)
cmdclass = {"build_py": BuildWithLibrary}
if bdist_wheel is not None:
    class AnyPython3Wheel(bdist_wheel):
        """Platform-specific (the bundled library), Python-independent (ctypes loads it):
        py3-none-PLATFORM rather than the building interpreter's cp3X-cp3X-PLATFORM."""

        def get_tag(self):
            _, _, plat = super().get_tag()
            return "py3", "none", plat

    cmdclass["bdist_wheel"] = AnyPython3Wheel
setup(version=version(), cmdclass=cmdclass, distclass=LibraryDistribution,
      options={"egg_info": {"egg_base": "build"}})
