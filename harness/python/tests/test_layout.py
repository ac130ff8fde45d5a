# SPDX-License-Identifier: MIT
"""The ctypes structs must be reaper/reaper.h's, field for field: same names in the same
order (read from the header), and the same sizeof/offsetof (printed by a C program built
from the header with the system compiler). A field added to the header and not here fails."""
from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess

import pytest

from procutil import ROOT
from reaper import _lib

HEADER = ROOT / "reaper" / "reaper.h"


def header_fields(text: str, name: str) -> list[str]:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    m = re.search(r"struct\s+%s\s*\{(.*?)\};" % re.escape(name), text, flags=re.S)
    assert m, f"struct {name} not in {HEADER}"
    names = []
    for decl in m.group(1).split(";"):
        decl = " ".join(decl.split())
        if not decl:
            continue
        fp = re.search(r"\(\s*\*\s*(\w+)\s*\)", decl)
        if fp:
            names.append(fp.group(1))
            continue
        for part in decl.split(","):
            part = re.sub(r"\[.*?\]", "", part).strip()
            names.append(re.findall(r"\w+", part)[-1])
    return names


@pytest.mark.parametrize("cname", sorted(_lib.STRUCTS))
def test_field_names_and_order_match_the_header(cname):
    ours = [f[0] for f in _lib.STRUCTS[cname]._fields_]
    assert ours == header_fields(HEADER.read_text(), cname), \
        f"struct {cname} changed in reaper.h: update harness/python/reaper/_lib.py"


def test_sizes_and_offsets_match_the_compiler(tmp_path):
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    assert cc, "no C compiler (cc) on PATH"
    lines = ['#include <stdio.h>', '#include <stddef.h>', '#include "reaper/reaper.h"', "int main(void){"]
    expect = []
    for cname, st in sorted(_lib.STRUCTS.items()):
        lines.append(f'printf("{cname} sizeof %zu\\n", sizeof(struct {cname}));')
        lines.append(f'printf("{cname} alignof %zu\\n", _Alignof(struct {cname}));')
        expect.append(f"{cname} sizeof {ctypes.sizeof(st)}")
        expect.append(f"{cname} alignof {ctypes.alignment(st)}")
        for fname, ftype in st._fields_:
            lines.append(f'printf("{cname}.{fname} %zu %zu\\n", offsetof(struct {cname}, {fname}), '
                         f'sizeof(((struct {cname} *)0)->{fname}));')
            expect.append(f"{cname}.{fname} {getattr(st, fname).offset} {ctypes.sizeof(ftype)}")
    lines.append("return 0;}")
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "layout"
    subprocess.run([cc, "-std=gnu11", "-Wall", "-Werror", f"-I{ROOT}", "-o", str(exe), str(src)], check=True)
    got = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()
    assert got == expect


def test_the_name_parser_sees_what_it_must():
    text = """struct reaper_x { int a; /* c */ pid_t b, c; char *d; int (*fn)(void *ctx);
              void (*g)(void *ctx, int sig); char name[64]; };"""
    assert header_fields(text, "reaper_x") == ["a", "b", "c", "d", "fn", "g", "name"]
