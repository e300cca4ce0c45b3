"""A container's first process: `python3 -S -c BOOT --repo PATH ...` (BOOT: patcher/sandbox/pool.py).

It starts unpacking the work tree, then loads and runs the tool server (server.py), whose module imports
are most of a box's start-up: the two overlap. Ahead of the server's hello the host sends a header,
`tree N` padded to HEADER bytes, and N bytes of a tar of the work tree. `head -c N`, which reads no byte
past them, pipes them to the image's `tar`, both run as the sandbox uid (no owner restored, the umask
applied, no absolute name and no `..` followed). The tar holds no `.git`: Docker puts that in as root
meanwhile, and the host asks nothing that needs it before it is there.

A box started ahead of its job (a pool's spare) gets its header only with the job, so it loads the server
first and unpacks when the header comes. Only os, select and sys are loaded before tar starts
(the header and its unpacking: tree.py).
"""

from __future__ import annotations

import select
import sys

from sandbox.tree import Tree


def main(argv: list[str]) -> int:
    """`--tree first` (a box started for its job): wait for the header before anything else. Without it (a
    spare) the tree is unpacked first only when its header is already here."""
    first = argv[-2:] == ["--tree", "first"]
    argv = argv[:-2] if first else argv
    repo = argv[argv.index("--repo") + 1] if "--repo" in argv[:-1] else "."
    tree = Tree(repo) if first or select.select([0], [], [], 0)[0] else None
    from sandbox import server  # the imports tar's work overlaps

    return server.main(argv, tree=tree or Tree(repo))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
