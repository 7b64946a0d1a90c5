"""Copy the visible conformance cases from ``../shared/conformance`` into this folder.

``../shared`` is where new cases are written; this copy lets a clone run them alone. Run from the
repository root: ``python tests/conformance/sync.py`` (``--check`` only lists what differs).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = (HERE.parents[1] / ".." / "shared" / "conformance").resolve()
# every pack in ../shared with a cases/ folder, and every folder already copied here
FOLDERS = tuple(sorted({d.name for base in (SHARED, HERE) if base.is_dir() for d in base.iterdir()
                        if (d / "cases").is_dir()}))
KEPT = ("README.md", "SKIPPED.md")


def wanted() -> dict[Path, Path]:
    """Repository path -> shared path, for every file the copy should hold."""
    out: dict[Path, Path] = {}
    for folder in FOLDERS:
        src = SHARED / folder
        for p in sorted((src / "cases").rglob("*.json")):
            out[HERE / folder / p.relative_to(src)] = p
        for name in KEPT:
            if (src / name).is_file():
                out[HERE / folder / name] = src / name
    return out


def differences() -> list[str]:
    """Files missing here, differing, or here but gone from ../shared (repository-relative)."""
    files = wanted()
    out = [f"{'missing' if not dst.is_file() else 'differs'}: {dst.relative_to(HERE)}"
           for dst, src in files.items() if not dst.is_file() or dst.read_bytes() != src.read_bytes()]
    for folder in FOLDERS:
        for p in sorted((HERE / folder).rglob("*")):
            if p.is_file() and p not in files:
                out.append(f"not in shared: {p.relative_to(HERE)}")
    return out


def sync() -> int:
    files = wanted()
    for dst, src in files.items():
        if not dst.is_file() or dst.read_bytes() != src.read_bytes():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
    stale = [p for folder in FOLDERS for p in (HERE / folder).rglob("*") if p.is_file() and p not in files]
    for p in stale:
        p.unlink()
    return len(files)


if __name__ == "__main__":
    if not SHARED.is_dir():
        sys.exit(f"{SHARED}: not found (../shared beside the checkout)")
    if "--check" in sys.argv[1:]:
        diff = differences()
        print("\n".join(diff) or "in sync")
        sys.exit(1 if diff else 0)
    print(f"{sync()} files in sync with {SHARED}")
