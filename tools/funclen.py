#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The longest functions and the largest files of a folder of C sources.

    tools/funclen.py [DIR] [--top N]

Function lengths come from Universal Ctags (its end: field), from the line of the name to
the closing brace; file sizes are lines. Without ctags nothing is printed for functions."""
import json
import os
import subprocess
import sys


def functions(paths):
    try:
        out = subprocess.run(["ctags", "--output-format=json", "--fields=+ne", "--kinds-C=f", "-o", "-"] + paths,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return []
    rows = []
    for line in out.splitlines():
        t = json.loads(line)
        if t.get("kind") == "function" and "end" in t:
            rows.append((t["end"] - t["line"] + 1, t["path"], t["name"]))
    return rows


def main():
    args = sys.argv[1:]
    top = 10
    if "--top" in args:
        i = args.index("--top")
        top = int(args[i + 1])
        del args[i:i + 2]
    d = args[0] if args else "reaper"
    paths = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith((".c", ".h")))
    print(f"longest functions of {d}/ (lines):")
    for n, path, name in sorted(functions(paths), reverse=True)[:top]:
        print(f"  {n:4d}  {path}:{name}")
    print(f"largest files of {d}/ (lines):")
    sizes = []
    for p in paths:
        with open(p, encoding="utf-8", errors="replace") as f:
            sizes.append((sum(1 for _ in f), p))
    for n, p in sorted(sizes, reverse=True)[:top]:
        print(f"  {n:4d}  {p}")


if __name__ == "__main__":
    main()
