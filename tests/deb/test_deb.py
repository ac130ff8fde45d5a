# SPDX-License-Identifier: MIT
"""The Debian packages as a user of them gets them: the files each one ships, lintian's
verdict, the command hardened with the build flags, and the installed files at work (unpacked
into a throwaway root): the demo suite under the packaged reaper, the packaged pytest plugin
found through its entry point, and a Check suite built against the packaged -dev files."""
from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import signal
import subprocess
import uuid
from pathlib import Path

import pytest

from procutil import BUILD, ROOT, environ, pidfds_where

MARK = "REAPER_DEB_TEST_RUN"


def contents(deb: Path) -> dict:
    """{path: (mode string, size, link target or None)} from dpkg -c."""
    out = {}
    for line in subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        f = line.split(None, 5)
        name, link = (f[5].split(" -> ") + [None])[:2]
        out[name.lstrip(".")] = (f[0], int(f[2]), link)
    return out


def public_functions() -> set:
    text = (ROOT / "reaper" / "reaper.h").read_text()
    return set(re.findall(r"^REAPER_EXPORT [^(;]*?\b(reaper_\w+)\(", text, re.M))


def version() -> str:
    return re.search(r'^#define REAPER_VERSION "([^"]+)"', (ROOT / "reaper/reaper.h").read_text(), re.M).group(1)


def test_each_package_ships_its_part(debs, multiarch):
    lib = f"/usr/lib/{multiarch}"
    v = version()
    files = {pkg: contents(deb) for pkg, deb in debs.items()}
    for pkg in sorted(files):
        print(f"== {debs[pkg].name} ({debs[pkg].stat().st_size} bytes)")
        for name, (mode, size, link) in sorted(files[pkg].items()):
            if not mode.startswith("d"):
                print(f"   {mode} {size:>7} {name}" + (f" -> {link}" if link else ""))
    reaper = files["reaper"]
    assert reaper["/usr/bin/reaper"][0] == "-rwxr-xr-x"
    assert "/usr/share/man/man1/reaper.1.gz" in reaper
    so = files["libreaper0"]
    assert so[f"{lib}/libreaper.so.0"][2] == f"libreaper.so.{v}" and f"{lib}/libreaper.so.{v}" in so
    assert f"{lib}/libreaper.so" not in so  # the link a linker wants is -dev's
    dev = files["libreaper-dev"]
    for path in ("/usr/include/reaper/reaper.h", f"{lib}/libreaper.a", f"{lib}/pkgconfig/libreaper.pc",
                 "/usr/share/man/man3/libreaper.3.gz"):
        assert path in dev, path
    assert dev[f"{lib}/libreaper.so"][2] == "libreaper.so.0"
    for fn in public_functions():
        assert dev[f"/usr/share/man/man3/{fn}.3.gz"][2] == "libreaper.3.gz", fn
    chk = files["libreaper-check-dev"]
    for path in ("/usr/include/reaper/check.h", f"{lib}/libreaper-check.a", f"{lib}/pkgconfig/libreaper-check.pc",
                 "/usr/share/man/man3/reaper_check.3.gz"):
        assert path in chk, path
    for fn in ("reaper_check_tcase", "reaper_check_set_timeout", "reaper_check_use_cgroup", "reaper_check_own",
               "reaper_check_fork", "reaper_check_allow"):
        assert chk[f"/usr/share/man/man3/{fn}.3.gz"][2] == "reaper_check.3.gz", fn
    py = files["python3-reaper"]
    site = "/usr/lib/python3/dist-packages"
    for path in ("reaper/__init__.py", "reaper/_lib.py", "reaper/pytest_plugin.py", "reaper/_installed.py",
                 "reaper/pytest/__init__.py", "reaper/pytest/session.py",
                 f"pytest_reaper-{v}.dist-info/entry_points.txt"):
        assert f"{site}/{path}" in py, path
    assert f"{site}/reaper/libreaper.so" not in py  # it loads libreaper0's
    # nothing is shipped twice
    owners = {}
    for pkg, fs in files.items():
        for name, (mode, _, _) in fs.items():
            if not mode.startswith("d") and "/usr/share/doc/" not in name:
                assert name not in owners, f"{name} in {owners.get(name)} and {pkg}"
                owners[name] = pkg


def test_make_deb_keeps_what_else_its_output_directory_holds(deb_build):
    """DEB_OUT may be a directory of the packager's (where other packages are collected): the
    build replaces this project's packages of an earlier build there, and nothing else."""
    assert deb_build["kept"] == {"others": True, "earlier": False}, deb_build["kept"]
    assert not list(deb_build["debs"]["reaper"].parent.glob(".deb-build.*")), "the build's own directory is left"


