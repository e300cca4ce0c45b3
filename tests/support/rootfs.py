"""What the box user can write on a box's root filesystem, asked from inside the box (tests/sandbox/test_rootfs.py,
tests/env/test_seal.py): the root must be writable as on a host, yet nothing on it writable by that user."""

from __future__ import annotations

import json

from patcher.sandbox import DockerSandbox
from sandbox.protocol import RunTestRequest, WriteFileRequest

PROBE = r"""
import errno, json, os, stat, sys, sysconfig
uid, gid = os.getuid(), os.getgid()
root = os.stat("/").st_dev
writable = []
for top, dirs, files in os.walk("/"):  # a directory it cannot read is still checked, from its parent
    dirs[:] = [d for d in dirs if os.lstat(os.path.join(top, d)).st_dev == root]  # the root filesystem only
    for path in [*(["/"] if top == "/" else []), *(os.path.join(top, n) for n in [*dirs, *files])]:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode) or st.st_dev != root:
            continue
        if st.st_uid == uid or os.access(path, os.W_OK):  # an owner could chmod it writable
            writable.append(path)
candidates = ["/", "/etc", "/usr", "/usr/local", "/usr/local/bin", "/usr/lib", "/opt", "/opt/patcher",
              "/opt/patcher/sandbox", "/var", "/var/lib", "/var/cache", "/var/log", "/var/lock", "/var/mail",
              "/run", "/run/lock", "/home", "/srv", "/root", "/workspace", "/mnt", "/media",
              sysconfig.get_paths()["purelib"], sys.prefix, os.path.join(sys.prefix, "bin")]
created = {}
for d in dict.fromkeys(candidates):
    try:
        with open(os.path.join(d, ".patcher-probe"), "x") as f:
            f.write("x")
        created[d] = "ok"
    except OSError as e:
        created[d] = errno.errorcode.get(e.errno, str(e))
vfs = os.statvfs("/")
print(json.dumps({"read_only": bool(vfs.f_flag & os.ST_RDONLY), "writable": writable[:40],
                  "created": created, "prefix": sys.prefix}))
"""
"""Walks the root filesystem (not the mounts in it) for what the box user owns or may write, and tries to
create a file in the usual places (a venv's too, when the box runs one)."""

FILL = r"""
import errno, json, os
out = {}
for d in ("/tmp", "/var/tmp", ".", "/dev/shm"):
    path, written, error = os.path.join(d, "fill.bin"), 0, "none"
    vfs = os.statvfs(d)
    try:
        with open(path, "wb") as f:
            while written < vfs.f_blocks * vfs.f_frsize + (32 << 20):  # past the size: the filesystem must stop it
                f.write(b"\0" * (1 << 20))
                f.flush()
                written += 1 << 20
    except OSError as e:
        error = errno.errorcode.get(e.errno, str(e))
    finally:
        os.unlink(path)
    out[d] = {"written": written, "size": vfs.f_blocks * vfs.f_frsize, "error": error,
              "same_device_as_root": os.stat(d).st_dev == os.stat("/").st_dev}
print(json.dumps(out))
"""
"""Writes 1 MiB blocks into each writable place (the repo is the working directory) until the filesystem
refuses: how much the box user can put there."""


def probe(box: DockerSandbox, code: str) -> dict[str, dict[str, object]]:
    assert not box.call(WriteFileRequest("_rootfs.py", code)).is_error
    result = box.call(RunTestRequest("python -c \"exec(open('_rootfs.py').read())\""), 60)
    assert result.exit_code == 0, result.output
    return json.loads(result.output.splitlines()[-1])


def assert_nothing_writable(facts: dict[str, object]) -> None:
    """The root is writable as a host's is, and yet the box user may write nowhere on it."""
    assert facts["read_only"] is False
    assert facts["writable"] == [], facts["writable"]
    created = facts["created"]
    assert isinstance(created, dict)
    assert {d: e for d, e in created.items() if e not in ("EACCES", "ENOENT")} == {}, created
    assert created["/etc"] == created["/usr"] == created["/workspace"] == created["/"] == "EACCES"
