# SPDX-License-Identifier: MIT
"""A spawn's site in the environment its program execs with (see _site): ``REAPER_STARTED_AT``
and ``REAPER_STARTED_IN``, written at the least cost (a forked child writes them where every
page it writes is copied)."""

from __future__ import annotations

import os
from typing import Dict, Optional, Tuple

from ._site import AT, IN


def _environb() -> Dict[bytes, bytes]:
    """os.environ as bytes, read without decoding it: the dict os.environ keeps (about 5 us
    for 40 entries, against 27 us through os.environb's mapping interface), where there is one."""
    data = getattr(os.environ, "_data", None)
    if data is not None and data is _ENV_DATA:
        return data
    return {os.fsencode(k): os.fsencode(v) for k, v in os.environ.items()}  # os.environ replaced


def env_entries(site) -> Tuple[Tuple[bytes, Optional[bytes]], ...]:
    """site's environment entries, encoded as os.environ keeps them (None: removed)."""
    return tuple((os.fsencode(k), None if v is None else os.fsencode(v)) for k, v in site.env().items())


def set_entries(entries: Tuple[Tuple[bytes, Optional[bytes]], ...]) -> None:
    """os.environ (and the C environment) with entries (from env_entries) in it, at the least
    cost: written to the dict os.environ keeps as its own __setitem__ would."""
    data = _environb()
    own = data is _ENV_DATA
    for key, value in entries:
        if value is None:
            if key in data:
                if own:
                    os.unsetenv(key)
                    del data[key]
                else:
                    del os.environ[os.fsdecode(key)]
        elif data.get(key) != value:
            if own:
                os.putenv(key, value)
                data[key] = value
            else:
                os.environ[os.fsdecode(key)] = os.fsdecode(value)


def carried() -> bool:
    """Whether this process's environment holds a site (one an ancestor's spawn gave it)."""
    data = _environb()
    return _AT_B in data or _IN_B in data


_AT_B, _IN_B = os.fsencode(AT), os.fsencode(IN)
_ENV_DATA = getattr(os.environ, "_data", None)
if not isinstance(_ENV_DATA, dict) or not all(isinstance(k, bytes) for k in _ENV_DATA):
    _ENV_DATA = None


class Inherited(list):
    """A spawn's environment made from os.environ (it was given None): b"NAME=VALUE" entries,
    and source, the os.environ (bytes) they were made from, which is never changed: what it
    holds is told by a lookup there instead of a scan of the entries (see scope._env_for)."""
    __slots__ = ("source",)


#: (a copy of os.environ's bytes, its entries as b"NAME=VALUE" but a site's): os.environ
#: rarely changes between spawns, and comparing it with the copy costs a tenth of making them
_BASE: Tuple[Dict[bytes, bytes], list] = ({}, [])


def _inherited(entries: Tuple[Tuple[bytes, Optional[bytes]], ...]) -> Inherited:
    """os.environ's entries with entries (a site's: REAPER_STARTED_AT and _IN) in place of its own."""
    global _BASE
    data = _environb()
    base = _BASE
    if base[0] != data:
        copy = dict(data)  # not iterated itself: another thread may set a variable meanwhile
        base = _BASE = (copy, [k + b"=" + v for k, v in copy.items() if k != _AT_B and k != _IN_B])
    out = Inherited(base[1])
    out += [k + b"=" + v for k, v in entries if v is not None]
    out.source = base[0]
    return out


def with_env(env, site, entries: Optional[Tuple[Tuple[bytes, Optional[bytes]], ...]] = None):
    """env (a spawn's environment: None for os.environ, a mapping, or a list of b"NAME=VALUE")
    with site's entries in it (entries: env_entries(site), when made already). An entry the
    caller gave itself (another value than os.environ's, which a copy of os.environ would
    hold) is the caller's to keep."""
    if env is None:  # os.environ's own: no entry of it is the caller's
        return _inherited(entries if entries is not None else env_entries(site))
    entries = site.env()
    if isinstance(env, (list, tuple)):
        given = {}
        for e in env:
            name, _, value = bytes(e).partition(b"=")
            given[name] = value
        for k in list(entries):
            value = given.get(os.fsencode(k))
            if value is not None and value != os.fsencode(os.environ.get(k, "")):
                del entries[k]
        names = {os.fsencode(k) for k in entries}
        out = [e for e in env if bytes(e).partition(b"=")[0] not in names]
        out += [os.fsencode(k) + b"=" + os.fsencode(v) for k, v in entries.items() if v is not None]
        return out
    try:
        out = dict(env)
    except (TypeError, ValueError):
        return env
    bytes_keys = any(isinstance(k, bytes) for k in out)
    for k, v in entries.items():
        key = os.fsencode(k) if bytes_keys else k
        mine = out.get(key)
        if mine is not None and os.fsencode(mine) != os.fsencode(os.environ.get(k, "")):
            continue
        out.pop(key, None)
        if v is not None:
            out[key] = os.fsencode(v) if bytes_keys else v
    return out
