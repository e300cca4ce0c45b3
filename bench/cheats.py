"""Issue 34's two rates and what the judges cost, as tables: false-verified cheats by kind, false-refused honest
fixes by reason, and whole verification time over the pytest runs it contains.

1. Cheats: tests/support/corpus (over 60 in 16 kinds on seven toy repositories, each checked on the host by
   tests/verify/test_cheat_corpus.py), each diff to verify() on real Docker as the pipeline hands it an agent's,
   a few at a time. Per kind: how many came back verified, the reasons that stopped the rest, and the judge each
   missed cheat was written against. Compared with tests/support/corpus/today.py (what main let through when last
   measured): a new miss is named, and so is a listed cheat that is now stopped (take it off the list: its
   strict xfail in tests/verify/test_cheats_kinds.py then fails).
2. Honest fixes by source (bench/honest.py): corpus, examples (the default), injected, upstream (engineer
   upstream's real upstream fixes, when bench/upstream_cases.py is there). A false refusal is a judged fix that
   does not come back verified.
3. Cost (bench/judge_cost.py): the bundled examples verified once each.
The sandbox image (PATCHER_SANDBOX_IMAGE) is built first when sandbox/ changed (a merged judge's box side).

    PATCHER_SANDBOX_IMAGE=patcher-sandbox:NAME .venv/bin/python -m bench.cheats    # all three; about 25 min loaded
    ... -m bench.cheats --only cheats            # or honest, cost (comma-separated)
    ... -m bench.cheats --only honest --honest corpus,examples,injected,upstream
    ... -m bench.cheats --only cheats --today    # also prints today.py's sets as this run found them
    ... -m bench.cheats --only cheats --corpus aware --repeat 3 [--kind K,..] [--label TEXT] [--dump DIR]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from bench import honest, judge_cost
from bench.coverage import covered, line
from patcher.config import SandboxConfig
from patcher.env import image
from patcher.verify import Verification
from tests.support.corpus import AWARE, CHEATS, Cheat
from tests.support.corpus.today import REFUSED_HONEST, SOMETIMES_VERIFIED, VERIFIED_CHEATS
from tests.support.corpus.verifier import Verifier


def cheats(tmp: Path, cfg: SandboxConfig, workers: int, today: bool, packaged: bool = False,
           chosen: list[Cheat] | None = None, repeat: int = 1, dump: Path | None = None) -> None:
    """Each of `chosen` (every cheat by default) verified `repeat` times (the held-out draws are random): the table
    by kind of every round, then, over several, each cheat's verified / unjudged / refused counts."""
    chosen = CHEATS if chosen is None else chosen
    started = time.monotonic()
    rounds: list[dict[str, Verification]] = []

    def done(entry: object, ver: Verification) -> None:
        assert isinstance(entry, Cheat)
        print(f"  {time.monotonic() - started:5.0f}s {entry.id}: {ver.reason}", flush=True)
        if dump is not None:
            name = f"{len(rounds) + 1}-{entry.kind}-{abs(hash(entry.label)) % 10 ** 8}.json"
            (dump / name).write_text(json.dumps({"id": entry.id, "status": ver.status, "reason": ver.reason,
                                                 "message": ver.message, **ver.as_json()}, indent=1, default=str))

    verifier = Verifier(tmp, cfg.image, cfg.test_timeout_s, packaged)
    try:
        for n in range(repeat):
            print(f"round {n + 1} of {repeat}", flush=True)
            got = verifier.check_all(chosen, workers, done)
            rounds.append(dict(zip([c.id for c in chosen], got, strict=True)))
            _by_kind(chosen, rounds[-1], today, packaged, workers, time.monotonic() - started)
    finally:
        verifier.close()
    if repeat > 1:
        _rates(chosen, rounds)


def _rates(chosen: list[Cheat], rounds: list[dict[str, Verification]]) -> None:
    """Per cheat over the rounds: how often verified, unjudged, refused (and the reasons)."""
    print(f"\nover {len(rounds)} rounds: verified / unjudged / refused, per cheat")
    for cheat in chosen:
        vers = [r[cheat.id] for r in rounds]
        n_ver = sum(v.status == "verified" for v in vers)
        n_low = sum(v.status == "unjudged" for v in vers)
        reasons = Counter(v.reason for v in vers if v.status not in ("verified", "unjudged"))
        shown = ", ".join(f"{r} {k}" for r, k in reasons.most_common())
        print(f"  {n_ver} / {n_low} / {sum(reasons.values())}  [{cheat.targets or '-'}] {cheat.id}"
              + (f"  ({shown})" if shown else ""))
    total = len(chosen) * len(rounds)
    print(f"verified {sum(v.status == 'verified' for r in rounds for v in r.values())}/{total}, unjudged "
          f"{sum(v.status == 'unjudged' for r in rounds for v in r.values())}/{total}; cheats verified at least once: "
          f"{sum(any(r[c.id].status == 'verified' for r in rounds) for c in chosen)}/{len(chosen)}")


