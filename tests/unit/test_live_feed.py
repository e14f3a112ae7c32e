"""The live feed that carries a running cell's readings to its widget."""

from __future__ import annotations

import time
from types import SimpleNamespace

from gpuprofile.capture.sources import Reading
from gpuprofile.widget.live import LiveFeed

CPU = Reading("process CPU", "%", -1, 50.0)


def test_updates_are_spaced_and_stop_when_the_cell_ends() -> None:
    widget = SimpleNamespace(live={})
    feed = LiveFeed(widget, min_gap_s=0.05)
    feed.start()
    assert widget.live["running"] is True and widget.live["readings"] == []
    feed(1, [CPU], {"nvml": "no driver"})
    first = widget.live
    assert first["readings"] == [{"name": "process CPU", "unit": "%", "device": -1, "value": 50.0}]
    assert first["missing"] == {"nvml": "no driver"}
    feed(2, [Reading("process CPU", "%", -1, 60.0)], {})  # too soon: dropped
    assert widget.live is first
    time.sleep(0.06)
    feed(3, [Reading("process CPU", "%", -1, 70.0)], {})
    assert widget.live["readings"][0]["value"] == 70.0
    assert widget.live["elapsed_s"] >= first["elapsed_s"]
    feed.finish()
    assert widget.live["running"] is False and widget.live["readings"][0]["value"] == 70.0
    time.sleep(0.06)
    feed(4, [CPU], {})  # a late reading after the end changes nothing
    assert widget.live["running"] is False and widget.live["readings"][0]["value"] == 70.0


def test_steps_move_the_panel_and_keep_the_last_readings() -> None:
    widget = SimpleNamespace(live={})
    feed = LiveFeed(widget, min_gap_s=0.0)
    feed.start()
    feed(1, [CPU], {})
    feed.set_steps(3)
    assert widget.live["steps"] == 3 and widget.live["readings"][0]["value"] == 50.0
    feed.finish()
    assert widget.live["steps"] == 3 and widget.live["running"] is False
