"""Small builders shared by simulator tests."""

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState


def cluster(nodes=2, cpu=4, queues=("a", "b")) -> ClusterState:
    qs = [Queue("root")] + [Queue(q, "root") for q in queues]
    return ClusterState(["cpu"], qs, [Node(f"n{i}", {"cpu": cpu}) for i in range(nodes)])


def job(id, queue="a", submit=0.0, duration=10.0, count=1, cpu=1, priority=0, grace=0.0, requested=None):
    return Workload(id, queue, submit, duration, (TaskGroup(count, {"cpu": cpu}),), priority,
                    grace=grace, requested_duration=requested)
