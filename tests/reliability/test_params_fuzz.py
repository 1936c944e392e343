"""Property test over every registered parameter model: hostile input is refused with a clear message.

For any mix of defaults, in-range values and hostile values (NaN, ±inf, None, booleans, text, huge
numbers, 100k-character strings, wrong containers, unknown fields), ``validate`` either

* raises ``ParamError`` naming at least one field, without echoing more than 80 characters of input, or
* returns a model whose every float is finite and whose float fields received no hostile value.

No other exception may escape. ``make fuzz`` runs 200 examples per model.
"""
from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engines.common.params import ParamError, validate
from tests.reliability.fuzz import FUZZ, HOSTILE, echoes_too_much
from tests.reliability.models import all_models, bounds, finite_everywhere, kind, literal_choices

MODELS = all_models()


def _plausible(field):
    """A value of the right type, sometimes in range, sometimes just outside."""
    k, b = kind(field.annotation), bounds(field)
    if k in ("float", "int"):
        lo = b.get("ge", b.get("gt", -1e6))
        hi = b.get("le", b.get("lt", 1e6))
        span = (hi - lo) or 1.0
        vals = st.floats(min_value=float(lo) - 0.1 * span, max_value=float(hi) + 0.1 * span, allow_nan=False)
        return vals.map(round) if k == "int" else vals
    if k == "bool":
        return st.booleans()
    if k == "literal":
        return st.sampled_from(literal_choices(field.annotation))
    if k == "str":
        return st.text(max_size=int(b.get("max_length", 50)) + 5)
    return st.nothing()


def _draw_params(model):
    fields = list(model.model_fields.items())

    @st.composite
    def strat(draw):
        params, hostile = {}, set()
        for name, f in fields:
            choice = draw(st.sampled_from(["omit", "omit", "plausible", "hostile"]))
            if choice == "plausible":
                v = draw(st.one_of(_plausible(f), HOSTILE))
            elif choice == "hostile":
                v = draw(HOSTILE)
            else:
                continue
            params[name] = v
            hostile.add(name)
        if draw(st.integers(0, 9)) == 0:
            params[draw(st.sampled_from(["unknown", "x" * 500, "__class__"]))] = 1
        return params

    return strat()


def _non_finite_or_wrong(v, k) -> bool:
    if k != "float":
        return False
    if v is None:
        return False  # allowed only when the field is Optional: the model decides
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return True
    return not math.isfinite(v)


@pytest.mark.parametrize("name,model", MODELS, ids=[n for n, _ in MODELS])
def test_hostile_params_are_refused_clearly(name, model):
    @FUZZ
    @given(_draw_params(model))
    def prop(params):
        try:
            out = validate(model, params)
        except ParamError as e:
            msg = str(e)
            assert msg.startswith(f"invalid parameters for {model.__name__}: "), msg[:300]
            assert not echoes_too_much(msg, params), f"message echoes the input: {msg[:300]}"
            assert len(msg) < 4000
            return
        dumped = out.model_dump(mode="python")
        assert finite_everywhere(dumped), f"{name} accepted a non-finite float: {params!r:.300}"
        for fname, f in model.model_fields.items():
            if fname in params:
                assert not _non_finite_or_wrong(params[fname], kind(f.annotation)), \
                    f"{name} accepted {fname}={params[fname]!r:.80}"

    prop()


@pytest.mark.parametrize("name,model", MODELS, ids=[n for n, _ in MODELS])
def test_every_float_field_refuses_non_numbers(name, model):
    for fname, f in model.model_fields.items():
        if kind(f.annotation) != "float":
            continue
        for bad in (float("nan"), float("inf"), float("-inf"), True, "1.5", [1.0], 1e308):
            with pytest.raises(ParamError, match=fname):
                validate(model, {fname: bad})
