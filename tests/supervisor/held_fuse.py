# SPDX-License-Identifier: MIT
"""held_fuse.py MNT CONTROL -- COMMAND...: mounts at MNT a FUSE file system of two files
whose server holds some answers until a line arrives on the fifo CONTROL:
  f  the last close of it (FLUSH) waits for the server, so a process that has it open and
     exits, SIGKILLed or not, stays in its exit (an exiting task, listed in its cgroup)
  g  every stat of it (GETATTR) waits for the server, so a process that stats it sleeps
     uninterruptibly, a SIGKILL pending but not acted on (alive, not exiting)
The first request held creates CONTROL.held. After the line every held request is answered, and every later one at once. Runs COMMAND
meanwhile; once it has ended and the line has come, ends the server; exits with COMMAND's
status. Ending the process group ends the server too, which aborts whatever waits on it. Run it as root in a mount namespace of its own (unshare --mount
--propagation private): the mount ends with it. Nothing is cached by the kernel (valid 0 s)."""
import os
import signal
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # fusefs
import fusefs  # noqa: E402

mnt, control, command = sys.argv[1], sys.argv[2], sys.argv[4:]
fd = fusefs.mount(mnt, "held_fuse")

NODES = {b"f": 2, b"g": 3}
lock = threading.Lock()
held = []  # (unique, body) of the requests waiting for CONTROL
released = False


def reply(unique, err=0, body=b""):
    try:
        fusefs.reply(fd, unique, err, body)
    except OSError:
        pass  # the request was given up (ENOENT): its process is gone


def reply_or_hold(unique, body=b""):
    with lock:
        if not released:
            held.append((unique, body))
            open(control + ".held", "w").close()
            return
    reply(unique, 0, body)


def release(done):
    global released
    with open(control) as f:
        f.readline()
    with lock:
        released = True
        todo = list(held)
        held.clear()
    for unique, body in todo:
        reply(unique, 0, body)
    os.write(done, b"x")


def serve(done):
    threading.Thread(target=release, args=(done,), daemon=True).start()
    while True:
        try:
            op, unique, node, req = fusefs.request(fd)
        except OSError:
            return  # unmounted
        if op == fusefs.INIT:
            reply(unique, 0, fusefs.init_out())
        elif op == fusefs.LOOKUP:
            ino = NODES.get(fusefs.name_of(req))
            if ino:
                reply(unique, 0, fusefs.entry(ino, 0o100644))
            else:
                reply(unique, 2)
        elif op == fusefs.GETATTR:
            body = fusefs.attr_out(node, 0o40755 if node == 1 else 0o100644)
            if node == NODES[b"g"]:
                reply_or_hold(unique, body)
            else:
                reply(unique, 0, body)
        elif op == fusefs.OPEN:  # no FOPEN_NOFLUSH: the last close asks the server
            reply(unique, 0, fusefs.open_out(0))
        elif op == fusefs.FLUSH:
            if node == NODES[b"f"]:
                reply_or_hold(unique)
            else:
                reply(unique, 0)
        elif op == fusefs.RELEASE:
            reply(unique, 0)
        elif op not in (fusefs.FORGET, fusefs.INTERRUPT):  # they get no reply
            reply(unique, 38)  # ENOSYS


released_r, released_w = os.pipe()
server = os.fork()
if server == 0:
    os.close(released_r)
    serve(released_w)
    os._exit(0)
os.close(fd)
os.close(released_w)
status = subprocess.run(command).returncode
os.read(released_r, 1)  # the line came (or the server is gone)
os.kill(server, signal.SIGKILL)
os.waitpid(server, 0)
sys.exit(status if status >= 0 else 128 - status)
