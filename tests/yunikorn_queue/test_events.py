"""YuniKorn's preemption events are recorded and checkable in conformance cases.

The base is ``try-preemption-basic`` (the same fixture as YuniKorn's ``TestTryPreemption_SendEvent``):
the victim ``alloc1`` of ``app-1`` must receive "Preempted by alloc3 from application app-2 in
root.parent.child2", naming the preemptor's queue, not the victim's.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from makeway.conformance.yunikorn_preemption import run_case

CASE = Path(__file__).resolve().parents[1] / "conformance" / "yunikorn" / "cases" / "try-preemption-basic.json"
MESSAGE = "Preempted by alloc3 from application app-2 in root.parent.child2"


def _with_events(events) -> dict:
    case = copy.deepcopy(json.loads(CASE.read_text()))
    case["expected"]["events"] = events
    return case


@pytest.mark.parametrize("events", [
    [{"objectID": "alloc1", "referenceID": "app-1", "type": "REQUEST", "message": MESSAGE}],
    [{"ObjectID": "alloc1", "ReferenceID": "app-1", "Type": "EventRecord_REQUEST",
      "EventChangeType": "EventRecord_NONE", "EventChangeDetail": "EventRecord_DETAILS_NONE", "Message": MESSAGE}],
    [{"message": MESSAGE, "resource": {"first": 5, "pods": 1}}],
    [MESSAGE],
    {"count": 1, "messages": [MESSAGE]},
    1,
], ids=["records", "go-field-names", "resource", "messages", "count-and-messages", "count"])
def test_the_victim_gets_the_preemptors_event(events):
    res = run_case(_with_events(events))
    assert res.ok, res.got


@pytest.mark.parametrize("events", [
    [{"objectID": "alloc1", "message": "Preempted by alloc3 from application app-2 in root.parent.child1"}],
    [{"objectID": "alloc2", "message": MESSAGE}],
    [{"referenceID": "app-2", "message": MESSAGE}],
    [{"message": MESSAGE, "resource": {"first": 4, "pods": 1}}],
    [MESSAGE, MESSAGE],
    2,
    [{"objectID": "alloc1", "colour": "red"}],
], ids=["victim-queue-named", "wrong-victim", "preemptor-app-as-reference", "resource", "two", "count", "unknown-field"])
def test_a_wrong_event_fails_the_case(events):
    assert not run_case(_with_events(events)).ok


def test_no_event_when_preemption_fails():
    case = _with_events(0)
    case["input"]["predicates"]["preemption"][0]["success"] = False
    res = run_case(case)
    assert res.got["events"] == 0


def test_every_simulated_preemption_carries_yunikorns_event_message():
    """The simulator records on each preemption the message YuniKorn sends the victim: the ask, its
    application and the ask's queue; quota enforcement names the leaf that sheds."""
    from tests.yunikorn_queue import scenarios as S

    for name in ("example", "flat-4-quota"):
        preempts = [e["reason"] for e in S.run(name) if e["kind"] == "preempt"]
        assert preempts
        for r in preempts:
            v = r["values"]
            if r["rule"].startswith("quota"):
                assert v["event"] == f"Preempted by Quota change enforcement process in {v['leaf']}"
            else:
                app = r["preemptor"].split("/")[0]
                assert v["event"] == f"Preempted by {r['preemptor']} from application {app} in {v['ask_queue']}"
