# SPDX-License-Identifier: MIT
"""The FUSE protocol as far as the test file systems need it (tests/cli/hung_fuse.py,
tests/supervisor/held_fuse.py): mounting /dev/fuse, reading a request, replying, and the
attributes of a node. Root only, in a mount namespace of the caller's own."""
import ctypes
import os
import struct
import sys

INIT, LOOKUP, FORGET, GETATTR, OPEN, RELEASE, FLUSH, INTERRUPT = 26, 1, 2, 3, 14, 18, 25, 36


def mount(mnt, name):
    """/dev/fuse, opened and mounted at mnt (nosuid, nodev): its fd. Exits saying why when the
    mount fails."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open("/dev/fuse", os.O_RDWR)
    opts = "fd=%d,rootmode=40000,user_id=0,group_id=0" % fd
    if libc.mount(name.encode(), mnt.encode(), b"fuse", 6, opts.encode()) != 0:  # MS_NOSUID | MS_NODEV
        sys.exit("%s: mount: %s" % (name, os.strerror(ctypes.get_errno())))
    return fd


def request(fd):
    """The next request: (opcode, unique, node id, the whole request)."""
    req = os.read(fd, (1 << 20) + 4096)
    _, op, unique, node = struct.unpack_from("<IIQQ", req)
    return op, unique, node, req


def name_of(req):
    """The name a LOOKUP asks for."""
    return req[40:].split(b"\0")[0]


def attr(ino, mode):
    # fuse_attr: ino size blocks atime mtime ctime, 3 nsec, mode nlink uid gid rdev blksize flags
    return struct.pack("<QQQQQQIIIIIIIIII", ino, 0, 0, 0, 0, 0, 0, 0, 0, mode, 1, 0, 0, 0, 4096, 0)


def entry(ino, mode):
    """A LOOKUP's answer: the node, cached for 0 s, with its attributes."""
    return struct.pack("<QQQQII", ino, 0, 0, 0, 0, 0) + attr(ino, mode)


def attr_out(ino, mode):
    """A GETATTR's answer, valid for 0 s."""
    return struct.pack("<QII", 0, 0, 0) + attr(ino, mode)


def init_out():
    """INIT's answer: protocol 7.31, fuse_init_out of 64 bytes."""
    return struct.pack("<IIIIHHIIHHII", 7, 31, 0, 0, 0, 0, 65536, 1, 0, 0, 0, 0) + b"\0" * 24


def open_out(flags):
    """OPEN's answer: file handle 1 and the FOPEN_* flags."""
    return struct.pack("<QII", 1, flags, 0)


def reply(fd, unique, err=0, body=b""):
    os.write(fd, struct.pack("<IiQ", 16 + len(body), -err, unique) + body)
