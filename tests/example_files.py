"""The cluster configs and traces shipped under examples/, for the tests that go through all of them.
Live job files (examples/live/*/jobs/) are jobs, not cluster configs, and are left out; so are the
queue maps and sweep grids of studies (examples/studies/*/queue-map*.yaml and grid*.yaml); the studies'
cluster configs stay (they load on their own, though their traces live outside the repository, in shared/)."""

from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def example_configs() -> list[Path]:
    return sorted(p for p in EXAMPLES.rglob("*.yaml") if "jobs" not in p.parts
                  and not p.name.startswith(("queue-map", "grid")))


def example_traces() -> list[Path]:
    return sorted(p for p in EXAMPLES.rglob("*.jsonl") if "studies" not in p.parts)
