"""Application profile importer: consumers -> queues, session types -> queue settings, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from makeway.adapters.symphony import import_files
from makeway.config import build_state, parse_config
from makeway.errors import ConfigError
from makeway.policies.symphony.model import SymphonyModel, session_settings

from .helpers import session

DATA = Path(__file__).parent / "data"


def test_profiles_become_a_consumer_tree():
    config, warnings = import_files([DATA / "risk-analytics.xml", DATA / "pricing-grid.xml"])
    cfg = parse_config(config, "import")
    assert cfg.preemption.model == "symphony"
    assert cfg.queues["/Finance/Risk"].parent == "/Finance"
    assert cfg.queues["/Finance"].parent == "/"
    risk = cfg.queues["/Finance/Risk"].settings
    assert risk["preemptionScope"] == "LowerRankedSessions"
    assert risk["preemptionCriteria"] == "MostRecentTask"
    assert risk["sessionTypes"]["intraday-var"] == {"preemptive": True, "preemptionRank": 20, "priority": 1000}
    assert risk["sessionTypes"][""] == {"preemptive": False, "preemptionRank": 1, "priority": 1}
    pricing = cfg.queues["/Finance/Pricing"].settings
    assert pricing["preemptionScope"] == "LowerOrEqualRankedSessions"  # documented default
    assert "preemptionCriteria" not in pricing
    assert any("R_PriorityScheduling" in w for w in warnings)
    assert any("placeholder" in w for w in warnings)


def test_imported_session_types_drive_the_model():
    config, _ = import_files([DATA / "risk-analytics.xml"])
    state = build_state(parse_config(config, "import"))
    wl = session("s1", queue="/Finance/Risk", stype="what-if")
    ss = session_settings(state, wl)
    assert (ss.preemptive, ss.rank, ss.priority) == (True, 10, 100)
    model = SymphonyModel({})
    assert model.consumer_settings(state, "/Finance/Risk")[:2] == ("LowerRankedSessions", "MostRecentTask")


PROFILE = """<?xml version="1.0"?>
<Profile xmlns="http://www.platform.com/Symphony/Profile/Application">
  <Consumer applicationName="App" consumerId="{cid}" {extra}/>
  <SessionTypes>{types}</SessionTypes>
</Profile>
"""


@pytest.mark.parametrize("cid,extra,types,message", [
    ("/A/App", 'preemptionScope="Everybody"', "", "Profile/App: Consumer.preemptionScope"),
    ("/A/App", 'preemptionCriteria="Random"', "", "Profile/App: Consumer.preemptionCriteria"),
    ("App", "", "", "Profile/App: Consumer.consumerId: 'App' is not a consumer path"),
    ("/A/App", "", '<Type name="t" preemptionRank="0"/>', "SessionTypes.Type[t].preemptionRank: 0 is outside 1..10000"),
    ("/A/App", "", '<Type name="t" priority="high"/>', "SessionTypes.Type[t].priority: 'high' is not an integer"),
    ("/A/App", "", '<Type name="t" preemptive="maybe"/>', "SessionTypes.Type[t].preemptive: 'maybe' is not true or false"),
    ("/A/App", "", '<Type name="t"/><Type name="t"/>', "SessionTypes.Type[t].name: duplicate session type"),
])
def test_invalid_profiles_name_file_kind_and_field(tmp_path, cid, extra, types, message):
    f = tmp_path / "app.xml"
    f.write_text(PROFILE.format(cid=cid, extra=extra, types=types))
    with pytest.raises(ConfigError) as exc:
        import_files([f])
    assert str(exc.value).startswith(str(f) + ": ")
    assert message in str(exc.value)


def test_not_xml_and_wrong_root(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text("<Profile><Consumer")
    with pytest.raises(ConfigError, match="invalid XML"):
        import_files([bad])
    other = tmp_path / "other.xml"
    other.write_text("<Cluster/>")
    with pytest.raises(ConfigError, match="expected a <Profile> element"):
        import_files([other])


def test_one_application_per_leaf_consumer(tmp_path):
    a, b = tmp_path / "a.xml", tmp_path / "b.xml"
    a.write_text(PROFILE.format(cid="/A/App", extra="", types=""))
    b.write_text(PROFILE.format(cid="/A/App", extra="", types=""))
    with pytest.raises(ConfigError, match="already bound"):
        import_files([a, b])
    c = tmp_path / "c.xml"
    c.write_text(PROFILE.format(cid="/A/App/Sub", extra="", types=""))
    with pytest.raises(ConfigError, match="leaf consumer"):
        import_files([a, c])


def test_an_unknown_xml_encoding_is_a_named_error(tmp_path):
    """Found by the importer fuzz test: a damaged encoding in the XML declaration crashed with a LookupError."""
    p = tmp_path / "bad.xml"
    p.write_text('<?xml version="1.0" encoding="UTF-8Z"?>\n<Profile/>\n')
    with pytest.raises(ConfigError, match="invalid XML: unknown encoding"):
        import_files([p])
