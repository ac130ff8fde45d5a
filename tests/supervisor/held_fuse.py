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
import ctypes
import os
import signal
import struct
import subprocess
import sys
import threading

mnt, control, command = sys.argv[1], sys.argv[2], sys.argv[4:]
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open("/dev/fuse", os.O_RDWR)
opts = "fd=%d,rootmode=40000,user_id=0,group_id=0" % fd
if libc.mount(b"held_fuse", mnt.encode(), b"fuse", 6, opts.encode()) != 0:  # MS_NOSUID | MS_NODEV
    sys.exit("held_fuse: mount: %s" % os.strerror(ctypes.get_errno()))

NODES = {b"f": 2, b"g": 3}
lock = threading.Lock()
held = []  # (unique, body) of the requests waiting for CONTROL
released = False


def attr(ino, mode):
    # fuse_attr: ino size blocks atime mtime ctime, 3 nsec, mode nlink uid gid rdev blksize flags
    return struct.pack("<QQQQQQIIIIIIIIII", ino, 0, 0, 0, 0, 0, 0, 0, 0, mode, 1, 0, 0, 0, 4096, 0)


def reply(unique, err=0, body=b""):
    try:
        os.write(fd, struct.pack("<IiQ", 16 + len(body), -err, unique) + body)
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
            req = os.read(fd, (1 << 20) + 4096)
        except OSError:
            return  # unmounted
        _, op, unique, node = struct.unpack_from("<IIQQ", req)
        if op == 26:  # INIT: protocol 7.31, fuse_init_out of 64 bytes
            reply(unique, 0, struct.pack("<IIIIHHIIHHII", 7, 31, 0, 0, 0, 0, 65536, 1, 0, 0, 0, 0) + b"\0" * 24)
        elif op == 1:  # LOOKUP
            ino = NODES.get(req[40:].split(b"\0")[0])
            if ino:
                reply(unique, 0, struct.pack("<QQQQII", ino, 0, 0, 0, 0, 0) + attr(ino, 0o100644))
            else:
                reply(unique, 2)
        elif op == 3:  # GETATTR
            body = struct.pack("<QII", 0, 0, 0) + (attr(1, 0o40755) if node == 1 else attr(node, 0o100644))
            if node == NODES[b"g"]:
                reply_or_hold(unique, body)
            else:
                reply(unique, 0, body)
        elif op == 14:  # OPEN: no FOPEN_NOFLUSH, the last close asks the server
            reply(unique, 0, struct.pack("<QII", 1, 0, 0))
        elif op == 25:  # FLUSH
            if node == NODES[b"f"]:
                reply_or_hold(unique)
            else:
                reply(unique, 0)
        elif op == 18:  # RELEASE
            reply(unique, 0)
        elif op not in (2, 36):  # FORGET, INTERRUPT get no reply
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
