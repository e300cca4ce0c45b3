"""What the service refuses with: BadInput and its kin, each an HTTP code in `app.py` only.

    BadInput                     400
    ├── UnknownJob               404  (store)
    ├── NotAvailable             404  no attestation: the job is not verified (yet)
    ├── IdempotencyConflict      409  (store)
    ├── Conflict                 409  e.g. a review of a job that is not verified
    ├── Forbidden                403  the token may not do this (permissions, approving one's own job)
    ├── TooLarge                 413  a traceback over the size limit
    └── TooMany                  429  the token already has its most jobs queued or running
"""

from __future__ import annotations

from patcher.errors import BadInput


class NotAvailable(BadInput):
    pass


class Conflict(BadInput):
    pass


class TooLarge(BadInput):
    pass


class Forbidden(BadInput):
    pass


class TooMany(BadInput):
    pass