def test_python_package_record_lists_what_it_ships(instroot):
    """The dist-info RECORD (what importlib.metadata.files() and pip read) names each file of
    the package with its hash, and no file the package does not ship."""
    site = instroot / "usr/lib/python3/dist-packages"
    record, = site.glob("pytest_reaper-*.dist-info/RECORD")
    listed = {}
    for line in record.read_text().splitlines():
        name, digest, _ = line.rsplit(",", 2)
        listed[name] = digest
    shipped = {str(p.relative_to(site)) for p in site.rglob("*") if p.is_file()}
    assert set(listed) == shipped, f"listed, not shipped: {sorted(set(listed) - shipped)}; " \
                                   f"shipped, not listed: {sorted(shipped - set(listed))}"
    for name, digest in listed.items():
        if digest:
            want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256((site / name).read_bytes()).digest()).decode()
            assert digest.rstrip("=") == want.rstrip("="), name


def test_a_build_in_the_checkout_leaves_only_ignored_files():
    """What dpkg-buildpackage run in the checkout itself writes under debian/ (debhelper's
    per-package logs, maintainer script snippets and trees) is ignored by git: `git status`
    stays clean and `make deb` does not copy it into the tree it builds."""
    packages = re.findall(r"^Package: (\S+)", (ROOT / "debian/control").read_text(), re.M)
    written = ["debian/build/obj/x.o", "debian/tmp/usr/bin/reaper", "debian/.debhelper/generated/x",
               "debian/debhelper-build-stamp", "debian/files"]
    for pkg in packages:
        written += [f"debian/{pkg}/DEBIAN/control", f"debian/{pkg}.substvars", f"debian/{pkg}.debhelper.log",
                    f"debian/{pkg}.postinst.debhelper", f"debian/{pkg}.prerm.debhelper"]
    r = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "--no-index", "-v", "-n", *written],
                       capture_output=True, text=True)
    unignored = [line.split("\t")[-1] for line in r.stdout.splitlines() if line.startswith("::")]
    assert not unignored, f"not in .gitignore: {unignored}"


def test_package_relations(debs):
    def field(pkg, name):
        return subprocess.run(["dpkg-deb", "-f", str(debs[pkg]), name], capture_output=True, text=True,
                              check=True).stdout.strip()
    v = version()
    assert field("libreaper-dev", "Depends").startswith(f"libreaper0 (= {v})")
    assert f"libreaper-dev (= {v})" in field("libreaper-check-dev", "Depends")
    assert "check" in field("libreaper-check-dev", "Depends").split(", ")
    assert f"libreaper0 (= {v})" in field("python3-reaper", "Depends") and "python3" in field("python3-reaper", "Depends")
    assert field("libreaper0", "Multi-Arch") == "same"
    assert "libc6" in field("reaper", "Depends")  # linked dynamically: see debian/rules


def test_lintian_reports_no_error(debs):
    changes = next(debs["reaper"].parent.glob("*.changes"))
    r = subprocess.run(["lintian", "--pedantic", "--info", "--color", "never", str(changes)], capture_output=True,
                       text=True, timeout=600)
    tags = [line for line in r.stdout.splitlines() if re.match(r"[EWIPX]: ", line)]
    print("lintian:", *tags or ["(no tags)"], sep="\n  ")
    errors = [t for t in tags if t.startswith("E: ")]
    assert not errors and r.returncode == 0, r.stdout + r.stderr


def test_library_symbols_file_lists_the_public_api():
    """dpkg-gensymbols checks the built library against debian/libreaper0.symbols: a function
    added to the header gets its line there with the version that brought it."""
    listed = set(re.findall(r"^ (reaper_\w+)@Base ", (ROOT / "debian/libreaper0.symbols").read_text(), re.M))
    assert listed == public_functions(), (f"add to debian/libreaper0.symbols: {sorted(public_functions() - listed)}; "
                                          f"gone from the header: {sorted(listed - public_functions())}")


def test_installed_command_is_built_with_the_hardening_flags(instroot):
    """dpkg-buildflags's CPPFLAGS reach the compiler (fortified calls) and its LDFLAGS the
    linker (full RELRO, PIE); the command is dynamic, against the system's libc."""
    for path in (instroot / "usr/bin/reaper", next(instroot.glob("usr/lib/*/libreaper.so.0.*"))):
        dyn = subprocess.run(["readelf", "--dyn-syms", "-d", "-l", "-W", str(path)], capture_output=True, text=True,
                             check=True).stdout
        assert re.search(r"__\w+_chk@", dyn), f"{path}: no fortified call (CPPFLAGS lost?)"
        assert "GNU_RELRO" in dyn and re.search(r"\(FLAGS\)\s+BIND_NOW|\(FLAGS_1\).*\bNOW\b", dyn), path
    exe = subprocess.run(["readelf", "-h", "-l", str(instroot / "usr/bin/reaper")], capture_output=True, text=True,
                         check=True).stdout
    assert "DYN (" in exe and "INTERP" in exe


def leftovers(mark: str) -> list:
    return pidfds_where(lambda pid: f"{MARK}={mark}".encode() in environ(pid))


