# SPDX-License-Identifier: MIT
"""The library boundary and the build: only the public API is exported, a plain `make` needs
a C compiler and libc only (no apt-get, no test tools, no -Werror), every source carries its
licence line, and the version has one home."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import copy_checkout
from procutil import BUILD, ROOT


def public_functions() -> set[str]:
    text = (ROOT / "reaper" / "reaper.h").read_text()
    marked = set(re.findall(r"^REAPER_EXPORT [^(;]*?\b(reaper_\w+)\(", text, re.M))
    # every function the header declares carries the mark
    declared = set(re.findall(r"^[a-z][^(;#/]*?[ *](reaper_\w+)\(", text, re.M))
    assert declared <= marked, f"declared without REAPER_EXPORT: {sorted(declared - marked)}"
    return marked


def defined_globals(args: list[str]) -> set[str]:
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if re.search(r" [TDBRVW] ", line)}


def test_shared_library_exports_the_public_api_only():
    exported = defined_globals(["nm", "-D", "--defined-only", str(BUILD / "libreaper.so")])
    public = public_functions()
    assert exported == public, (f"exported but not public: {sorted(exported - public)}; "
                                f"public but not exported: {sorted(public - exported)}")
    assert {"reaper_reap", "reaper_scan", "reaper_adopt"} <= exported
    assert "reaper_parse_stat" not in exported and "pidref_open" not in exported


def test_static_library_hides_the_same_internals():
    assert defined_globals(["nm", "--defined-only", "-g", str(BUILD / "libreaper.a")]) == public_functions()


def test_proc_parsers_left_the_public_header():
    text = (ROOT / "reaper" / "reaper.h").read_text()
    for name in ("reaper_parse_stat", "reaper_environ_has", "reaper_environ_get", "struct reaper_stat"):
        assert name not in text


def make_commands(*args: str) -> str:
    # as a user types it: not inside `make check` (which exports DEV=1 to its sub-makes)
    env = {k: v for k, v in os.environ.items() if k not in ("DEV", "MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    return subprocess.run(["make", "-n", "-B", "-C", str(ROOT), f"BUILD={BUILD}-dry", *args],
                          capture_output=True, text=True, check=True, env=env).stdout


def test_plain_make_runs_no_dependency_installer_and_no_werror():
    plain = make_commands("all")
    assert "deps.sh" not in plain and "apt-get" not in plain
    assert " cc " in plain or plain.startswith("cc ") or "cc -std" in plain
    assert "-Werror" not in plain
    assert "-Werror" in make_commands("DEV=1", "all")
    # the test targets do install what they need, through the explicit deps target
    assert "deps.sh" in make_commands("check-c")


@pytest.fixture
def world_readable_dir():
    """pytest's tmp_path is private to root; nobody must reach this one."""
    d = Path(tempfile.mkdtemp(prefix="reaper-pkg-", dir="/tmp"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d)


@pytest.mark.skipif(os.geteuid() != 0, reason="builds as the unprivileged user nobody, which needs root")
def test_make_as_nobody_with_a_compiler_only(world_readable_dir):
    """A copy of the checkout, owned by nobody, built by nobody with a PATH that holds the
    compiler, make and coreutils only: no check, valgrind, clang, pytest, pkg-config or apt."""
    tmp_path = world_readable_dir
    checkout = copy_checkout(tmp_path / "src")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("make", "cc", "gcc", "as", "ld", "ar", "objcopy", "sh", "sed", "mkdir", "rm", "cat", "printf"):
        path = shutil.which(tool)
        assert path, tool
        os.symlink(path, bindir / tool)
    subprocess.run(["chown", "-R", "nobody", str(checkout)], check=True)
    env = {"PATH": str(bindir), "HOME": str(checkout), "LC_ALL": "C"}
    # HAVE_CHECK= : as on a machine without Check's header
    r = subprocess.run([shutil.which("runuser") or "/usr/sbin/runuser", "-u", "nobody", "--", str(bindir / "make"), "-C", str(checkout), "-j2",
                        "HAVE_CHECK="], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for art in ("reaper", "libreaper.so", "libreaper.a"):
        assert (checkout / "build" / art).exists()
    assert "-Werror" not in r.stdout and "deps" not in r.stdout
    assert not (checkout / "build" / "libreaper-check.a").exists()


def test_every_source_has_a_licence_line():
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True,
                           check=True).stdout.split()
    sources = [f for f in files if re.search(r"\.(c|h|py|mk|sh)$|(^|/)Makefile$|^\.ci/run$", f)
               and not f.startswith(("fuzz/corpus/", "docs/"))]
    missing = [f for f in sources if "SPDX-License-Identifier: MIT" not in (ROOT / f).read_text(errors="replace")[:400]]
    assert not missing, f"no SPDX line: {missing}"


def test_version_has_one_home():
    header = (ROOT / "reaper" / "reaper.h").read_text()
    (version,) = re.findall(r'^#define REAPER_VERSION "([^"]+)"', header, re.M)
    # debian/changelog names the version a package is built at (dpkg reads it there; make deb
    # refuses one that is not the header's), the symbols file the version each function came in
    files = subprocess.run(["git", "-C", str(ROOT), "grep", "-l", "-F", version, "--", ".",
                            ":!CHANGELOG.md", ":!*.md", ":!tests/", ":!debian/changelog", ":!debian/*.symbols"],
                           capture_output=True, text=True).stdout.split()
    assert files == ["reaper/reaper.h"], files
    changelog = (ROOT / "debian/changelog").read_text()
    assert changelog.startswith(f"reaper ({version}) "), changelog.splitlines()[0]
    # what the programs built from it say: the command, and the Python package run from the
    # checkout (the version its library reports)
    out = subprocess.run([str(BUILD / "reaper"), "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"reaper {version}"
    out = subprocess.run(["python3", "-c", "import reaper; print(reaper.__version__)"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "harness/python"),
                              "REAPER_LIBRARY": str(BUILD / "libreaper.so")}, check=True)
    assert out.stdout.strip() == version


def test_install_honours_the_directories_and_links_every_function_page(tmp_path):
    """LIBDIR/MANDIR/... are honoured, both .pc files work, `man 3 reaper_reap` (and every other
    public function) leads to libreaper(3), and uninstall takes it all back."""
    args = ["make", "-s", "-C", str(ROOT), f"BUILD={BUILD}", f"DESTDIR={tmp_path}", "PREFIX=/usr",
            "LIBDIR=/usr/lib/x86_64-linux-gnu", "MANDIR=/usr/share/man"]
    r = subprocess.run(args + ["install"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lib = tmp_path / "usr/lib/x86_64-linux-gnu"
    assert (lib / "libreaper.so").resolve().name.startswith("libreaper.so.0.")
    assert os.readlink(lib / "libreaper.so.0").startswith("libreaper.so.0.")
    man3 = tmp_path / "usr/share/man/man3"
    for fn in public_functions():
        assert (man3 / f"{fn}.3").read_text() == ".so man3/libreaper.3\n", fn
    if shutil.which("man"):
        page = subprocess.run(["man", "-M", str(tmp_path / "usr/share/man"), "-w", "3", "reaper_reap"],
                              capture_output=True, text=True)
        assert page.returncode == 0 and page.stdout.strip().endswith("man3/libreaper.3")  # the .so link followed, page.stderr
        text = subprocess.run(["man", "-M", str(tmp_path / "usr/share/man"), "3", "reaper_reap"],
                              capture_output=True, text=True, env={**os.environ, "MANPAGER": "cat", "PAGER": "cat"})
        assert "LIBREAPER(3)" in text.stdout
    pc = lib / "pkgconfig"
    assert "libdir=/usr/lib/x86_64-linux-gnu" in (pc / "libreaper.pc").read_text()
    if (pc / "libreaper-check.pc").exists() and shutil.which("pkg-config"):
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libreaper-check"], capture_output=True, text=True,
                               env={**os.environ, "PKG_CONFIG_PATH": str(pc)})
        assert flags.returncode == 0, flags.stderr
        assert "-lreaper-check" in flags.stdout and "-lreaper" in flags.stdout
    r = subprocess.run(args + ["uninstall"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert [p for p in tmp_path.rglob("*") if not p.is_dir()] == []


@pytest.mark.parametrize("compiler,std", [("cc", "c89"), ("cc", "c99"), ("cc", "c11"),
                                          ("g++", "c++98"), ("g++", "c++11"), ("g++", "c++17")])
def test_public_headers_compile_pedantic_in_c_and_cpp(tmp_path, compiler, std):
    """What a user's project includes: <reaper/reaper.h> (and <reaper/check.h> where Check is
    installed), warning-free under -Wall -Wextra -pedantic in old and new C and C++."""
    if not shutil.which(compiler):
        pytest.skip(f"{compiler} is not installed")
    lang = "c++" if compiler == "g++" else "c"
    src = tmp_path / "use.src"
    src.write_text("#include <reaper/reaper.h>\nint main(void) { struct reaper_opts o; reaper_opts_init(&o); "
                   "return 0; }\n")
    args = [compiler, f"-std={std}", "-Wall", "-Wextra", "-pedantic", "-Werror", f"-I{ROOT}", "-x", lang, "-c",
            "-o", os.devnull]
    r = subprocess.run(args + [str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    have_check = subprocess.run([compiler, "-x", lang, "-E", "-o", os.devnull, "-"], input="#include <check.h>\n",
                                capture_output=True, text=True).returncode == 0
    if have_check:
        src.write_text("#include <reaper/check.h>\n")
        r = subprocess.run(args + [f"-I{ROOT}/harness/check", str(src)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


def test_packager_flags_reach_compiler_and_linker():
    """dpkg-buildflags hands over CPPFLAGS (-D_FORTIFY_SOURCE=2) and LDFLAGS (-z relro -z now):
    every compile gets the one, every link of the installed programs the other."""
    lines = make_commands("CPPFLAGS=-DREAPER_PACKAGER_PROBE=1", "LDFLAGS=-Wl,-z,now", "all").splitlines()
    compiles = [line for line in lines if " -c " in line]
    assert compiles and all("-DREAPER_PACKAGER_PROBE=1" in line for line in compiles), compiles
    for out in ("/reaper ", "/libreaper.so "):
        links = [line for line in lines if f"-o {BUILD}-dry{out}" in line]
        assert links and all("-Wl,-z,now" in line for line in links), (out, links)


def test_install_without_the_python_package(tmp_path):
    """INSTALL_PYTHON=no: a packager who builds the Python package on its own gets the rest."""
    args = ["make", "-s", "-C", str(ROOT), f"BUILD={BUILD}", f"DESTDIR={tmp_path}", "PREFIX=/usr",
            "LIBDIR=/usr/lib/x86_64-linux-gnu", "INSTALL_PYTHON=no"]
    r = subprocess.run(args + ["install"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "usr/bin/reaper").exists() and (tmp_path / "usr/lib/x86_64-linux-gnu/libreaper.so.0").exists()
    assert not (tmp_path / "usr/lib/python3").exists()
    r = subprocess.run(args + ["uninstall"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert [p for p in tmp_path.rglob("*") if not p.is_dir()] == []


def test_install_under_a_strict_umask_is_readable_by_every_user(tmp_path):
    """Root's umask is often 077 on hardened hosts: what `make install` puts in place (the
    pkg-config files, the function pages, the Python package) is still readable by the users
    the install is for (0644 files, 0755 directories), as install -m gives its own files."""
    root = tmp_path / "root"
    args = ["make", "-s", "-C", str(ROOT), f"BUILD={BUILD}", f"DESTDIR={root}", "PREFIX=/usr"]
    r = subprocess.run(["sh", "-c", 'umask 077 && exec "$@"', "sh", *args, "install"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (root / "usr/lib/pkgconfig/libreaper.pc").exists()
    assert list(root.glob("usr/lib/python3/dist-packages/reaper/__init__.py")), "the Python package is installed"
    private = [f"{p.stat().st_mode & 0o777:o} {p.relative_to(root)}" for p in root.rglob("*")
               if not p.is_symlink() and p.stat().st_mode & (0o055 if p.is_dir() else 0o044) != (0o055 if p.is_dir() else 0o044)]
    assert private == [], private
    r = subprocess.run(args + ["uninstall"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_install_and_uninstall_with_a_destdir_holding_spaces(tmp_path):
    """DESTDIR is the packager's, often under a build directory whose path holds a space
    (debhelper passes the absolute debian/tmp of a checkout in "/home/me/my src"): install puts
    every part there, Python package included, and uninstall takes it all back."""
    root = tmp_path / "my src" / "debian tmp"
    args = ["make", "-s", "-C", str(ROOT), f"BUILD={BUILD}", f"DESTDIR={root}", "PREFIX=/usr"]
    r = subprocess.run(args + ["install"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    for path in ("usr/bin/reaper", "usr/lib/libreaper.so.0", "usr/lib/pkgconfig/libreaper.pc",
                 "usr/share/man/man3/reaper_reap.3", "usr/lib/python3/dist-packages/reaper/__init__.py"):
        assert (root / path).exists(), path
    assert not (tmp_path / "my").exists()
    r = subprocess.run(args + ["uninstall"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert [p for p in tmp_path.rglob("*") if not p.is_dir()] == []


def test_make_install_installs_both_man_pages(tmp_path):
    """`make install` puts reaper(1) and libreaper(3) under MANDIR as they are in man/."""
    r = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), f"BUILD={BUILD}", "install",
                        f"DESTDIR={tmp_path}", "PREFIX=/usr"], capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr
    for page in ("share/man/man1/reaper.1", "share/man/man3/libreaper.3"):
        installed = tmp_path / "usr" / page
        assert installed.read_bytes() == (ROOT / "man" / Path(page).name).read_bytes()
