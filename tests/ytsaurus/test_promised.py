"""The promised guarantee fair share (``compute_promised_guarantee_fair_share``), against YTsaurus's own
unit test ``TFairShareUpdateTest.TestPromisedGuaranteeFairShare`` (yt/yt/library/vector_hdrf/unittests/
fair_share_update_ut.cpp; values restated here, not copied): only the uppermost asking pool counts (a
nested pool's flag is ignored), elements outside it have a promised share of zero, and a subtree
whose operations have no demand is promised nothing."""

from __future__ import annotations

import copy

from makeway.conformance.ytsaurus import run_case

MB = 2**20
TOTAL = {"user_slots": 100, "cpu": 100, "memory": 100 * 1024 * MB}
SMALL = {"user_slots": 2, "cpu": 2, "memory": 20 * MB}


def pool(name, parent="<Root>", guarantee=None, promised=False):
    p = {"name": name, "parent": parent, "weight": 1.0, "strongGuarantee": {"cpu": guarantee} if guarantee else {}}
    if promised:
        p["computePromisedGuaranteeFairShare"] = True
    return p


def op(name, parent, demand):
    return {"id": name, "pool": parent, "weight": 1.0, "demand": demand, "allocations": [], "pendingAllocationCount": 1}


def cpu(**shares):
    return {k.replace("ROOT", "<Root>"): {"cpu": v} for k, v in shares.items()}


CASE = {
    "id": "ytsaurus/promised-guarantee-fair-share", "model": "ytsaurus-fair-share",
    "features": ["promised_guarantee_fair_share"], "tolerance": 1e-6,
    "input": {"totalResources": TOTAL, "config": {},
              "pools": [pool("poolA", guarantee=30, promised=True), pool("poolA1", "poolA", 10),
                        pool("poolA2", "poolA", promised=True), pool("poolA3", "poolA"), pool("poolB", guarantee=30)],
              "operations": [op("A1", "poolA1", TOTAL), op("A2", "poolA2", TOTAL), op("B", "poolB", TOTAL),
                             op("A3", "poolA3", SMALL)]},
    "expected": {
        "fairShare": cpu(A1=0.29, A2=0.19, A3=0.02, B=0.5, poolA=0.5, poolA1=0.29, poolA2=0.19, poolA3=0.02, poolB=0.5),
        "promisedGuaranteeFairShare": cpu(A1=0.19, A2=0.09, A3=0.02, B=0.0, poolA=0.3, poolA1=0.19, poolA2=0.09,
                                          poolA3=0.02, poolB=0.0, ROOT=0.0)},
}


def test_only_the_uppermost_pool_promises_and_the_rest_is_zero():
    r = run_case(CASE)
    assert r.ok, r


def test_a_subtree_without_demand_is_promised_nothing():
    case = copy.deepcopy(CASE)
    for o in case["input"]["operations"]:
        if o["pool"] != "poolB":
            o["demand"], o["pendingAllocationCount"] = {}, 0
    case["expected"] = {"promisedGuaranteeFairShare": cpu(A1=0.0, A2=0.0, A3=0.0, poolA=0.0, poolA1=0.0, poolA2=0.0,
                                                          poolA3=0.0, B=0.0)}
    r = run_case(case)
    assert r.ok, r
