"""Steps of the running capture: ``gpuprofile.step()`` and optimizer steps, counted once.

Only one capture runs at a time (torch's profiler is process-wide), so the running capture's
counter is module state. While it runs, a global optimizer post-hook counts every
``optimizer.step()``; once the user calls ``gpuprofile.step()`` the hook goes silent, so a loop
that does both counts each step once. The first explicit call claims the step the hook has just
counted (an explicit call after ``optimizer.step()`` closes that same step); this assumes one
optimizer step per loop iteration before the explicit call.

torch is imported only when a capture installs the hook, so ``gpuprofile.step()`` stays cheap.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class StepCounter:
    """Counts the steps of one capture; ``advance`` (the profiler's step) runs at each one."""

    def __init__(
        self,
        advance: Callable[[], None] | None = None,
        on_step: Callable[[int], None] | None = None,
    ) -> None:
        self.count = 0
        self.explicit = False
        self._advance = advance
        self._on_step = on_step
        self._hook_counted = False
        self._lock = threading.RLock()

    def mark(self, *, explicit: bool) -> int:
        with self._lock:
            if explicit and not self.explicit:
                self.explicit = True
                if self._hook_counted:
                    # This call closes the step the optimizer hook has just counted.
                    return self.count
            elif not explicit:
                if self.explicit:
                    return self.count
                self._hook_counted = True
            self.count += 1
            count = self.count
            try:
                if self._advance is not None:
                    self._advance()
            finally:
                # Counted even when the profiler's step raised (an interrupt held until it
                # was done): the live count and the profile's must agree.
                if self._on_step is not None:
                    self._on_step(count)
        return count


_active: StepCounter | None = None
_hook: Any = None
_state_lock = threading.Lock()


def step() -> int:
    """Mark a step of the running capture; returns the steps counted so far (0 when no capture
    runs, so the call can stay in code that is not always profiled)."""
    counter = _active
    return counter.mark(explicit=True) if counter is not None else 0


def begin(counter: StepCounter) -> None:
    """Make ``counter`` the running capture's and count optimizer steps into it."""
    global _active, _hook
    from torch.optim.optimizer import register_optimizer_step_post_hook

    with _state_lock:
        if _active is not None:
            raise RuntimeError("a capture is already counting steps")
        _active = counter
        _hook = register_optimizer_step_post_hook(_optimizer_stepped)


def end() -> None:
    """The capture ended: no counter, no hook. Safe to call twice."""
    global _active, _hook
    with _state_lock:
        _active = None
        if _hook is not None:
            _hook.remove()
            _hook = None


def _optimizer_stepped(_optimizer: Any, _args: Any, _kwargs: Any) -> None:
    counter = _active
    if counter is not None:
        counter.mark(explicit=False)
