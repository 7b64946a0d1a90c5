"""The registry is the one place a model is named: every part it names must resolve."""

import pytest

from makeway.core.policy import PreemptionModel
from makeway.policies.settings_common import Settings
from makeway.registry import MODELS, case_loader, case_models, entries, importers, load_model, resolve


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_name_loads_its_policy(name):
    model = load_model(name, {})
    assert isinstance(model, PreemptionModel)
    assert type(model) is resolve(MODELS[name].policy)
    assert all(issubclass(resolve(t), Settings) for t in MODELS[name].settings)


def test_aliases_share_one_entry():
    assert MODELS["none"] is MODELS["first-fit"] is MODELS["fifo"]
    assert len(entries()) == len({e.policy for e in MODELS.values()})


def test_case_models_and_importers_resolve():
    kinds = case_models()
    assert len(kinds) == len(set(kinds)), "two models claim one case kind"
    for kind in kinds:
        assert callable(case_loader(kind))
    assert case_loader("no-such-kind") is None
    assert set(importers()) == {"kueue", "yunikorn", "ytsaurus", "symphony"}
    assert all(callable(resolve(t)) for t in importers().values())


def test_unknown_name_says_what_is_known():
    with pytest.raises(KeyError, match="known: .*kueue"):
        load_model("volcano")
