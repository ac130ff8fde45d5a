# SPDX-License-Identifier: MIT
"""The plugin's table of patches: each target is where the table says, with the parameters its
replacement relies on, on the Python that runs the tests."""

import inspect

import pytest

from reaper.pytest import patches
from reaper.pytest.host import HOST
from test_plugin_guest import PLUGIN, inner, run_sub  # noqa: F401 (inner: a fixture)


def name(patch):
    return ".".join(p for p in (patch.module, patch.holder, patch.attribute) if p)


@pytest.mark.parametrize("patch", patches.PATCHES, ids=name)
def test_each_target_has_the_parameters_its_replacement_expects(patch):
    fn = patches.target(patch)
    if fn is None:
        assert patch.optional, f"{name(patch)} is not on this Python: the plugin cannot intercept it"
        return
    got = patches.parameters(fn)
    assert got[:len(patch.expects)] == patch.expects, \
        f"{name(patch)} takes {got} on this Python; its replacement expects {patch.expects} first"


def test_a_changed_parameter_list_is_seen():
    def fork_exec(args, executable_list, close_fds, cwd, env, *rest):
        pass

    class Builtin:  # a builtin without a signature, as _posixsubprocess.fork_exec before 3.13
        __doc__ = "fork_exec(args, executable_list, close_fds, pass_fds, cwd, env,\n    p2cread, ...)\n\nSpawn."

    class Clinic:  # a builtin whose text signature inspect cannot read (os.posix_spawn)
        __text_signature__ = "($module, path, argv, env, /, *, file_actions=(),\n setpgroup=<unrepresentable>)"

    assert patches.parameters(fork_exec) == ("args", "executable_list", "close_fds", "cwd", "env")
    assert patches.parameters(fork_exec)[:6] != patches._FORK_EXEC
    assert patches.parameters(Builtin())[:6] == patches._FORK_EXEC
    assert patches.parameters(Clinic()) == ("path", "argv", "env")


def test_what_the_session_replaced_is_the_tables_spawn_group():
    if not HOST.users:
        pytest.fail("the plugin's tests run with the plugin (-p reaper.pytest_plugin --reaper)")
    replaced = {(where, attr) for where, attr, _ in HOST.saved}
    table = {(patches.holder(p), p.attribute) for p in patches.PATCHES
             if p.group == "spawn" and patches.target(p) is not None}
    assert replaced == table
    for where, attr, original in HOST.saved:
        assert vars(where)[attr] is not original and inspect.unwrap(vars(where)[attr]) is original, (where, attr)


def test_a_target_in_a_module_not_imported_yet_is_replaced_once_it_is(inner):
    # a session whose tests never use multiprocessing does not import it; one that does gets
    # its helpers' targets replaced at the import, in both orders of import
    inner.makepyfile(test_late="""
import inspect, sys
def test_not_imported():
    assert "multiprocessing" not in sys.modules and "concurrent.futures" not in sys.modules
def test_imported_later():
    import multiprocessing.popen_forkserver as pf
    from multiprocessing import forkserver, resource_tracker
    from concurrent.futures import thread
    for holder, name in ((pf.Popen, "_launch"), (resource_tracker.ResourceTracker, "ensure_running"),
                         (forkserver.ForkServer, "ensure_running"), (thread._WorkItem, "run")):
        fn = vars(holder)[name]
        assert inspect.unwrap(fn) is not fn, (holder, name)
""")
    result = run_sub(inner, *PLUGIN, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
