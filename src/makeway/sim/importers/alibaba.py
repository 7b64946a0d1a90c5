"""Alibaba GPU-sharing cluster trace v2023 (``openb_pod_list_*.csv`` and ``openb_node_list_*.csv``).

Pods: ``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
deletion_time,scheduled_time`` (seconds from trace start).

Mapping, and why:

* ``id`` = pod name; ``submit`` = creation time; ``duration`` = deletion - scheduled time, or
  deletion - creation for pods never scheduled (phase Pending at the end; flagged
  ``settings.never_scheduled``), their observed lifetime being the only demand we know.
* Resources per pod (one task): ``cpu`` = cpu_milli / 1000, ``memory`` = memory_mib MiB in bytes,
  ``gpu`` = num_gpu x gpu_milli / 1000. GPU sharing is thus modelled as a fractional scalar
  (0.46 of a GPU); the fraction of *one* device is kept in ``settings.gpu_milli`` and the device
  count in ``settings.num_gpu`` for models that want to place per device.
* QoS -> ``priority`` (``QOS_PRIORITY``: Guaranteed 3 > LS 2 > Burstable 1 > BE 0, latency-
  sensitive above best-effort) and ``queue`` = the QoS class in lower case (the trace has no
  tenants, the classes are the natural groups). ``settings.phase`` keeps the observed phase.
* Rows are mostly but not fully ordered by creation: compact tuples are sorted (8k rows).

The cluster (``cluster``) comes from the node list beside the pod list (``*node_list*.csv``):
one node per row with cpu, memory, gpu and ``labels.model`` (GPU model, ``CPU`` when empty).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from makeway.config import MAX_TIME
from makeway.sim.importers._common import ImportStats, Reporter, finite, numbered_lines, num, workload, wrong_width

POD_HEADER = ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
              "creation_time", "deletion_time", "scheduled_time"]
NODE_HEADER = ["sn", "cpu_milli", "memory_mib", "gpu", "model"]
QOS_PRIORITY = {"Guaranteed": 3, "LS": 2, "Burstable": 1, "BE": 0}
MIB = 2**20

Row = tuple[float, int, str, int, int, int, int, str, str, float, float | None]


def _rows(path: Path, rep: Reporter) -> Iterator[Row]:
    for lineno, line in numbered_lines(path, rep):
        if lineno == 1 and line.startswith("name,"):
            if line.split(",") != POD_HEADER:
                rep.note(1, f"unexpected header {line!r}; assuming the v2023 pod columns")
            continue
        if not line.strip():
            continue
        c = line.split(",")
        if len(c) != len(POD_HEADER):
            rep.bad(lineno, wrong_width(len(POD_HEADER), len(c)))
            continue
        try:
            cpu, mem, ngpu, gmilli = int(c[1]), int(c[2]), int(c[3]), int(c[4])
            created, deleted = float(c[8]), float(c[9])
            sched = float(c[10]) if c[10] else None
        except ValueError:
            rep.bad(lineno, _bad_number(c))
            continue
        if not finite(created, deleted, sched) or max(created, deleted) > MAX_TIME:
            rep.bad(lineno, f"pod {c[0]}: creation, deletion or scheduled time is not a number in 0..{MAX_TIME:g}")
            continue
        if min(cpu, mem, ngpu, gmilli) < 0 or created < 0 or deleted < (sched if sched is not None else created):
            rep.bad(lineno, f"pod {c[0]}: negative request or deletion before creation/scheduling")
            continue
        if c[6] not in QOS_PRIORITY:
            rep.bad(lineno, f"pod {c[0]}: unknown qos {c[6]!r} (known: {', '.join(QOS_PRIORITY)})")
            continue
        yield created, lineno, c[0], cpu, mem, ngpu, gmilli, c[6], c[7], deleted, sched


_WHOLE = (1, 2, 3, 4)  # cpu_milli, memory_mib, num_gpu, gpu_milli
_TIMES = (8, 9, 10)  # creation, deletion, scheduled (may be empty)


def _bad_number(c: list[str]) -> str:
    """Which numeric column of a row failed to parse, and with what, so the user can find it."""
    for i in _WHOLE + _TIMES:
        value = c[i]
        if i == 10 and not value:
            continue
        try:
            float(value)
        except ValueError:
            return f"column {POD_HEADER[i]}: {value!r} is not a number"
        if i in _WHOLE:
            try:
                int(value)
            except ValueError:
                return f"column {POD_HEADER[i]}: {value!r} is not a whole number"
    return "a numeric column is not a number"


def read(path: Path, *, strict: bool = False, stats: ImportStats | None = None) -> Iterator[dict[str, Any]]:
    stats = stats if stats is not None else ImportStats()
    rep = Reporter(path, strict, stats)
    for created, _, name, cpu, mem, ngpu, gmilli, qos, phase, deleted, sched in sorted(_rows(path, rep)):
        start = sched if sched is not None else created
        settings: dict[str, Any] = {"phase": phase}
        if ngpu:
            settings["num_gpu"] = ngpu
            settings["gpu_milli"] = gmilli
        if sched is None:
            settings["never_scheduled"] = True
        res: dict[str, Any] = {"cpu": num(cpu / 1000), "memory": mem * MIB}
        if ngpu and gmilli:
            res["gpu"] = num(round(ngpu * gmilli / 1000, 3))
        stats.records += 1
        yield workload(name, qos.lower(), created, deleted - start, [{"count": 1, "resources": res}],
                       priority=QOS_PRIORITY[qos], settings=settings)


def node_list(path: Path) -> Path | None:
    """The node list that goes with a pod list: the path itself, or a ``*node_list*.csv`` beside it."""
    if "node_list" in path.name:
        return path
    found = sorted(path.parent.glob("*node_list*.csv"))
    return found[0] if found else None


def cluster(path: Path) -> dict[str, Any] | None:
    nodes_file = node_list(path)
    if nodes_file is None:
        return None
    nodes: list[dict[str, Any]] = []
    for lineno, line in numbered_lines(nodes_file):
        if lineno == 1 and line.startswith("sn,"):
            continue
        c = line.split(",")
        if len(c) != len(NODE_HEADER):
            continue
        try:
            cap = {"cpu": num(int(c[1]) / 1000), "memory": int(c[2]) * MIB, "gpu": int(c[3])}
        except ValueError:
            continue
        nodes.append({"name": c[0], "capacity": cap, "labels": {"model": c[4].strip() or "CPU"}})
    if not nodes:
        return None
    queues: dict[str, Any] = {"root": {}}
    for qos in sorted(QOS_PRIORITY, key=lambda q: -QOS_PRIORITY[q]):
        queues[qos.lower()] = {"parent": "root", "priority": QOS_PRIORITY[qos]}
    return {"name": "alibaba-gpu-v2023", "resources": ["cpu", "memory", "gpu"], "nodes": nodes,
            "queues": queues, "preemption": {"model": "none", "settings": {}}}
