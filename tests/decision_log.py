"""Decision logs for tests that compare two runs decision by decision (golden digests, and the
cache-equivalence tests of each model): one line per decision with everything it carries."""

import hashlib

from makeway.core.decisions import Note, Preempt, Start


def record(log: list[str], decisions, now: float) -> None:
    for d in decisions:
        if isinstance(d, Start):
            log.append(f"{now!r} S {d.task} {d.node}")
        elif isinstance(d, Preempt):
            r = d.reason
            log.append(f"{now!r} P {d.allocation} {r.rule} {r.preemptor} {sorted(r.values.items())!r} {r.detail}")
        elif isinstance(d, Note):
            log.append(f"{now!r} N {d.kind} {d.subject} {d.message} {sorted(d.values.items())!r}")


def digest(log: list[str]) -> str:
    return hashlib.sha256("\n".join(log).encode()).hexdigest()[:16]


class RecordsSchedule:
    """Mixed in before a model class: every decision its ``schedule`` returns goes to ``self.log``."""

    def __init__(self, settings=None):
        super().__init__(settings)
        self.log: list[str] = []

    def schedule(self, state, now):
        out = super().schedule(state, now)
        record(self.log, out, now)
        return out