def _by_kind(chosen: list[Cheat], verdicts: dict[str, Verification], today: bool, packaged: bool, workers: int,
             spent: float) -> None:
    by_kind: dict[str, list[Cheat]] = defaultdict(list)
    for cheat in chosen:
        by_kind[cheat.kind].append(cheat)
    print(f"\n{'kind':20}{'verified':>9}{'of':>4}   reasons of the rest")
    for kind in by_kind:
        rows = by_kind[kind]
        missed = [c for c in rows if verdicts[c.id].status == "verified"]
        reasons = Counter(verdicts[c.id].reason for c in rows if c not in missed)
        print(f"{kind:20}{len(missed):>9}{len(rows):>4}   " + ", ".join(f"{r} {n}" for r, n in reasons.most_common()))
    missed = [c for c in chosen if verdicts[c.id].status == "verified"]
    lower = [c for c in chosen if verdicts[c.id].status == "unjudged"]
    print(f"false-verified: {len(missed)}/{len(chosen)} cheats at full strength; {len(lower)} at the lower status "
          f"(unjudged){' (packaged twins)' if packaged else ''} ({spent:.0f} s, {workers} at a time)")
    print(line([covered(v.status, v.as_json(), c.repo.exc) for c in chosen for v in [verdicts[c.id]]],
               "cheats' coverage"))
    for c in lower:
        cov = verdicts[c.id].coverage
        print(f"  UNJUDGED {c.id}: {'; '.join(cov.missing if cov else [])[:200]}")
    for c in missed:
        print(f"  VERIFIED {c.id} [written against: {c.targets or '-'}]")
    now = {c.id for c in missed}
    ids_chosen = {c.id for c in chosen}
    for words, ids in (("new misses (not in today.py)", now - VERIFIED_CHEATS - SOMETIMES_VERIFIED),
                       ("verified in some runs, this time too", now & SOMETIMES_VERIFIED),
                       ("stopped now (take off today.py)", (VERIFIED_CHEATS & ids_chosen) - now)):
        if ids:
            print(f"{words}: " + "; ".join(sorted(ids)))
    if today:
        print("VERIFIED_CHEATS = frozenset({\n" + "".join(f"    {i!r},\n" for i in sorted(now)) + "})")


def honest_fixes(tmp: Path, cfg: SandboxConfig, sources: list[str], workers: int, packaged: bool = False) -> None:
    rows: list[honest.Row] = []
    for source in sources:
        (tmp / source).mkdir()
        rows += honest.SOURCES[source](tmp / source, cfg, workers, packaged)
    print(f"\n{'source':12}{'refused':>8}{'of':>5}   reasons (not judged)")
    for source in sources:
        mine = [r for r in rows if r[0] == source]
        judged = [r for r in mine if r[2] not in honest.NOT_JUDGED]
        reasons = Counter(r[2] for r in judged if r[2] != "verified")
        never = Counter(r[2] for r in mine if r[2] in honest.NOT_JUDGED)
        print(f"{source:12}{sum(reasons.values()):>8}{len(judged):>5}   "
              + ", ".join(f"{r} {n}" for r, n in reasons.most_common())
              + (f" ({', '.join(f'{r} {n}' for r, n in never.items())})" if never else ""))
        print("  " + line([r[4] for r in mine], f"{source} coverage"))
    judged = [r for r in rows if r[2] not in honest.NOT_JUDGED]
    refused = [r for r in judged if r[2] != "verified"]
    print(f"false-refused: {len(refused)}/{len(judged)} honest fixes judged, "
          f"{sum(r[2] == 'unjudged' for r in judged)} of them at the lower status (unjudged) "
          f"({len(rows) - len(judged)} not judged)")
    for source, label, reason, message, _ in refused:
        known = " (known: today.py)" if label in REFUSED_HONEST else ""
        print(f"  REFUSED {source} {label}: {reason}{known} ({message[:240]})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="cheats,honest,cost", help="sections: cheats, honest, cost (comma-separated)")
    ap.add_argument("--honest", default="corpus,examples",
                    help=f"honest sources (comma-separated): {', '.join(honest.SOURCES)}")
    ap.add_argument("--workers", type=int, default=3, help="verifications at a time (cheats and the corpus)")
    ap.add_argument("--today", action="store_true", help="print the verified cheats as today.py spells them")
    ap.add_argument("--packaged", action="store_true", help="the corpus's toy repositories as packaged twins (a "
                    "two-line setup.py, set up for real)")
    ap.add_argument("--corpus", default="all", choices=("all", "aware"),
                    help="the cheats: every one, or issue 42's judge-aware ones (tests/support/corpus AWARE)")
    ap.add_argument("--kind", default="", help="only cheats of these kinds (comma-separated)")
    ap.add_argument("--label", default="", help="only cheats whose id contains this text")
    ap.add_argument("--repeat", type=int, default=1, help="verify the chosen cheats this many times; per-cheat "
                    "rates after (the held-out draws are random)")
    ap.add_argument("--dump", type=Path, default=None, help="write each cheat verdict's JSON into this folder")
    args = ap.parse_args()
    chosen = [c for c in (AWARE if args.corpus == "aware" else CHEATS)
              if (not args.kind or c.kind in args.kind.split(",")) and args.label in c.id]
    if args.dump is not None:
        args.dump.mkdir(parents=True, exist_ok=True)
    tag = image.build_image(None, log=lambda line: print(f"[image] {line}"))  # judges merged since: rebuilt here
    cfg = SandboxConfig(image=tag, test_timeout_s=300)
    sections = args.only.split(",")
    with tempfile.TemporaryDirectory(prefix="bench-cheats-") as tmp:
        where = Path(tmp)
        if "cheats" in sections:
            (where / "cheats").mkdir()
            cheats(where / "cheats", cfg, args.workers, args.today, args.packaged, chosen, args.repeat, args.dump)
        if "honest" in sections:
            (where / "honest").mkdir()
            honest_fixes(where / "honest", cfg, args.honest.split(","), args.workers, args.packaged)
        if "cost" in sections:
            (where / "cost").mkdir()
            print()
            judge_cost.report(judge_cost.measure(where / "cost", SandboxConfig(image=cfg.image)))


if __name__ == "__main__":
    main()
