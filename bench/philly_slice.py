"""Write the Philly week-4 slice used by the acceptance runs (docs/studies.md): the rows of
``philly.csv`` whose timestamp falls in days 21-28 after the trace's first job, header kept.

    python bench/philly_slice.py ../shared/traces/gpu/philly/philly.csv philly-week3.csv
"""

from __future__ import annotations

import csv
import sys
from datetime import datetime, timedelta

FORMAT = "%Y-%m-%d %H:%M:%S"


def week_slice(src: str, dst: str, first_day: int = 21, last_day: int = 28) -> int:
    with open(src, newline="") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    body = [r for r in rows[1:] if r]
    col = header.index("timestamp")
    start = min(datetime.strptime(r[col], FORMAT) for r in body)
    lo, hi = start + timedelta(days=first_day), start + timedelta(days=last_day)
    kept = [r for r in body if lo <= datetime.strptime(r[col], FORMAT) < hi]
    with open(dst, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(kept)
    return len(kept)


if __name__ == "__main__":
    print(week_slice(sys.argv[1], sys.argv[2]), "jobs")
