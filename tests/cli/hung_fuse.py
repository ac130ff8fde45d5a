# SPDX-License-Identifier: MIT
"""hung_fuse.py MNT OPENED -- COMMAND...: mounts at MNT a FUSE file system of one file, `f`,
that answers until `f` is opened (creating OPENED then) and never again: a hung server,
alive, its /dev/fuse open. Runs COMMAND meanwhile, then ends the server; exits with
COMMAND's status. Run it as root in a mount namespace of its own (unshare --mount
--propagation private): the mount ends with it. Attributes are never cached by the kernel
(valid 0 s), so any stat that asks the file system waits for the server forever."""
import ctypes
import os
import signal
import struct
import subprocess
import sys
import time

mnt, opened, command = sys.argv[1], sys.argv[2], sys.argv[4:]
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open("/dev/fuse", os.O_RDWR)
opts = "fd=%d,rootmode=40000,user_id=0,group_id=0" % fd
if libc.mount(b"hung_fuse", mnt.encode(), b"fuse", 6, opts.encode()) != 0:  # MS_NOSUID | MS_NODEV
    sys.exit("hung_fuse: mount: %s" % os.strerror(ctypes.get_errno()))


def attr(ino, mode):
    # fuse_attr: ino size blocks atime mtime ctime, 3 nsec, mode nlink uid gid rdev blksize flags
    return struct.pack("<QQQQQQIIIIIIIIII", ino, 0, 0, 0, 0, 0, 0, 0, 0, mode, 1, 0, 0, 0, 4096, 0)


def reply(unique, err=0, body=b""):
    os.write(fd, struct.pack("<IiQ", 16 + len(body), -err, unique) + body)


def serve():
    while True:
        req = os.read(fd, (1 << 20) + 4096)
        _, op, unique, node = struct.unpack_from("<IIQQ", req)
        if op == 26:  # INIT: protocol 7.31, fuse_init_out of 64 bytes
            reply(unique, 0, struct.pack("<IIIIHHIIHHII", 7, 31, 0, 0, 0, 0, 65536, 1, 0, 0, 0, 0) + b"\0" * 24)
        elif op == 1:  # LOOKUP
            if req[40:].split(b"\0")[0] == b"f":
                reply(unique, 0, struct.pack("<QQQQII", 2, 0, 0, 0, 0, 0) + attr(2, 0o100644))
            else:
                reply(unique, 2)
        elif op == 3:  # GETATTR
            reply(unique, 0, struct.pack("<QII", 0, 0, 0) + (attr(1, 0o40755) if node == 1 else attr(2, 0o100644)))
        elif op == 14:  # OPEN, FOPEN_NOFLUSH: closing it asks nothing of a hung server
            reply(unique, 0, struct.pack("<QII", 1, 32, 0))
            open(opened, "w").close()
            while True:
                time.sleep(3600)
        elif op not in (2, 36):  # FORGET, INTERRUPT get no reply
            reply(unique, 38)  # ENOSYS


server = os.fork()
if server == 0:
    serve()
os.close(fd)
status = subprocess.run(command).returncode
os.kill(server, signal.SIGKILL)
os.waitpid(server, 0)
sys.exit(status if status >= 0 else 128 - status)