def kill_marked(mark: str) -> list:
    """What carries the mark is killed (pidfd) and returned: a test that left it fails."""
    found = leftovers(mark)
    for pid, fd in found:
        try:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        except OSError:
            pass
        os.close(fd)
    return [pid for pid, _ in found]


@pytest.fixture
def marked_env(instroot, multiarch):
    """The environment of a user of the unpacked packages, with a mark every process started
    under it inherits, so that what is left of a run can be found (and removed) afterwards."""
    mark = uuid.uuid4().hex
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REAPER_", "PYTHON", "PYTEST"))}
    env.update({MARK: mark, "PYTHONDONTWRITEBYTECODE": "1",
                "PATH": f"{instroot}/usr/bin:{env['PATH']}",
                "PYTHONPATH": str(instroot / "usr/lib/python3/dist-packages"),
                "LD_LIBRARY_PATH": str(instroot / "usr/lib" / multiarch)})
    yield env
    assert kill_marked(mark) == [], "processes of the run were left behind"


def test_installed_reaper_runs_the_demo_suite(instroot, marked_env):
    reaper = instroot / "usr/bin/reaper"
    r = subprocess.run(["bash", str(ROOT / "fixtures/demo/run-demo.sh"), str(reaper), str(BUILD / "fixtures")],
                       env=marked_env, capture_output=True, text=True, timeout=300)
    print(r.stdout, r.stderr)
    assert subprocess.run([str(reaper), "--version"], capture_output=True, text=True,
                          check=True).stdout.strip() == f"reaper {version()}"
    assert r.returncode == 0, r.stdout + r.stderr
    assert "reaper exited with status 23" in r.stdout
    assert "leaks per test: test_starts_daemon 1" in r.stdout
    assert "nothing of the run is left running" in r.stdout


def test_installed_plugin_catches_a_leak(instroot, marked_env, tmp_path):
    """pytest finds the plugin by its pytest11 entry point (no -p), and the package loads the
    libreaper the packages installed, not a checkout's."""
    site = instroot / "usr/lib/python3/dist-packages"
    code = ("import reaper; reaper.adopted(); print(reaper.__file__); "
            "print(*sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libreaper' in l}))")
    probe = subprocess.run(["/usr/bin/python3", "-c", code], env=marked_env, capture_output=True, text=True,
                           cwd=tmp_path, check=True).stdout.split()
    assert probe[0] == str(site / "reaper/__init__.py")
    assert probe[1:] == [str(next((instroot / "usr/lib").glob("*/libreaper.so.0.*")))], probe
    shutil.copy(ROOT / "harness/examples/pytest/test_example.py", tmp_path)
    r = subprocess.run(["/usr/bin/python3", "-m", "pytest", "-p", "no:cacheprovider", "--reaper", "--reaper-timeout", "1",
                        "test_example.py"], env=marked_env, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    out = r.stdout + r.stderr
    print(out)
    assert r.returncode == 1, out
    assert "ERROR at teardown of test_starts_a_daemon" in out and "sleep 300" in out
    assert re.search(r"\b4 passed, 1 error\b", out), out


def test_installed_check_helper_builds_a_suite_that_catches_a_leak(instroot, marked_env, multiarch, tmp_path):
    """The example Check suite, compiled with what pkg-config says of the unpacked -dev
    packages (libreaper-check.pc requires libreaper.pc and Check's), linked to libreaper.so.0."""
    # the unpacked .pc files, pointed at the throwaway root (as a relocated install would be);
    # Check's own is the system's
    pcdir = tmp_path / "pkgconfig"
    pcdir.mkdir()
    for pc in (instroot / "usr/lib" / multiarch / "pkgconfig").glob("*.pc"):
        (pcdir / pc.name).write_text(re.sub(r"^(prefix|libdir|includedir)=/", rf"\g<1>={instroot}/", pc.read_text(),
                                            flags=re.M))
    env = dict(marked_env, PKG_CONFIG_LIBDIR=f"{pcdir}:/usr/lib/{multiarch}/pkgconfig:/usr/share/pkgconfig")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libreaper-check"], env=env, capture_output=True,
                           text=True)
    assert flags.returncode == 0, flags.stderr
    print("pkg-config:", flags.stdout.strip())
    exe = tmp_path / "check-example"
    cc = subprocess.run(["cc", "-o", str(exe), str(ROOT / "harness/examples/check/example.c"), *flags.stdout.split()],
                        env=env, capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    assert "libreaper.so.0" in subprocess.run(["readelf", "-d", str(exe)], capture_output=True, text=True).stdout
    r = subprocess.run([str(exe)], env=dict(env, REAPER_CHECK_TIMEOUT="1"), capture_output=True, text=True,
                       cwd=tmp_path, timeout=300)
    out = r.stdout + r.stderr
    print(out)
    assert r.returncode != 0, out
    assert "leaves_a_daemon" in out and "sleep 300" in out, out
    assert re.search(r"\b50%: Checks: 2, Failures: 1", out), out
