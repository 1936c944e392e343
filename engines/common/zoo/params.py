"""Parameters of the zoo's build job (pydantic only: the landing page validates them without torch)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from engines.common.params import Params

ZooName = Literal["clip", "vae", "t2i", "judge_object", "judge_style"]


class ZooBuildParams(Params):
    name: ZooName = Field("clip", description="the zoo model to train and cache (the profile's configuration)")
    force: bool = Field(False, description="rebuild even when a cached copy exists")
