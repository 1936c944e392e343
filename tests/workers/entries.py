"""Entry points used only by the worker tests."""
from engines.common.params import Params


class BoomParams(Params):
    message: str = "boom"


def boom(params: BoomParams, ctx=None):
    ctx.progress(0.5, "about to fail")
    raise RuntimeError(params.message)
