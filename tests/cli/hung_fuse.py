# SPDX-License-Identifier: MIT
"""hung_fuse.py MNT OPENED -- COMMAND...: mounts at MNT a FUSE file system of one file, `f`,
that answers until `f` is opened (creating OPENED then) and never again: a hung server,
alive, its /dev/fuse open. Runs COMMAND meanwhile, then ends the server; exits with
COMMAND's status. With HUNG_FUSE_FLUSH=1 in its environment `f` is opened without
FOPEN_NOFLUSH: every close of it, a copy's too, sends a FLUSH that is never answered. Run it
as root in a mount namespace of its own (unshare --mount --propagation private): the mount
ends with it. Attributes are never cached by the kernel
(valid 0 s), so any stat that asks the file system waits for the server forever."""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # fusefs
import fusefs  # noqa: E402

mnt, opened, command = sys.argv[1], sys.argv[2], sys.argv[4:]
fd = fusefs.mount(mnt, "hung_fuse")


def reply(unique, err=0, body=b""):
    fusefs.reply(fd, unique, err, body)


def serve():
    while True:
        op, unique, node, req = fusefs.request(fd)
        if op == fusefs.INIT:
            reply(unique, 0, fusefs.init_out())
        elif op == fusefs.LOOKUP:
            if fusefs.name_of(req) == b"f":
                reply(unique, 0, fusefs.entry(2, 0o100644))
            else:
                reply(unique, 2)
        elif op == fusefs.GETATTR:
            reply(unique, 0, fusefs.attr_out(node, 0o40755 if node == 1 else 0o100644))
        elif op == fusefs.OPEN:  # FOPEN_NOFLUSH: closing it asks nothing of a hung server
            reply(unique, 0, fusefs.open_out(0 if os.environ.get("HUNG_FUSE_FLUSH") == "1" else 32))
            open(opened, "w").close()
            while True:
                time.sleep(3600)
        elif op not in (fusefs.FORGET, fusefs.INTERRUPT):  # they get no reply
            reply(unique, 38)  # ENOSYS


server = os.fork()
if server == 0:
    serve()
os.close(fd)
status = subprocess.run(command).returncode
os.kill(server, signal.SIGKILL)
os.waitpid(server, 0)
sys.exit(status if status >= 0 else 128 - status)
