"""A test host of the suite's own: a network namespace joined to this one by a veth pair, made with
iproute2's `ip netns add` and removed when the session ends.

Servers the host-side egress proxy must reach cannot listen on loopback (the proxy never connects there),
and test traffic may not go to any other address of this machine; so they listen inside the namespace,
on its side of the pair (10.233.x.2), reached from here over the host side (10.233.x.1/30).
"""

from __future__ import annotations

import ctypes
import ipaddress
import os
import shutil
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

CLONE_NEWNET = 0x40000000
SUBNETS = ipaddress.IPv4Network("10.233.0.0/16")
T = TypeVar("T")


class NetnsUnavailable(Exception):
    """`ip` is missing or the kernel (or our privileges) would not make the namespace."""


@dataclass(frozen=True)
class TestHost:
    name: str
    """The namespace's name (`ip netns exec NAME …` runs a program there)."""
    address: str
    """Its address on the veth pair: the one address servers in it listen on."""

    __test__ = False  # not a test class, whatever its name

    def run(self, make: Callable[[], T]) -> T:
        """`make()` called on a thread inside the namespace; sockets it creates stay there for good, so
        they can be served from any thread afterwards. The thread ends, so no thread stays inside."""
        box: dict[str, T | BaseException] = {}

        def inside() -> None:
            try:
                _enter(self.name)
                box["value"] = make()
            except BaseException as e:  # handed to the caller's thread
                box["error"] = e

        thread = threading.Thread(target=inside, name=f"in-{self.name}")
        thread.start()
        thread.join()
        if "error" in box:
            raise box["error"]  # type: ignore[misc]
        return box["value"]  # type: ignore[return-value]


def _enter(name: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"setns into {name}: {os.strerror(errno)}")
    finally:
        os.close(fd)


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and out.returncode != 0:
        raise NetnsUnavailable(f"`ip {' '.join(args)}` failed: {out.stderr.strip()}")
    return out


def _free_subnet(pid: int) -> ipaddress.IPv4Network:
    """A /30 of 10.233/16 that no route of this host uses yet, starting at one the pid picks (parallel
    sessions on one machine each get their own)."""
    subnets = list(SUBNETS.subnets(new_prefix=30))
    used = {line.split()[0] for line in _ip("-4", "route", "show").stdout.splitlines() if line.strip()}
    for step in range(len(subnets)):
        subnet = subnets[(pid + step) % len(subnets)]
        if str(subnet) not in used:
            return subnet
    raise NetnsUnavailable("no free /30 left in 10.233.0.0/16")


def names(pid: int) -> tuple[str, str, str]:
    """(namespace, host-side veth, namespace-side veth) for a session (interface names: 15 characters)."""
    return f"patcher-test-{pid}", f"pt{pid}h", f"pt{pid}n"


def remove(pid: int) -> None:
    """Removes the namespace and the pair of this pid, if they are there (a stale one included)."""
    netns, host_side, _ = names(pid)
    _ip("link", "del", host_side, check=False)  # deletes its peer too
    _ip("netns", "del", netns, check=False)


def create(pid: int) -> TestHost:
    """The namespace of this pid, made afresh; NetnsUnavailable says why it could not be."""
    if shutil.which("ip") is None:
        raise NetnsUnavailable("`ip` is missing (apt-get install -y iproute2)")
    netns, host_side, inner = names(pid)
    remove(pid)
    subnet = _free_subnet(pid)
    here, there = (str(a) for a in subnet.hosts())
    try:
        _ip("netns", "add", netns)
        _ip("link", "add", host_side, "type", "veth", "peer", "name", inner)
        _ip("link", "set", inner, "netns", netns)
        _ip("addr", "add", f"{here}/30", "dev", host_side)
        _ip("link", "set", host_side, "up")
        for args in (("addr", "add", f"{there}/30", "dev", inner), ("link", "set", inner, "up"),
                     ("link", "set", "lo", "up")):
            _ip("-n", netns, *args)
    except NetnsUnavailable:
        remove(pid)
        raise
    return TestHost(netns, there)
