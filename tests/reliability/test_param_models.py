"""Static checks of every registered parameter model: floats bounded and finite, texts and lists capped."""
from __future__ import annotations

import pytest

from tests.reliability.models import all_models, bounds, kind, literal_choices, item_type

MODELS = all_models()


@pytest.mark.parametrize("name,model", MODELS, ids=[n for n, _ in MODELS])
def test_every_field_is_bounded(name, model):
    problems = []
    for fname, f in model.model_fields.items():
        k, b = kind(f.annotation), bounds(f)
        if k in ("float", "int"):
            if not ({"ge", "gt"} & b.keys() and {"le", "lt"} & b.keys()):
                problems.append(f"{fname}: {k} needs a lower and an upper bound (Field(ge=..., le=...))")
        elif k == "str":
            if "max_length" not in b and "pattern" not in b:
                problems.append(f"{fname}: text needs max_length (or a pattern)")
        elif k == "container":
            if "max_length" not in b and not literal_choices(item_type(f.annotation)):
                problems.append(f"{fname}: list/tuple/dict needs max_length")
    assert not problems, f"{name} ({model.__name__}): " + "; ".join(problems)


@pytest.mark.parametrize("name,model", MODELS, ids=[n for n, _ in MODELS])
def test_floats_are_finite(name, model):
    assert model.model_config.get("allow_inf_nan") is False, f"{name}: derive from engines.common.params.Params"
