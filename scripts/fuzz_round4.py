"""The fourth hostile round (issue 34): generated cases over SQL text, URLs and secrets,
console/Actions output, Markdown sinks and pyproject tables, each a real ``audit`` command in
a subprocess (tests/fuzz/round4.py says what each outcome means). Prints the counts by
surface x outcome and writes every non-clean case (input and evidence) to ``--out``.

    PYTHONPATH=src python scripts/fuzz_round4.py --out fuzz4.json            # the whole round
    PYTHONPATH=src python scripts/fuzz_round4.py --surface sql --limit 20    # a sample

Exit 0 when every case is clean (or skipped), 1 otherwise.
"""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fuzz"))

import round4  # noqa: E402


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _run(cases: list[round4.Case], root: Path, args: argparse.Namespace) -> list[round4.Result]:
    with round4.postgres_server() as (pg, why):
        if pg is None:
            print(f"PostgreSQL cases skipped: {why}", file=sys.stderr)
        rnd = round4.Round.create(root, args.seed, pg, why)
        done = [0]

        def progress(result: round4.Result, index: int) -> None:
            done[0] += 1
            if result.outcome != "clean":
                first = next(iter(result.evidence.values()), [""])[0]
                print(
                    f"[{done[0]}/{len(cases)}] {result.case.id}: {result.outcome}: {first[:160]}",
                    file=sys.stderr,
                    flush=True,
                )

        results = round4.run_round(
            cases, rnd, jobs=args.jobs, timeout=args.timeout, keep=args.keep, progress=progress
        )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=4, help="seed of the generator (default 4)")
    parser.add_argument(
        "--surface",
        action="append",
        choices=round4.SURFACES,
        help="only this surface (repeat for more; default: all)",
    )
    parser.add_argument("--limit", type=int, help="a seeded sample of N cases per surface")
    parser.add_argument("--jobs", type=int, default=2, help="cases run at once (default 2)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=round4.TIMEOUT_S,
        help="seconds per command before it counts as a hang",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("fuzz_round4.json"), help="JSON of every non-clean case"
    )
    parser.add_argument("--keep", action="store_true", help="keep each case's folder")
    parser.add_argument("--match", help="only the cases whose id matches this regex")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    args = parser.parse_args(argv)

    cases = round4.generate(args.seed, args.surface or round4.SURFACES, args.limit)
    if args.match:
        cases = [c for c in cases if re.search(args.match, c.id)]
    if args.list:
        for case in cases:
            print(case.id)
        return 0
    # Ctrl-C and SIGTERM (also in the background, where SIGINT starts ignored) end the round
    # through its cleanup: the cases not started are dropped, the PostgreSQL cluster stopped
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    root = round4.round_root()
    started = time.monotonic()
    try:
        results = _run(cases, root, args)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    seconds = time.monotonic() - started
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    header = {
        "seed": args.seed,
        "commit": commit,
        "seconds": round(seconds),
        "cases": len(results),
        "surfaces": args.surface or list(round4.SURFACES),
        "limit": args.limit,
    }
    round4.write_failures(results, args.out, header)
    print(round4.table(results))
    print(
        f"\n{len(results)} cases in {seconds:.0f} s (seed {args.seed}, commit {commit}); "
        f"non-clean cases: {args.out}"
    )
    return 0 if all(r.outcome in ("clean", "skipped") for r in results) else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
