"""The events YuniKorn sends when it preempts, as records a test or a report can check.

YuniKorn tells a victim's application why it lost its allocation with one event per victim
(``objects/events/ask_events.go``): "Preempted by <ask> from application <app> in <queue>" for
ask-triggered and required-node preemption, where the queue is the *preemptor's*; "Preempted by
Quota change enforcement process in <queue>" for quota enforcement, where the queue is the leaf
that sheds. A required-node ask that found no victim gets "Unschedulable request '<ask>' with
required node '<node>', no preemption victim found". Records use YuniKorn's ``EventRecord``
field names so a case written from its unit tests compares field by field.
"""

from __future__ import annotations

from typing import Any

Event = dict[str, Any]


def preempted_by_scheduler_message(ask_key: str, ask_app: str, ask_queue: str) -> str:
    return f"Preempted by {ask_key} from application {ask_app} in {ask_queue}"


def preempted_by_quota_change_message(queue: str) -> str:
    return f"Preempted by Quota change enforcement process in {queue}"


def preempted_by_scheduler(victim_key: str, victim_app: str, ask_key: str, ask_app: str, ask_queue: str,
                           resources: dict[str, Any]) -> Event:
    return _request(victim_key, victim_app, preempted_by_scheduler_message(ask_key, ask_app, ask_queue), resources)


def preempted_by_quota_change(victim_key: str, victim_app: str, queue: str, resources: dict[str, Any]) -> Event:
    return _request(victim_key, victim_app, preempted_by_quota_change_message(queue), resources)


def required_node_failed(ask_key: str, ask_app: str, node: str, resources: dict[str, Any]) -> Event:
    return _request(ask_key, ask_app,
                    f"Unschedulable request '{ask_key}' with required node '{node}', no preemption victim found",
                    resources)


def _request(object_id: str, reference_id: str, message: str, resources: dict[str, Any]) -> Event:
    return {"type": "REQUEST", "objectID": object_id, "referenceID": reference_id, "message": message,
            "changeType": "NONE", "changeDetail": "DETAILS_NONE", "resource": dict(resources)}
