"""A request body as the Sentry SDKs send it, made plain within a size bound: gzip, deflate or none.

The bound holds on the decompressed bytes, read a chunk at a time, so a small body that inflates to
gigabytes (a compression bomb) costs at most `limit` bytes of memory before it is refused.

    BadEvent                  400  the body cannot be read (a broken stream, an unknown encoding)
    └── EventTooLarge         413  the body is larger than the limit once decompressed
"""

from __future__ import annotations

import zlib

from patcher.errors import BadInput

CHUNK = 64 * 1024


class BadEvent(BadInput):
    """The request is malformed: nothing of it is stored; the message says what is wrong."""


class EventTooLarge(BadEvent):
    """The request is larger than this server takes."""


def decoded(body: bytes, encoding: str | None, limit: int) -> bytes:
    """The body decompressed by its Content-Encoding (gzip, deflate, identity or none), at most `limit` bytes."""
    kind = (encoding or "identity").strip().lower()
    if kind == "identity":
        if len(body) > limit:
            raise EventTooLarge(f"the event is {len(body)} bytes; this project takes at most {limit}")
        return body
    if kind == "gzip":
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif kind == "deflate":
        inflate = zlib.decompressobj()  # zlib-wrapped, as HTTP's deflate is
    else:
        raise BadEvent(f"Content-Encoding {encoding!r} is not supported (gzip, deflate or none)")
    out = bytearray()
    try:
        data = body
        while data:
            out += inflate.decompress(data, limit + 1 - len(out))
            if len(out) > limit:
                raise EventTooLarge(f"the event is larger than {limit} bytes once decompressed; this project "
                                    "takes at most that")
            data = inflate.unconsumed_tail
        if not inflate.eof:
            raise BadEvent(f"the {kind} body ends before its stream does")
    except zlib.error as e:
        raise BadEvent(f"the {kind} body cannot be decompressed: {e}") from e
    return bytes(out)
