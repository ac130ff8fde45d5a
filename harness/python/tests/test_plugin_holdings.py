# SPDX-License-Identifier: MIT
"""The plugin's teardown error says what a leak held: the port the next test cannot bind."""
from __future__ import annotations

import os

from conftest import TAG_VAR, with_tag
from procutil import free_port

PLUGIN = ("-p", "reaper.pytest_plugin", "--reaper", "--reaper-nested")


def test_teardown_error_shows_the_held_port(pytester, spawner):
    port = free_port()
    os.environ[TAG_VAR] = spawner.tag
    try:
        pytester.makepyfile(test_inner=f"""
import os, subprocess, sys, time
SERVER = '''
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", {port})); s.listen()
open(sys.argv[1], "w").close()
s.accept()
'''
def test_leaks_a_server(tmp_path):
    ready = str(tmp_path / "up")
    subprocess.Popen([sys.executable, "-c", SERVER, ready], start_new_session=True,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not os.path.exists(ready):
        time.sleep(0.01)
""")
        result = pytester.runpytest(*PLUGIN, "--reaper-timeout", "0")
    finally:
        del os.environ[TAG_VAR]
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([
        "*reaper: test_inner.py::test_leaks_a_server left 1 process running*",
        f"*holds 127.0.0.1:{port} (listening)",
    ])
    assert "rss " in result.stdout.str()
    assert with_tag(spawner.tag) == []
