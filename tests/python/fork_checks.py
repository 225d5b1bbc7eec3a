"""Checks run in a forked child, which reports through its exit code only."""

from typing import Callable

import bale


def refused_after_fork(ops: list[Callable[[], object]]) -> int:
    """0 when every op raises ClosedError telling to open the store again;
    else 20 + i for op i that worked, 40 + i for one that failed otherwise."""
    for i, op in enumerate(ops):
        try:
            op()
            return 20 + i
        except bale.ClosedError as e:
            if "open the store again" not in str(e):
                return 40 + i
    return 0
