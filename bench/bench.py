# SPDX-License-Identifier: MIT
"""make bench: every scenario, libreaper and `reaper run` beside their anchors, in one run.

Run by /usr/bin/python3 from bench/bench.mk. The anchors outside this repository are optional:
the hand-written Python reaper that e2e suites carry (a module with adopt_orphans, with_home and
reap, given by REAPER_HANDWRITTEN=PATH) and the init shims tini, dumb-init and catatonit (Debian
packages). Each one missing is named in one line and its comparison skipped; the rest runs.
This process is a child subreaper, so every population it spawns with bench-spawn is its orphan;
populations exit by themselves when their hold pipe is closed (at the end, or when this process
dies), so nothing here signals them. Prints the tables, writes bench/results.json,
bench/growth.png when gnuplot exists, and with --doc the results block of docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import json
import mmap
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PR_SET_CHILD_SUBREAPER = 36


def skipped(what: str, how: str) -> None:
    print(f"bench: skipped: {what} ({how})", flush=True)


def load_handwritten():
    """The hand-written reaper module named by REAPER_HANDWRITTEN, or None (said once)."""
    path = os.environ.get("REAPER_HANDWRITTEN", "")
    if not path or not os.path.isfile(path):
        skipped("comparisons with the hand-written Python reaper" + (f": no file {path}" if path else ""),
                "set REAPER_HANDWRITTEN=/path/to/_reaper.py, a module with adopt_orphans, with_home and reap")
        return None
    spec = importlib.util.spec_from_file_location("handwritten_reaper", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def become_subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def med(v):
    return statistics.median(v) if v else float("nan")


def own_cgroup_dir():
    """Our cgroup2 directory when we may make cgroups below it, else None."""
    try:
        rel = next(ln[3:].strip() for ln in open("/proc/self/cgroup") if ln.startswith("0::"))
        mnt = next(ln.split()[4] for ln in open("/proc/self/mountinfo")
                   if ln.split(" - ")[1].split()[0] == "cgroup2" and ln.split()[3] == "/")
    except (OSError, StopIteration, IndexError):
        return None
    d = os.path.join(mnt, rel.lstrip("/"))
    return d if os.access(d, os.W_OK) else None


def is_open(ln: str) -> bool:
    """A file opened: openat, or open (what musl's open() calls for a path not relative to a
    directory descriptor)."""
    call = ln.split(None, 1)[1] if len(ln.split(None, 1)) > 1 else ""
    return call.startswith(("openat(", "open(")) and "= -1" not in ln


def strace_end(log: str) -> dict:
    """From `strace -f` of one `reaper run -- CMD`: reaper's syscalls from the one that collects
    CMD (the first process to exec after reaper) to its exit (the final reap and the teardown), the files it opens there, and those under
    /proc or the cgroup."""
    lines = open(log).read().splitlines()
    me = lines[0].split()[0]
    cmd = next(ln.split()[0] for ln in lines[1:] if "execve(" in ln and not ln.startswith(me + " "))
    mine = [ln for ln in lines if ln.startswith(me + " ")]
    at = next(i for i, ln in enumerate(mine) if ("wait4(" in ln or "waitid(" in ln) and ("= " + cmd) in ln)
    end = [ln for ln in mine[at + 1:] if "resumed>" not in ln or "<..." not in ln.split()[1]]
    opens = [ln for ln in end if is_open(ln)]
    return {"syscalls": len(end), "opens": len(opens),
            "stat_reads": sum(1 for ln in opens if '/stat"' in ln),
            "environ_reads": sum(1 for ln in end if "/environ\"" in ln),
            "cgroup_reads": sum(1 for ln in opens if "cgroup." in ln)}


def strace_start(log: str) -> dict:
    """From the same log: reaper's syscalls from its exec to the one that starts CMD (the
    set-up: options, signals, cgroup, origin, guardian), and the files it opens there."""
    lines = open(log).read().splitlines()
    me = lines[0].split()[0]
    cmd = next(ln.split()[0] for ln in lines[1:] if "execve(" in ln and not ln.startswith(me + " "))
    mine = [ln for ln in lines if ln.startswith(me + " ")]
    at = next(i for i, ln in enumerate(mine) if ("clone" in ln or "vfork" in ln) and ln.rstrip().endswith("= " + cmd))
    # the syscalls before it, each once (an unfinished one and its resumption are one)
    start = [ln for ln in mine[1:at] if not ("resumed>" in ln and "<..." in ln.split()[1])]
    start = [ln for ln in start if not (("clone" in ln or "vfork" in ln) and "unfinished" in ln and
                                        "resumed>" in mine[at])]
    opens = [ln for ln in start if is_open(ln)]
    return {"syscalls": len(start), "opens": len(opens)}


def count_procs() -> int:
    return sum(1 for e in os.listdir("/proc") if e.isdigit())


def collect(block: bool) -> int:
    """Collect our zombies (orphaned populations); block: until no child is left."""
    n = 0
    while True:
        try:
            pid, _ = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return n
        except InterruptedError:
            continue
        if pid == 0:
            return n
        n += 1


def zombies_left() -> int:
    """Zombie children of ours the reap left behind; each is counted, then collected."""
    n = 0
    while True:
        try:
            si = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return n
        if si is None:
            return n
        os.waitpid(si.si_pid, 0)
        n += 1


def link_kind(path: str) -> tuple:
    """How a program is linked, as far as its start costs: ELF type, the loader it asks for
    (none when static), and its libc (musl's strerror table holds a line glibc's has not)."""
    with open(path, "rb") as f:
        data = f.read()
    etype = int.from_bytes(data[16:18], "little")
    phoff, phentsize, phnum = (int.from_bytes(data[32:40], "little"), int.from_bytes(data[54:56], "little"),
                               int.from_bytes(data[56:58], "little"))
    loader = None
    for i in range(phnum):
        ph = data[phoff + i * phentsize:phoff + (i + 1) * phentsize]
        if int.from_bytes(ph[:4], "little") == 3:  # PT_INTERP
            off, size = int.from_bytes(ph[8:16], "little"), int.from_bytes(ph[32:40], "little")
            loader = data[off:off + size].rstrip(b"\0").decode()
    return etype, loader, b"No error information" in data


class Bench:
    def __init__(self, build: str, quick: bool):
        self.bin = os.path.abspath(os.path.join(build, "bench"))
        self.reaper = os.path.abspath(os.path.join(build, "reaper"))
        self.listing = os.path.abspath(os.path.join(build, "bench", "bench-listing"))
        self.spawn_bin = os.path.join(self.bin, "bench-spawn")
        self.quick = quick
        self.hw = load_handwritten()
        become_subreaper()
        # the floor of the listing starts as the command does, or `reaper scan` vs it is no
        # like-for-like comparison
        if os.path.exists(self.reaper) and os.path.exists(self.listing) and \
                link_kind(self.reaper) != link_kind(self.listing):
            sys.exit(f"bench: {self.listing} is linked unlike {self.reaper} "
                     f"({link_kind(self.listing)} vs {link_kind(self.reaper)}): make bench-build")
        self.tmp = f"/tmp/reaper-bench-{os.getpid()}"
        self.reaper, self.listing = self.installed(self.reaper), self.installed(self.listing)
        # the unrelated sleepers of the scan and the suite rows: orphans of ours blocked on this
        # pipe, which exit by themselves once it closes (at the end, or when we die)
        self.hold_r, self.hold_w = os.pipe()
        os.set_inheritable(self.hold_w, False)
        self.population = 0
        self.unrelated = 10000
        self._modes = None
        self.results: dict = {"quick": quick, "cores": os.cpu_count(),
                              "kernel": os.uname().release, "started": time.time()}

    def installed(self, path: str) -> str:
        """A copy of the built program at path, written from start to end as an install writes
        it, to time in its place: as the linker wrote it, a program starts about 0.1 ms slower
        while the page cache holds the linker's writes, and the anchors it is timed against are
        installed. The built program itself where the copy cannot run (a noexec /tmp)."""
        copy = os.path.join(self.tmp, "bin", os.path.basename(path))
        try:
            os.makedirs(os.path.dirname(copy), exist_ok=True)
            if os.statvfs(os.path.dirname(copy)).f_flag & os.ST_NOEXEC:
                return path
            shutil.copy2(path, copy)
            return copy
        except OSError:
            return path

    def env(self, home: str) -> dict:
        out = subprocess.run([self.spawn_bin, "env", home], check=True, capture_output=True, text=True).stdout
        return dict(line.split("=", 1) for line in out.splitlines())

    def spawn(self, mode: str, count: int, env: dict, hold_r: int, shm_fd: int = -1, base: int = 0):
        ready_r, ready_w = os.pipe()
        fds = [hold_r, ready_w] + ([shm_fd] if shm_fd >= 0 else [])
        p = subprocess.Popen([self.spawn_bin, mode, str(count), str(hold_r), str(ready_w), str(shm_fd), str(base)],
                             env=env, pass_fds=fds, close_fds=True)
        os.close(ready_w)
        os.read(ready_r, 1)
        os.close(ready_r)
        if p.wait() != 0:
            raise RuntimeError(f"bench-spawn {mode} {count} failed")

    # ---- 1. marker scan, libproc2, 6. growth with processes on the system ------------------
    def scan(self):
        sizes = [1000, 4000] if self.quick else [1000, 4000, 10000]
        home = f"{self.tmp}/scan/home"
        marked, plain = self.env(home), self.env(f"{self.tmp}/plain/home")
        entry = f"HOME={home}"
        if self.hw:
            finder, nobody = self.hw.with_home(home), self.hw.with_home(f"{self.tmp}/nobody")
        hold_r = self.hold_r
        server = subprocess.Popen([os.path.join(self.bin, "bench-scan")], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, close_fds=True)

        def ask(cmd):
            server.stdin.write(cmd + "\n")
            server.stdin.flush()
            return json.loads(server.stdout.readline())

        rows, n_marked = [], 0
        try:
            for size in sizes:
                want_marked = size // 2 - n_marked
                self.spawn("hold", want_marked, marked, hold_r)
                n_marked += want_marked
                self.population += want_marked
                want_plain = size - count_procs()
                if want_plain > 0:
                    self.spawn("hold", want_plain, plain, hold_r)
                    self.population += want_plain
                reps = 5 if size >= 10000 else 9
                if self.quick:
                    reps = 3
                times: dict[str, list] = {}
                cpus: dict[str, list] = {}
                counts: dict[str, set] = {}
                nomatch: dict[str, list] = {}
                nomatch_cpu: dict[str, list] = {}
                procs = []
                ratios: dict[str, list] = {}  # per round: each contender over its floor, side by side
                for r in range(reps):
                    procs.append(count_procs())
                    res = ask(f"scan {entry}")
                    if self.hw:
                        t, c = time.perf_counter(), time.thread_time()
                        found = finder()
                        res["handwritten"] = [time.perf_counter() - t, len(found), time.thread_time() - c]
                    # the command and its floor as commands, in turn (which goes first alternates),
                    # their output to a pipe, then to a file
                    for to_file, sfx in ((False, ""), (True, "_file")):
                        pair = [("cli" + sfx, [self.reaper, "scan", "--home", home]),
                                ("cli_floor" + sfx, [self.listing, entry])]
                        for k, argv in (pair if r % 2 == 0 else pair[::-1]):
                            res[k] = self.cli_scan(argv, to_file)
                    for k, over in (("cli", "cli_floor"), ("cli_file", "cli_floor_file"),
                                    ("reaper_scan", "floor_report")):
                        ratios.setdefault(k, []).append(res[k][0] / res[over][0])
                        ratios.setdefault(k + "_cpu", []).append(res[k][2] / res[over][2] if res[over][2] else
                                                                 float("nan"))
                    for k, (sec, n, cpu) in res.items():
                        times.setdefault(k, []).append(sec)
                        cpus.setdefault(k, []).append(cpu)
                        counts.setdefault(k, set()).add(n)
                    # the common case: a clean test, nothing carries the marker
                    res = ask(f"scan HOME={self.tmp}/nobody")
                    if self.hw:
                        t, c = time.perf_counter(), time.thread_time()
                        nobody()
                        res["handwritten"] = [time.perf_counter() - t, 0, time.thread_time() - c]
                    for k, (sec, n, cpu) in res.items():
                        nomatch.setdefault(k, []).append(sec)
                        nomatch_cpu.setdefault(k, []).append(cpu)
                details = ask(f"details {entry}")
                row = {"size": size, "procs": med(procs), "marked": n_marked,
                       "median": {k: med(v) for k, v in times.items()},
                       "cpu": {k: med(v) for k, v in cpus.items()},
                       "found": {k: sorted(v) for k, v in counts.items()},
                       "nomatch": {k: med(v) for k, v in nomatch.items()},
                       "nomatch_cpu": {k: med(v) for k, v in nomatch_cpu.items()},
                       "details": details, "reps": reps,
                       "round_ratios": {k: med(v) for k, v in ratios.items()}}
                m, c, nm, nc = row["median"], row["cpu"], row["nomatch"], row["nomatch_cpu"]
                row["ratio_floor"] = m["reaper_scan"] / m["floor"]
                row["ratio_floor_cpu"] = c["reaper_scan"] / c["floor"]
                row["ratio_rescan_floor"] = m["rescan"] / m["floor"]
                row["ratio_libproc2_floor"] = m["libproc2_reap"] / m["floor"]
                row["ratio_libproc2_floor_cpu"] = c["libproc2_reap"] / c["floor"]
                row["nomatch_ratio_floor"] = nm["reaper_scan"] / nm["floor"]
                row["nomatch_ratio_floor_cpu"] = nc["reaper_scan"] / nc["floor"]
                if self.hw:
                    row["hw_over_reaper"] = m["handwritten"] / m["reaper_scan"]
                    row["hw_over_reaper_cpu"] = c["handwritten"] / c["reaper_scan"]
                    row["nomatch_hw_over_reaper"] = nm["handwritten"] / nm["reaper_scan"]
                    row["nomatch_hw_over_reaper_cpu"] = nc["handwritten"] / nc["reaper_scan"]
                row["consistent"] = all(v == [n_marked] for v in row["found"].values())
                rows.append(row)
                print(f"  scan {size} ({row['procs']:.0f} procs): floor {m['floor']*1e3:.2f} ms, reaper_scan "
                      f"{m['reaper_scan']*1e3:.2f} ms ({row['ratio_floor']:.2f}x wall, {row['ratio_floor_cpu']:.2f}x cpu),"
                      f" rescan {m['rescan']*1e3:.2f} ms, libproc2 {m['libproc2_reap']*1e3:.2f} ms"
                      + (f", hand-written {m['handwritten']*1e3:.1f} ms" if self.hw else "") +
                      f"; nothing matching: floor {nm['floor']*1e3:.2f} ms, reaper_scan "
                      f"{nm['reaper_scan']*1e3:.2f} ms ({row['nomatch_ratio_floor']:.2f}x wall, "
                      f"{row['nomatch_ratio_floor_cpu']:.2f}x cpu); found {row['found']}", flush=True)
        finally:
            server.stdin.close()
            server.wait()
        self.results["scan"] = rows

    def cli_scan(self, argv: list, to_file: bool = False) -> list:
        """A listing command (`reaper scan --home HOME`, or its floor bench-listing), as a user
        runs it from the shell the leftovers came from (its stderr is theirs, this process's):
        its output to a pipe (`| wc -l`), or to a new file (`> list`). [wall, lines printed,
        CPU] (the CPU of the command, from this process's children's rusage)."""
        out = tempfile.TemporaryFile() if to_file else None
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        got = subprocess.run(argv, stdout=out or subprocess.PIPE).stdout
        t = time.perf_counter() - t
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
        if out:
            out.seek(0)
            got = out.read()
            out.close()
        return [t, got.count(b"\n"), cpu]

    # ---- 2. exit detection, 3. kill convergence: the hand-written reaper's side ----------------
    def hw_exit(self, n: int, rep: int) -> dict:
        home = f"{self.tmp}/hw-exit-{n}-{rep}/home"
        fd = os.memfd_create("bench-shm", 0)
        os.ftruncate(fd, 8 * n)
        shm = mmap.mmap(fd, 8 * n)
        hold_r, hold_w = os.pipe()
        os.set_inheritable(hold_w, False)
        self.spawn("hold", n, self.env(home), hold_r, fd, 0)
        os.close(fd)
        os.close(hold_r)
        # released 20 ms after its first scan has seen them all (as for libreaper)
        finder, seen = self.hw.with_home(home), threading.Event()

        def watched():
            found = finder()
            if len(found) >= n:
                seen.set()
            return found

        release = {}

        def releaser():
            seen.wait(60)
            time.sleep(0.02)
            release["at"] = time.monotonic()
            os.close(hold_w)

        th = threading.Thread(target=releaser)
        th.start()
        killed = self.hw.reap(watched, timeout=30)
        t_ret = time.monotonic()
        th.join()
        release_at = release["at"]
        last = max(int.from_bytes(shm[8 * i:8 * i + 8], "little") for i in range(n)) / 1e9
        shm.close()
        return {"n": n, "latency": t_ret - last, "since_release": t_ret - release_at, "killed": len(killed),
                "zombies": zombies_left()}

    def hw_kill(self, n: int, rep: int, forker: bool, timeout: float) -> dict:
        home = f"{self.tmp}/hw-kill-{n}-{rep}/home"
        env = self.env(home)
        hold_r, hold_w = os.pipe()
        os.set_inheritable(hold_w, False)
        self.spawn("ignterm", n, env, hold_r)
        if forker:
            self.spawn("forker", 1, env, hold_r)
        os.close(hold_r)
        finder = self.hw.with_home(home)
        t0 = time.monotonic()
        killed = self.hw.reap(finder, timeout=timeout)
        t_ret = time.monotonic()
        left = len(finder())
        zombies = zombies_left()
        os.close(hold_w)  # what survived exits by itself now
        collect(True)
        return {"n": n, "forker": int(forker), "after_deadline": t_ret - (t0 + timeout), "total": t_ret - t0,
                "killed": len(killed), "left": left, "zombies": zombies}

    def reap_c(self, what: str, n: int, reps: int) -> list:
        out = subprocess.run([os.path.join(self.bin, "bench-reap"), self.spawn_bin, what, str(n), str(reps)],
                             check=True, capture_output=True, text=True).stdout
        return [json.loads(line) for line in out.splitlines()]

    def exit_detection(self):
        rows = []
        for n in ([1, 100] if self.quick else [1, 100, 1000]):
            reps = 3 if self.quick else (5 if n >= 1000 else 9)
            lib = self.reap_c("exit", n, reps)
            row = {"n": n, "reps": reps, "procs": count_procs(),
                   "reaper_latency": med([x["latency"] for x in lib]),
                   "reaper_since_release": med([x["since_release"] for x in lib]),
                   "reaper_found": sorted({x["found"] for x in lib}),
                   "reaper_zombies": max(x["zombies"] for x in lib)}
            if self.hw:
                hw = [self.hw_exit(n, r) for r in range(reps if n < 1000 else 3)]
                row.update({"hw_latency": med([x["latency"] for x in hw]),
                            "hw_since_release": med([x["since_release"] for x in hw]),
                            "hw_zombies": max(x["zombies"] for x in hw)})
                row["hw_over_reaper"] = row["hw_latency"] / row["reaper_latency"]
            rows.append(row)
            print(f"  exit {n}: reaper {row['reaper_latency']*1e3:.2f} ms after the last exit"
                  + (f", hand-written {row['hw_latency']*1e3:.1f} ms" if self.hw else ""), flush=True)
        self.results["exit"] = rows

    def kill_convergence(self):
        n = 200 if self.quick else 1000
        reps = 3
        lib = self.reap_c("kill", n, reps)
        row = {"n": n, "reps": reps,
               "reaper_after_deadline": med([x["after_deadline"] for x in lib]),
               "reaper_found": med([x["found"] for x in lib]),
               "reaper_left": max(x["left"] for x in lib),
               "reaper_zombies": max(x["zombies"] for x in lib)}
        if self.hw:
            hw = [self.hw_kill(n, r, True, 0.3) for r in range(reps)]
            row.update({"hw_after_deadline": med([x["after_deadline"] for x in hw]),
                        "hw_left": max(x["left"] for x in hw),
                        "hw_left_median": med([x["left"] for x in hw]),
                        "hw_zombies": max(x["zombies"] for x in hw)})
            row["hw_over_reaper"] = row["hw_after_deadline"] / row["reaper_after_deadline"]
        self.results["kill"] = row
        print(f"  kill {n}+forker: reaper {row['reaper_after_deadline']*1e3:.1f} ms after the deadline, "
              f"{row['reaper_left']} left, {row['reaper_zombies']} zombies"
              + (f"; hand-written {row['hw_after_deadline']*1e3:.1f} ms, {row['hw_left']} left" if self.hw else ""),
              flush=True)

    def reap_growth(self):
        rows = []
        for n in ([1, 100, 1000] if self.quick else [1, 100, 1000, 10000]):
            reps = 3 if n >= 1000 else 5
            lib = self.reap_c("reap", n, reps)
            rows.append({"n": n, "reps": reps, "total": med([x["total"] for x in lib]),
                         "left": max(x["left"] for x in lib), "zombies": max(x["zombies"] for x in lib)})
            print(f"  reap {n}: {rows[-1]['total']*1e3:.1f} ms", flush=True)
        self.results["reap"] = rows
        coll = self.reap_c("collect", 1000, 3)
        self.results["collect"] = {"n": 1000, "with_pidfd": med([x["with_pidfd"] for x in coll]),
                                   "without_pidfd": med([x["without_pidfd"] for x in coll])}
        c = self.results["collect"]
        print(f"  collecting one of 1000 zombie children: {c['with_pidfd']*1e6:.1f} us with a pidfd opened on "
              f"each, {c['without_pidfd']*1e6:.1f} us without", flush=True)

    # ---- 4. wrapper overhead, 5. memory ----------------------------------------------------
    def wrapper(self):
        runs = 60 if self.quick else 300
        cmds = {"true": "/bin/true", "reaper": f"{self.reaper} run -- /bin/true",
                "tini": f"{shutil.which('tini') or '/usr/bin/tini'} -s -- /bin/true",
                "dumb-init": f"{shutil.which('dumb-init') or '/usr/bin/dumb-init'} /bin/true",
                "catatonit": f"{shutil.which('catatonit') or '/usr/bin/catatonit'} -- /bin/true"}
        for k, v in cmds.items():
            if not os.path.exists(v.split()[0]):
                skipped(f"wrapper overhead of {k}: {v.split()[0]} is not installed", f"apt-get install {k}")
        cmds = {k: v for k, v in cmds.items() if os.path.exists(v.split()[0])}
        out = subprocess.run([os.path.join(self.bin, "bench-wrap"), str(runs)] + list(cmds.values()),
                             check=True, capture_output=True, text=True).stdout
        raw = json.loads(out)
        res = {k: raw[v] for k, v in cmds.items()}
        base, base_cpu = res["true"]["median"], res["true"]["cpu"]
        for v in res.values():
            v["overhead"] = v["median"] - base
            v["overhead_cpu"] = v["cpu"] - base_cpu
        # what one marker scan of this system costs now: reaper run's final reap makes one
        server = subprocess.Popen([os.path.join(self.bin, "bench-scan")], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, close_fds=True)
        floor = []
        for _ in range(9):
            server.stdin.write(f"scan HOME={self.tmp}/nobody\n")
            server.stdin.flush()
            floor.append(json.loads(server.stdout.readline())["floor"])
        server.stdin.close()
        server.wait()
        guard = json.loads(subprocess.run([os.path.join(self.bin, "bench-wrap"), "--guardian", "50"],
                                          check=True, capture_output=True, text=True).stdout)
        self.results["wrapper"] = {"runs": runs, "procs": count_procs(), "cmds": res,
                                   "floor_scan": med([f[0] for f in floor]),
                                   "floor_scan_cpu": med([f[2] for f in floor]),
                                   "guardian_start": guard}
        # the same in a PID namespace with its own /proc, where nothing else runs: what reaper
        # costs besides its final scan of the host
        ns = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc"] +
                            ([] if os.geteuid() == 0 else ["--user", "--map-root-user"]) +
                            [os.path.join(self.bin, "bench-wrap"), str(runs)] + list(cmds.values()),
                            capture_output=True, text=True)
        if ns.returncode != 0:
            skipped("wrapper overhead in an empty PID namespace: unshare failed: "
                    + (ns.stderr.strip().splitlines() or ["?"])[-1], "it needs root or user namespaces")
        else:
            raw = json.loads(ns.stdout)
            empty = {k: raw[v] for k, v in cmds.items()}
            for v in empty.values():
                v["overhead"] = v["median"] - empty["true"]["median"]
                v["overhead_cpu"] = v["cpu"] - empty["true"]["cpu"]
            self.results["wrapper"]["empty_host"] = empty
            print("  wrapper, empty PID namespace: " + ", ".join(
                f"{k} +{v['overhead']*1e3:.2f} ms (cpu +{v['overhead_cpu']*1e3:.2f})"
                for k, v in empty.items() if k != "true"), flush=True)
        self.wrapper_loaded(runs, cmds)
        self.wrapper_breakdown(cmds)
        print("  wrapper: " + ", ".join(f"{k} +{v['overhead']*1e3:.2f} ms (cpu +{v['overhead_cpu']*1e3:.2f})"
                                        for k, v in res.items() if k != "true")
              + f"; one floor scan of {self.results['wrapper']['procs']} processes: "
              f"{self.results['wrapper']['floor_scan']*1e3:.2f} ms", flush=True)

    def wrapper_loaded(self, runs, cmds):
        """The same, interleaved, with a busy loop on every core: each process a run starts and
        each hand-off between them waits for a CPU there."""
        loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
        try:
            sub = {k: cmds[k] for k in ("true", "reaper", "tini") if k in cmds}
            raw = json.loads(subprocess.run([os.path.join(self.bin, "bench-wrap"), str(runs)] + list(sub.values()),
                                            check=True, capture_output=True, text=True).stdout)
            load = os.getloadavg()[0]
        finally:
            for lp in loops:
                lp.kill()
                lp.wait()
        res = {k: raw[v] for k, v in sub.items()}
        for v in res.values():
            v["overhead"] = v["median"] - res["true"]["median"]
        self.results["wrapper"]["loaded"] = {"busy_loops": len(loops), "loadavg": load, "cmds": res}
        print(f"  wrapper, {len(loops)} busy loops (load {load:.1f}): " + ", ".join(
            f"{k} +{v['overhead']*1e3:.2f} ms" for k, v in res.items() if k != "true"), flush=True)

    def wrapper_breakdown(self, cmds):
        """What one `reaper run -- /bin/true` is made of, in counts a load does not change: the
        processes it starts and its waits for one another (in an empty PID namespace, beside
        tini's), the syscalls of its end (the reap and the teardown after COMMAND's exit), and
        what its cgroup's mkdir and rmdir cost."""
        b = {}
        ns = ["unshare", "--pid", "--fork", "--mount-proc"] + ([] if os.geteuid() == 0 else ["--user", "--map-root-user"])
        for k in ("true", "reaper", "tini"):
            if k not in cmds:
                continue
            out = subprocess.run(ns + [os.path.join(self.bin, "bench-wrap"), "--breakdown", "50"] + cmds[k].split(),
                                 capture_output=True, text=True)
            if out.returncode == 0:
                b[k] = json.loads(out.stdout)
        if "reaper" not in b:
            skipped("the wrapper's process and wake-up counts", "they need unshare --pid (root or user namespaces)")
        strace = shutil.which("strace")
        if strace:
            log = os.path.join(self.tmp, "wrap.strace")
            os.makedirs(self.tmp, exist_ok=True)
            subprocess.run([strace, "-f", "-qq", "-o", log] + cmds["reaper"].split(), check=True,
                           stdout=subprocess.DEVNULL)
            b["end"] = strace_end(log)
            b["start"] = strace_start(log)
        else:
            skipped("the syscalls of reaper run's end", "apt-get install strace")
        cg = own_cgroup_dir()
        if cg:
            path, t = os.path.join(cg, f"bench-wrap-{os.getpid()}"), []
            for _ in range(200):
                t0 = time.perf_counter()
                os.mkdir(path)
                t1 = time.perf_counter()
                os.rmdir(path)
                t.append((t1 - t0, time.perf_counter() - t1))
            b["cgroup_mkdir"], b["cgroup_rmdir"] = med([x[0] for x in t]), med([x[1] for x in t])
        else:
            skipped("the cost of the run's cgroup mkdir and rmdir", "it needs a writable cgroup2 directory")
        self.results["wrapper"]["breakdown"] = b
        if "reaper" in b:
            print("  wrapper breakdown: " + ", ".join(
                f"{k} {v['processes']} processes, {v['voluntary_switches']} waits" for k, v in b.items()
                if k in ("true", "reaper", "tini")), flush=True)

    # ---- 7. the pytest plugin beside plain pytest ------------------------------------------
    PLUGIN_SUITES = {
        # a test that starts nothing must cost next to nothing
        "empty": ("500 empty tests", 1.3, """
import pytest
@pytest.mark.parametrize("n", range(500))
def test_empty(n):
    pass
"""),
        # 130 tests starting 780 short processes: subprocess.run, os.fork, and a thread's
        "heavy": ("130 tests starting 780 short processes (subprocess.run, os.fork, a thread)", 1.10, """
import os, subprocess, threading, pytest
def run_true():
    subprocess.run(["/bin/true"], check=True)
@pytest.mark.parametrize("n", range(130))
def test_heavy(n):
    run_true()
    run_true()
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    t = threading.Thread(target=lambda: (run_true(), run_true()))
    t.start()
    t.join()
"""),
    }

    def plugin(self):
        """Wall and CPU time of pytest over each suite: plain, and with the plugin in each
        tracking mode, the runs of all three interleaved; the best of each."""
        py = sys.executable if importlib.util.find_spec("pytest") else "/usr/bin/python3"
        top = os.path.dirname(HERE)
        where = os.path.join(self.tmp, "plugin")
        # Byte code of every module, pytest's and the plugin's, read from a cache of the run's
        # own (made by an untimed first run), as an installed package's is: compiled from the
        # source at each start, the plugin alone would pay some 40 ms a run that no user pays
        env = dict(os.environ, PYTHONPATH=os.path.join(top, "harness", "python"),
                   PYTHONPYCACHEPREFIX=os.path.join(where, "pycache"), REAPER_BUILD=os.path.dirname(self.bin))
        env.pop("REAPER_PYTEST_SESSION", None)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        os.makedirs(where, exist_ok=True)
        modes = {"plain": [], "cgroup": ["-p", "reaper.pytest_plugin", "--reaper", "--reaper-cgroup=on"],
                 "proc": ["-p", "reaper.pytest_plugin", "--reaper", "--reaper-cgroup=off"]}
        probe = subprocess.run([py, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", *modes["cgroup"], where],
                               env=env, cwd=where, capture_output=True, text=True)
        if "cgroup" in probe.stderr and probe.returncode == 4:
            skipped("the plugin's cgroup mode: " + probe.stderr.strip().splitlines()[-1], "proc mode is measured alone")
            del modes["cgroup"]
        runs = 3 if self.quick else 5
        out = self.results["plugin"] = {"python": py, "runs": runs}
        for name, (what, target, source) in self.PLUGIN_SUITES.items():
            path = os.path.join(where, f"test_{name}.py")
            with open(path, "w") as f:
                f.write(source)
            times = {m: [] for m in modes}
            for i in range(runs + 1):
                for m, flags in modes.items():
                    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
                    p = subprocess.run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", *flags, path],
                                       env=env, cwd=where, capture_output=True, text=True)
                    wall, r1 = time.monotonic() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
                    if p.returncode != 0:
                        raise RuntimeError(f"pytest {m} over {name} failed:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
                    if i:  # the first round compiles the byte code and warms the caches
                        times[m].append((wall, r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime))
            row = out[name] = {"what": what, "target": target,
                               "modes": {m: {"wall": min(w for w, _ in v), "cpu": min(c for _, c in v)}
                                         for m, v in times.items()}}
            plain = row["modes"]["plain"]
            for m, v in row["modes"].items():
                v["ratio"], v["ratio_cpu"] = v["wall"] / plain["wall"], v["cpu"] / plain["cpu"]
            print(f"  {what}: " + ", ".join(f"{m} {v['wall']:.2f} s ({v['ratio']:.2f}x, cpu {v['ratio_cpu']:.2f}x)"
                                            for m, v in row["modes"].items()), flush=True)

    # ---- 6. `reaper run` of a suite leaving one leftover, on a quiet and on a crowded host ---
    def modes(self) -> dict:
        """The tracking modes of `reaper run` to compare: {name: flags}. One that this reaper
        lacks or cannot use here is left out, with one line saying why."""
        if self._modes is None:
            self._modes = {}
            off = subprocess.run([self.reaper, "run", "--cgroup", "off", "--", "/bin/true"],
                                 capture_output=True, text=True)
            if off.returncode == 64:
                skipped("cgroup mode of reaper run: this reaper has no --cgroup option",
                        "the fallback, marker + descent, is measured alone")
                self._modes["fallback"] = []
                return self._modes
            on = subprocess.run([self.reaper, "run", "--cgroup", "on", "--", "/bin/true"],
                                capture_output=True, text=True)
            if on.returncode == 0:
                self._modes["cgroup"] = ["--cgroup", "on"]
            else:
                why = next((ln for ln in on.stderr.splitlines() if "cgroup" in ln), f"exit {on.returncode}")
                skipped(f"cgroup mode of reaper run: {why.strip()}", "it needs a writable cgroup v2 subtree")
            self._modes["fallback"] = ["--cgroup", "off"]
        return self._modes

    def suite_times(self) -> dict:
        """Wall and CPU time of `reaper run` over a suite whose one leftover exits 50 ms after
        it (the wait, then the final scan), each mode interleaved with the others."""
        os.makedirs(self.tmp, exist_ok=True)
        script = os.path.join(self.tmp, "suite.sh")
        with open(script, "w") as f:
            f.write("(sleep 0.05 &)\n")
        cmds = {m: " ".join([self.reaper, "run", "--timeout", "30"] + flags + ["--", "/bin/sh", script])
                for m, flags in self.modes().items()}
        runs = 5 if self.quick else 11
        raw = json.loads(subprocess.run([os.path.join(self.bin, "bench-wrap"), str(runs)] + list(cmds.values()),
                                        check=True, capture_output=True, text=True).stdout)
        return {"procs": count_procs(), "population": self.population, "runs": runs,
                "modes": {m: raw[c] for m, c in cmds.items()}}

    def suite_quiet(self):
        if self.population:
            raise RuntimeError("the quiet suite row needs a host without our sleepers")
        self.results["suite"] = {"quiet": self.suite_times()}
        q = self.results["suite"]["quiet"]
        print("  suite, quiet host (%d procs): " % q["procs"] + ", ".join(
            f"{m} {v['median']*1e3:.1f} ms" for m, v in q["modes"].items()), flush=True)

    def suite_crowded(self):
        want = self.unrelated - self.population
        if want > 0:
            self.spawn("hold", want, self.env(f"{self.tmp}/plain/home"), self.hold_r)
            self.population += want
        s = self.results.setdefault("suite", {})
        s["crowded"] = c = self.suite_times()
        line = f"  suite, {self.population} unrelated sleepers ({c['procs']} procs): "
        parts = []
        for m, v in c["modes"].items():
            q = s.get("quiet", {}).get("modes", {}).get(m)
            ratio = v["median"] / q["median"] if q else float("nan")
            s.setdefault("ratio", {})[m] = ratio
            parts.append(f"{m} {v['median']*1e3:.1f} ms ({ratio:.2f}x the quiet host)")
        print(line + ", ".join(parts), flush=True)

    # ---- 7. exit detection through `reaper run`: pidfds vs cgroup.events --------------------
    def run_exit_once(self, flags: list, n: int) -> dict:
        """n leftovers of a `reaper run`, released together once its drain waits on them: from
        the last one's exit to reaper's own exit."""
        fd = os.memfd_create("bench-shm", 0)
        os.ftruncate(fd, 8 * n)
        shm = mmap.mmap(fd, 8 * n)
        hold_r, hold_w = os.pipe()
        os.set_inheritable(hold_w, False)
        ready_r, ready_w = os.pipe()
        argv = [self.reaper, "run", "--timeout", "30"] + flags + \
            ["--", self.spawn_bin, "hold", str(n), str(hold_r), str(ready_w), str(fd), "0"]
        p = subprocess.Popen(argv, pass_fds=(hold_r, ready_w, fd), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, close_fds=True)
        for x in (ready_w, hold_r, fd):
            os.close(x)
        try:
            os.read(ready_r, 1)  # all n exist and COMMAND exits
            # the drain has begun once reaper's children are the n orphans and its guardian,
            # COMMAND collected (no --state: each event of the drain would rewrite the document)
            kids = f"/proc/{p.pid}/task/{p.pid}/children"
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    with open(kids) as f:
                        if len(f.read().split()) >= n + 1:
                            break
                except OSError:
                    break
                time.sleep(0.005)
            time.sleep(0.1)  # its first scan has found them
        finally:
            os.close(ready_r)
            os.close(hold_w)     # released: each stamps its exit time and exits
        try:
            status = p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            status = p.wait()
        t_end = time.monotonic()
        stamps = [int.from_bytes(shm[8 * i:8 * i + 8], "little") for i in range(n)]
        shm.close()
        if not all(stamps):
            raise RuntimeError(f"exit detection: {stamps.count(0)} of {n} leftovers never exited by "
                               f"themselves (reaper run exited {status}): the drain was not measured")
        return {"latency": t_end - max(stamps) / 1e9, "status": status}

    def run_exit(self):
        n, reps = 100, 3 if self.quick else 7
        rows = {}
        for m, flags in self.modes().items():
            got = [self.run_exit_once(flags, n) for _ in range(reps)]
            rows[m] = {"n": n, "reps": reps, "latency": med([g["latency"] for g in got]),
                       "statuses": sorted({g["status"] for g in got})}
        self.results["run_exit"] = rows
        print("  exit detection through reaper run, %d leftovers: " % n + ", ".join(
            f"{m} {v['latency']*1e3:.2f} ms (exit {v['statuses']})" for m, v in rows.items()), flush=True)

    def hwm(self, argv: list, pass_fds=()) -> dict:
        """Peak RSS (VmHWM) of `reaper run` itself, read at its exit under ptrace."""
        out = subprocess.run([os.path.join(self.bin, "bench-wrap"), "--hwm"] + argv, pass_fds=pass_fds,
                             stderr=subprocess.DEVNULL, check=True, capture_output=False,
                             stdout=subprocess.PIPE, text=True).stdout
        return json.loads(out)

    def memory(self):
        n = 2000 if self.quick else 10000
        clean = [self.hwm([self.reaper, "run", "--", "/bin/true"])["hwm_kib"] for _ in range(5)]
        hold_r, hold_w = os.pipe()
        os.set_inheritable(hold_w, False)
        ready_r, ready_w = os.pipe()
        done = {}

        def run():
            done["r"] = self.hwm([self.reaper, "run", "--timeout", "0", "--grace", "0", "--", self.spawn_bin,
                                  "ignterm", str(n), str(hold_r), str(ready_w), "-1", "0"], (hold_r, ready_w))

        th = threading.Thread(target=run)
        th.start()
        os.read(ready_r, 1)  # all n exist; COMMAND exits now and the reap begins
        t_ready = time.monotonic()
        th.join()
        t_end = time.monotonic()
        for fd in (ready_r, ready_w, hold_r, hold_w):
            os.close(fd)
        collect(True)
        r = done["r"]
        self.results["memory"] = {"clean_hwm_kib": med(clean), "leftovers": n, "reap_hwm_kib": r["hwm_kib"],
                                  "reap_exit_status": r["status"], "reap_seconds": t_end - t_ready}
        print(f"  memory: clean run {med(clean)} KiB, reap of {n} leftovers {r['hwm_kib']} KiB "
              f"(exit {r['status']}, {t_end - t_ready:.2f} s after they existed)", flush=True)


def slope(xs, ys):
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else float("nan")


def ms(x):
    return f"{x*1e3:.2f} ms" if x == x else "n/a"


def table(res: dict) -> str:
    """The results table (docs/BENCHMARKS.md): medians, ratios on wall time and (in brackets) on CPU time."""
    lines = ["| scenario | libreaper | anchor | ratio wall (cpu) | target | met |", "|---|---|---|---|---|---|"]

    def add(name, lib, anchor, ratio, target, met):
        lines.append(f"| {name} | {lib} | {anchor} | {ratio} | {target} | {'yes' if met else '**no**'} |")

    for r in res.get("scan", []):
        m, c, nm = r["median"], r["cpu"], r["nomatch"]
        p = f"{r['procs']:.0f} procs"
        add(f"marker scan, {p}, half marked: reaper_scan vs raw floor", ms(m["reaper_scan"]), ms(m["floor"]),
            f"{r['ratio_floor']:.2f}x ({r['ratio_floor_cpu']:.2f}x)", "<= 1.3x", r["ratio_floor_cpu"] <= 1.3)
        add(f"marker scan, {p}, none marked: reaper_scan vs raw floor", ms(nm["reaper_scan"]), ms(nm["floor"]),
            f"{r['nomatch_ratio_floor']:.2f}x ({r['nomatch_ratio_floor_cpu']:.2f}x)", "<= 1.3x",
            r["nomatch_ratio_floor_cpu"] <= 1.3)
        add(f"marker scan, {p}: a wait-loop rescan vs raw floor", ms(m["rescan"]), ms(m["floor"]),
            f"{r['ratio_rescan_floor']:.2f}x", "<= 1.3x", r["ratio_rescan_floor"] <= 1.3)
        nc = r["nomatch_cpu"]
        if "hw_over_reaper" in r:
            add(f"marker scan, {p}, half marked: hand-written with_home vs reaper_scan", ms(m["reaper_scan"]),
                ms(m["handwritten"]), f"{r['hw_over_reaper']:.1f}x ({r['hw_over_reaper_cpu']:.1f}x) faster",
                ">= 10x", r["hw_over_reaper_cpu"] >= 10)
            add(f"marker scan, {p}, none marked: hand-written with_home vs reaper_scan", ms(nm["reaper_scan"]),
                ms(nm["handwritten"]),
                f"{r['nomatch_hw_over_reaper']:.1f}x ({r['nomatch_hw_over_reaper_cpu']:.1f}x) faster", ">= 10x",
                r["nomatch_hw_over_reaper_cpu"] >= 10)
            add(f"marker scan, {p}, none marked: hand-written with_home vs the raw floor itself (the most any "
                "reader of environ can gain)", ms(nm["floor"]), ms(nm["handwritten"]),
                f"{nm['handwritten'] / nm['floor']:.1f}x ({nc['handwritten'] / nc['floor']:.1f}x) faster", "-", True)
        if "cli" in m:
            add(f"marker scan, {p}, half marked: `reaper scan --home` (the command, its output to a pipe) vs raw floor",
                ms(m["cli"]), ms(m["floor"]), f"{m['cli'] / m['floor']:.2f}x ({c['cli'] / c['floor']:.2f}x)",
                "(measured)", True)
        rr = r.get("round_ratios", {})
        if "cli_floor" in m and "cli" in rr:
            add(f"marker scan, {p}, half marked: `reaper scan --home` vs the floor of its listing (bench-listing: "
                "every environ; per match a pidfd, its cmdline, a look through the pidfd, one line), both as "
                "commands, in turn", ms(m["cli"]), ms(m["cli_floor"]), f"{rr['cli']:.2f}x ({rr['cli_cpu']:.2f}x)",
                "<= 1.15x", rr["cli_cpu"] <= 1.15)
        if "cli_floor_file" in m and "cli_file" in rr:
            add(f"marker scan, {p}, half marked: the same, both writing to a file (no pipe on the command's fd 0-2, "
                "so no process can be its pipeline's)", ms(m["cli_file"]), ms(m["cli_floor_file"]),
                f"{rr['cli_file']:.2f}x ({rr['cli_file_cpu']:.2f}x)", "<= 1.15x", rr["cli_file_cpu"] <= 1.15)
        if "floor_report" in m and "reaper_scan" in rr:
            add(f"marker scan, {p}, half marked: reaper_scan vs the floor of what it returns (the listing's reads "
                "plus each match's stat, uid, exe and cwd), in turn", ms(m["reaper_scan"]), ms(m["floor_report"]),
                f"{rr['reaper_scan']:.2f}x ({rr['reaper_scan_cpu']:.2f}x)", "<= 1.2x",
                rr["reaper_scan_cpu"] <= 1.2)
        add(f"marker scan, {p}, half marked: libproc2 PIDS_ENVIRON_V vs raw floor", ms(m["libproc2_reap"]),
            ms(m["floor"]), f"{r['ratio_libproc2_floor']:.2f}x ({r['ratio_libproc2_floor_cpu']:.2f}x)", "(measured)",
            True)
        d = r.get("details", {})
        if d.get("details_raw") and d["details_raw"][1]:
            raw, lp = d["details_raw"], d["details_libproc2"]
            add(f"candidate details, {raw[1]} candidates: raw reads vs libproc2 procps_pids_select",
                f"{raw[0] / raw[1] * 1e6:.1f} us each", f"{lp[0] / max(lp[1], 1) * 1e6:.1f} us each",
                f"libproc2 {lp[0] / raw[0]:.2f}x", "(measured)", lp[1] == raw[1])
            why = d.get("why_libproc2")
            if why and why[1] > 1:
                # every candidate but the first, whose cost (dlopen, procps_pids_new) is apart
                add(f"describing one leak via libproc2 (why it is still running: SIGTERM, wchan, tty, "
                    f"TracerPid), {why[1]} leaks: vs its raw detail reads",
                    f"{why[0] / (why[1] - 1) * 1e6:.1f} us each (first {why[2] * 1e3:.2f} ms)",
                    f"{raw[0] / raw[1] * 1e6:.1f} us each", f"{why[0] / (why[1] - 1) / (raw[0] / raw[1]):.2f}x",
                    "(measured)", why[1] == raw[1])
    for r in res.get("exit", []):
        target = r["n"] == 100
        add(f"exit detection, {r['n']} leftovers ({r.get('procs', 0):.0f} procs): last exit -> reap() returns",
            ms(r["reaper_latency"]), ms(r["hw_latency"]) if "hw_latency" in r else "",
            f"{r['hw_over_reaper']:.0f}x faster" if "hw_over_reaper" in r else "",
            "<= 5 ms" if target else "-", r["reaper_latency"] <= 0.005 or not target)
    if "kill" in res:
        k = res["kill"]
        add(f"kill convergence, {k['n']} TERM-ignoring + 1 forker: deadline -> report",
            f"{ms(k['reaper_after_deadline'])}, {k['reaper_left']} left, {k['reaper_zombies']} zombies",
            f"{ms(k['hw_after_deadline'])}, {k['hw_left']} left, {k['hw_zombies']} zombies" if "hw_left" in k else "",
            f"{k['hw_over_reaper']:.1f}x faster" if "hw_left" in k else "", "nothing left, no zombie",
            k["reaper_left"] == 0 and k["reaper_zombies"] == 0)
    for r in res.get("reap", []):
        add(f"whole reap (find, freeze, kill, collect), {r['n']} leftovers", ms(r["total"]), "", "",
            "nothing left", r["left"] == 0 and r["zombies"] == 0)
    if "collect" in res:
        c = res["collect"]
        add(f"kernel: collecting one of {c['n']} zombie children (waitpid)", f"{c['with_pidfd']*1e6:.1f} us "
            "(a pidfd was opened on each)", f"{c['without_pidfd']*1e6:.1f} us (never a pidfd)",
            f"{c['with_pidfd'] / c['without_pidfd']:.1f}x", "(measured)", True)
    if "wrapper" in res:
        w = res["wrapper"]
        c = w["cmds"]
        tini = c.get("tini", {}).get("overhead", float("nan"))
        tini_cpu = c.get("tini", {}).get("overhead_cpu", float("nan"))
        for k in ("reaper", "tini", "dumb-init", "catatonit"):
            if k in c:
                add(f"wrapper overhead over /bin/true ({ms(c['true']['median'])}), {w['procs']} procs: {k}",
                    f"{ms(c[k]['overhead'])} (cpu {ms(c[k]['overhead_cpu'])})", "", "",
                    "<= tini + 0.5 ms" if k == "reaper" else "-",
                    k != "reaper" or c[k]["overhead"] <= tini + 0.0005 or c[k]["overhead_cpu"] <= tini_cpu + 0.0005)
        e = w.get("empty_host", {})
        e_tini = e.get("tini", {}).get("overhead", float("nan"))
        e_tini_cpu = e.get("tini", {}).get("overhead_cpu", float("nan"))
        for k, v in e.items():
            if k != "true":
                add(f"wrapper overhead in an empty PID namespace over /bin/true ({ms(e['true']['median'])}): "
                    f"{k}", f"{ms(v['overhead'])} (cpu {ms(v['overhead_cpu'])})", "", "",
                    "<= tini + 0.5 ms" if k == "reaper" else "-",
                    k != "reaper" or v["overhead"] <= e_tini + 0.0005 or v["overhead_cpu"] <= e_tini_cpu + 0.0005)
        add(f"one raw floor scan of the {w['procs']} processes (reaper run makes one at the end)",
            f"{ms(w['floor_scan'])} (cpu {ms(w['floor_scan_cpu'])})", "", "", "-", True)
        g = w.get("guardian_start")
        if g:
            vm = g.get("vm_clone")
            add("starting the owner-death guardian: " + ("a clone on our memory, reaper goes on at once (reaper "
                "run on x86-64), vs one fork, " if vm else "one fork, reaper goes on at once (reaper run), vs ")
                + "a middle process on our memory that forks it, and a double fork (a fork's copy-on-write "
                "faults afterwards are not in these)",
                f"{ms(vm['median'])} (cpu {ms(vm['cpu'])})" if vm else
                f"{ms(g['fork']['median'])} (cpu {ms(g['fork']['cpu'])})",
                (f"{ms(g['fork']['median'])} (cpu {ms(g['fork']['cpu'])}); " if vm else "")
                + f"{ms(g['vfork_middle']['median'])} (cpu {ms(g['vfork_middle']['cpu'])}); "
                f"{ms(g['double_fork']['median'])} (cpu {ms(g['double_fork']['cpu'])})",
                f"{g['fork']['median'] / vm['median']:.1f}x faster than the fork" if vm else
                f"{g['vfork_middle']['median'] / g['fork']['median']:.1f}x faster", "-", True)
    su = res.get("suite", {})
    for label in ("quiet", "crowded"):
        if label in su:
            x = su[label]
            for mode, v in x["modes"].items():
                add(f"reaper run, suite leaving one leftover (exits after 50 ms), {mode}, {x['population']} "
                    f"unrelated sleepers ({x['procs']} procs)", f"{ms(v['median'])} (cpu {ms(v['cpu'])})", "", "",
                    "-", not v["failed"])
    for name, row in res.get("plugin", {}).items():
        if not isinstance(row, dict):
            continue
        plain = row["modes"]["plain"]
        for mode, v in row["modes"].items():
            if mode != "plain":
                add(f"pytest plugin, {row['what']}, {mode} tracking vs plain pytest (best of {res['plugin']['runs']})",
                    f"{v['wall']:.2f} s (cpu {v['cpu']:.2f} s)", f"{plain['wall']:.2f} s (cpu {plain['cpu']:.2f} s)",
                    f"{v['ratio']:.2f}x ({v['ratio_cpu']:.2f}x)", f"<= {row['target']:g}x", v["ratio"] <= row["target"])
    for mode, v in res.get("run_exit", {}).items():
        add(f"exit detection through reaper run, {v['n']} leftovers, {mode}: last exit -> reaper exits",
            ms(v["latency"]), "", "", "-", v["statuses"] == [0])
    if "memory" in res:
        m = res["memory"]
        clean = m["clean_hwm_kib"]
        add("peak RSS (VmHWM), reaper run -- /bin/true", f"{clean/1024:.2f} MiB", "", "", "<= 4 MiB", clean <= 4096)
        add(f"peak RSS (VmHWM), reaper run reaping {m['leftovers']} leftovers", f"{m['reap_hwm_kib']/1024:.2f} MiB",
            f"{m['reap_seconds']:.2f} s", "", "(measured)", m["reap_exit_status"] == 23)
    g = res.get("growth", {})
    if g:
        lines.append("")
        parts = []
        if "scan_us_per_proc" in g:
            parts.append(f"reaper_scan {g['scan_us_per_proc']:.1f} us per process on the system (half marked; "
                         f"raw floor {g['floor_us_per_proc']:.1f}, rescan {g['rescan_us_per_proc']:.1f}, "
                         f"none marked {g['nomatch_us_per_proc']:.1f}"
                         + (f", hand-written {g['hw_us_per_proc']:.1f})" if "hw_us_per_proc" in g else ")"))
            if "cpu_reaper_scan_us_per_proc" in g:
                parts.append(f"in CPU time {g['cpu_reaper_scan_us_per_proc']:.1f} us (raw floor "
                             f"{g['cpu_floor_us_per_proc']:.1f}, rescan {g['cpu_rescan_us_per_proc']:.1f}, none marked "
                             f"{g['cpu_nomatch_us_per_proc']:.1f}"
                             + (f", hand-written {g['cpu_handwritten_us_per_proc']:.1f})"
                                if "hw_us_per_proc" in g else ")"))
        if "reap_us_per_leftover" in g:
            parts.append(f"whole reap {g['reap_us_per_leftover']:.0f} us per leftover")
        lines.append("growth (least-squares slope): " + "; ".join(parts))
    return "\n".join(lines)


def headline(res: dict) -> str:
    """The three rows the project's performance targets are stated in, beside their anchors,
    plus exit detection and peak RSS."""
    lines = ["| what | reaper | anchor | target | met |", "|---|---|---|---|---|"]

    def add(what, ours, anchor, target, met):
        mark = "n/a" if met is None else ("yes" if met else "**no**")
        lines.append(f"| {what} | {ours} | {anchor} | {target} | {mark} |")

    scans = res.get("scan", [])
    if scans:
        r = min(scans, key=lambda x: abs(x["size"] - 4000))
        m, c = r["median"], r["cpu"]
        cli = f"`reaper scan --home` {ms(m['cli'])}; " if "cli" in m else ""
        hw = (f"; hand-written `with_home` {ms(m['handwritten'])} ({r['hw_over_reaper']:.1f}x reaper_scan, "
              f"{m['handwritten'] / m['floor']:.1f}x the floor)") if "handwritten" in m else ""
        add(f"marker scan, {r['procs']:.0f} processes, {r['marked']} marked",
            f"{cli}`reaper_scan()` {ms(m['reaper_scan'])} = {r['ratio_floor']:.2f}x the floor "
            f"({r['ratio_floor_cpu']:.2f}x in CPU)", f"raw environ floor {ms(m['floor'])}{hw}",
            "<= 1.3x the floor (so >= 4.5x the hand-written one)", r["ratio_floor_cpu"] <= 1.3)
    w = res.get("wrapper")
    if w:
        c = w["cmds"]
        anchors = ", ".join(f"{k} +{ms(c[k]['overhead'])} (cpu +{ms(c[k]['overhead_cpu'])})"
                            for k in ("tini", "catatonit", "dumb-init") if k in c)
        met = None
        if "tini" in c:
            met = (c["reaper"]["overhead"] <= c["tini"]["overhead"] + 0.0005 or
                   c["reaper"]["overhead_cpu"] <= c["tini"]["overhead_cpu"] + 0.0005)
        add(f"wrapper overhead over `/bin/true` ({ms(c['true']['median'])}), {w['procs']} processes",
            f"+{ms(c['reaper']['overhead'])} (cpu +{ms(c['reaper']['overhead_cpu'])})", anchors or "none installed",
            "<= tini + 0.5 ms", met)
        e = w.get("empty_host")
        if e:
            anchors = ", ".join(f"{k} +{ms(e[k]['overhead'])} (cpu +{ms(e[k]['overhead_cpu'])})"
                                for k in ("tini", "catatonit", "dumb-init") if k in e)
            met = None
            if "tini" in e:
                met = (e["reaper"]["overhead"] <= e["tini"]["overhead"] + 0.0005 or
                       e["reaper"]["overhead_cpu"] <= e["tini"]["overhead_cpu"] + 0.0005)
            add(f"the same in a PID namespace of its own (its /proc holds only the benchmark): reaper's cost "
                f"besides the final scan of the host ({ms(e['true']['median'])})",
                f"+{ms(e['reaper']['overhead'])} (cpu +{ms(e['reaper']['overhead_cpu'])})", anchors or "none installed",
                "<= tini + 0.5 ms", met)
        ld = w.get("loaded")
        if ld and "tini" in ld["cmds"]:
            c = ld["cmds"]
            add(f"the same with {ld['busy_loops']} busy loops, one per core (load {ld['loadavg']:.1f}), interleaved "
                f"over /bin/true ({ms(c['true']['median'])})", f"+{ms(c['reaper']['overhead'])}",
                f"tini +{ms(c['tini']['overhead'])}", "<= tini + 0.5 ms",
                c["reaper"]["overhead"] <= c["tini"]["overhead"] + 0.0005)
        b = w.get("breakdown", {})
        if "reaper" in b:
            def counts(k):
                v = b[k]
                return (f"{v['processes']} processes, {v['voluntary_switches']} waits "
                        f"({v['involuntary_switches']} preempted), {v['minor_faults']} faults")
            add("what one `reaper run -- /bin/true` is made of (medians of 50, an empty PID namespace; "
                "waits: voluntary context switches, each a hand-off that waits for a CPU under load)",
                counts("reaper"), "; ".join(f"{k}: {counts(k)}" for k in ("tini", "true") if k in b), "-", True)
        if "start" in b:
            add("the start of that run: reaper's syscalls from its exec to COMMAND's start (options, signals, "
                "the cgroup, the origin, the guardian's start)",
                f"{b['start']['syscalls']} syscalls, {b['start']['opens']} files opened", "", "-", True)
        if "end" in b:
            e = b["end"]
            add("the end of that run: reaper's syscalls from collecting COMMAND to its exit (the final reap, "
                "the cgroup's removal, the guardian's stop)",
                f"{e['syscalls']} syscalls, {e['opens']} files opened ({e['stat_reads']} stat, "
                f"{e['environ_reads']} environ, {e['cgroup_reads']} cgroup files)", "", "-", True)
        if "cgroup_mkdir" in b:
            add("the run's cgroup: one mkdir and one rmdir (medians of 200)",
                f"mkdir {b['cgroup_mkdir']*1e6:.0f} us, rmdir {b['cgroup_rmdir']*1e6:.0f} us", "", "-", True)
    su = res.get("suite", {})
    if "crowded" in su and "quiet" in su:
        q, cr = su["quiet"], su["crowded"]
        parts = {m: f"{ms(cr['modes'][m]['median'])} / {ms(q['modes'][m]['median'])} = "
                    f"{su['ratio'][m]:.2f}x" for m in cr["modes"] if m in q["modes"]}
        ours = "cgroup mode " + parts["cgroup"] if "cgroup" in parts else "cgroup mode not measured here"
        anchor = "fallback (marker + descent) " + parts.get("fallback", "n/a")
        add(f"`reaper run` of a suite leaving one leftover, {cr['population']} unrelated sleeping processes "
            f"vs none", ours, anchor + "; every anchor scans all of /proc", "<= 1.2x (cgroup tracking)",
            su["ratio"]["cgroup"] <= 1.2 if "cgroup" in su.get("ratio", {}) else None)
    ex = res.get("run_exit", {})
    lib = next((r for r in res.get("exit", []) if r["n"] == 100), None)
    if ex or lib:
        ours = "; ".join([f"`reaper run`, {'cgroup.events' if m == 'cgroup' else 'pidfds'}: {ms(v['latency'])}"
                          for m, v in ex.items()] +
                         ([f"`reaper_reap()`, pidfds: {ms(lib['reaper_latency'])}"] if lib else []))
        anchor = f"hand-written {ms(lib['hw_latency'])}" if lib and "hw_latency" in lib else ""
        add("exit detection, 100 leftovers: the last exit -> the reap is over", ours, anchor,
            "<= 5 ms (`reaper_reap()`)", lib["reaper_latency"] <= 0.005 if lib else None)
    mem = res.get("memory")
    if mem:
        add("peak RSS (VmHWM) of `reaper run`", f"{mem['clean_hwm_kib'] / 1024:.2f} MiB over `/bin/true`; "
            f"{mem['reap_hwm_kib'] / 1024:.2f} MiB reaping {mem['leftovers']} leftovers", "", "<= 4 MiB (clean run)",
            mem["clean_hwm_kib"] <= 4096)
    return "\n".join(lines)


BEGIN, END = "<!-- bench results: begin (bench/bench.py --doc) -->", "<!-- bench results: end -->"


def write_doc(path: str, res: dict):
    """Replace the page's results block (between BEGIN and END) with this run's."""
    with open(path) as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"bench: {path} has no results block ({BEGIN} ... {END})")
    load = res.get("load", [float("nan")] * 2)
    block = (f"{BEGIN}\nRun: `make bench`{' (BENCH_QUICK)' if res.get('quick') else ''}, {res['seconds']:.0f} s, "
             f"kernel {res['kernel']}, {res['cores']} cores shared with other test runs (load average "
             f"{load[0]:.1f} at the start, {load[1]:.1f} at the end).\n\n{headline(res)}\n\nEvery scenario:\n\n"
             f"{table(res)}\n{END}")
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(head + block + tail)
    os.replace(tmp, path)


def growth(res: dict):
    s, r = res.get("scan", []), res.get("reap", [])
    g = {}
    if len(s) >= 2:
        xs = [x["procs"] for x in s]
        g["scan_us_per_proc"] = slope(xs, [x["median"]["reaper_scan"] for x in s]) * 1e6
        g["floor_us_per_proc"] = slope(xs, [x["median"]["floor"] for x in s]) * 1e6
        g["rescan_us_per_proc"] = slope(xs, [x["median"]["rescan"] for x in s]) * 1e6
        hw = "handwritten" in s[0]["median"]
        if hw:
            g["hw_us_per_proc"] = slope(xs, [x["median"]["handwritten"] for x in s]) * 1e6
        g["nomatch_us_per_proc"] = slope(xs, [x["nomatch"]["reaper_scan"] for x in s]) * 1e6
        for k in ("reaper_scan", "floor", "rescan") + (("handwritten",) if hw else ()):
            g[f"cpu_{k}_us_per_proc"] = slope(xs, [x["cpu"][k] for x in s]) * 1e6
        g["cpu_nomatch_us_per_proc"] = slope(xs, [x["nomatch_cpu"]["reaper_scan"] for x in s]) * 1e6
    if len(r) >= 2:
        g["reap_us_per_leftover"] = slope([x["n"] for x in r], [x["total"] for x in r]) * 1e6
    res["growth"] = g


def plot(res: dict, path: str):
    gp = shutil.which("gnuplot")
    if not gp or not res.get("scan"):
        if not gp:
            skipped("bench/growth.png", "apt-get install gnuplot-nox")
        return None
    data = path + ".dat"
    with open(data, "w") as f:
        for x in res["scan"]:
            m = x["median"]
            f.write(f"{x['procs']} {m['floor']*1e3} {m['reaper_scan']*1e3} {m['rescan']*1e3} "
                    f"{m['libproc2_reap']*1e3} {m.get('handwritten', float('nan'))*1e3} {x['nomatch']['reaper_scan']*1e3}\n")
    script = f"""set terminal png size 900,600 noenhanced
set output '{path}'
set title 'marker scan: cost against processes on the system (half marked)'
set xlabel 'processes'
set ylabel 'ms per scan'
set logscale y
set key left top
plot '{data}' u 1:2 w lp t 'raw floor', '' u 1:3 w lp t 'libreaper reaper_scan', '' u 1:4 w lp t 'libreaper rescan', \
 '' u 1:5 w lp t 'libproc2 PIDS_ENVIRON_V', '' u 1:6 w lp t 'hand-written with_home', \
 '' u 1:7 w lp t 'libreaper reaper_scan, nothing marked'
"""
    subprocess.run([gp], input=script, text=True, check=False)
    os.unlink(data)
    return path if os.path.exists(path) else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--quick", action="store_true")
    # the wrapper is timed on the quiet host; the suite once before the scan's sleepers exist
    # and once among them
    ap.add_argument("--only", default="wrapper,memory,exit,run-exit,kill,reap,suite-quiet,plugin,scan,suite-crowded")
    ap.add_argument("--doc", help="rewrite the results block of this page (docs/BENCHMARKS.md) from the results")
    a = ap.parse_args()
    b = Bench(a.build, a.quick or os.environ.get("BENCH_QUICK") == "1")
    t0, load0 = time.monotonic(), os.getloadavg()[0]
    steps = {"scan": b.scan, "exit": b.exit_detection, "kill": b.kill_convergence, "reap": b.reap_growth,
             "wrapper": b.wrapper, "memory": b.memory, "run-exit": b.run_exit, "suite-quiet": b.suite_quiet,
             "suite-crowded": b.suite_crowded, "plugin": b.plugin}
    try:
        for name in a.only.split(","):
            print(f"== {name}", flush=True)
            steps[name]()
    finally:
        os.close(b.hold_w)  # every sleeper exits by itself now
        os.close(b.hold_r)
        collect(True)
        shutil.rmtree(b.tmp, ignore_errors=True)
    growth(b.results)
    b.results["seconds"] = time.monotonic() - t0
    b.results["load"] = [load0, os.getloadavg()[0]]
    png = plot(b.results, os.path.join(HERE, "growth.png"))
    b.results["plot"] = png
    with open(os.path.join(HERE, "results.json"), "w") as f:
        json.dump(b.results, f, indent=1)
    print()
    print(headline(b.results))
    print()
    print(table(b.results))
    print(f"\nbench: {b.results['seconds']:.0f} s; bench/results.json" + (f", {png}" if png else ""))
    if a.doc:
        write_doc(a.doc, b.results)
        print(f"bench: {a.doc} updated")


if __name__ == "__main__":
    main()
