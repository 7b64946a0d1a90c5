"""The cluster configs and traces shipped under examples/, for the tests that go through all of them.
Live job files (examples/live/*/jobs/) are jobs, not cluster configs, and are left out; so are the
studies (examples/studies/), whose configs replay real traces kept outside the repository (shared/)."""

from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def example_configs() -> list[Path]:
    return sorted(p for p in EXAMPLES.rglob("*.yaml") if "jobs" not in p.parts and "studies" not in p.parts)


def example_traces() -> list[Path]:
    return sorted(p for p in EXAMPLES.rglob("*.jsonl") if "studies" not in p.parts)
