"""Arms of this family are added by the catalogue work; none yet."""

from __future__ import annotations

from typing import List

from wakelab.arms.base import Arm

ARMS: List[Arm] = []
