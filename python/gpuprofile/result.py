"""A Profile: one Trace with its analysis, shown as a widget in notebooks and as text elsewhere."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpuprofile.errors import GpuprofileError
from gpuprofile.report.text import render_text
from gpuprofile.trace.model import Trace

if TYPE_CHECKING:
    from gpuprofile.analyses.context import Analysis
    from gpuprofile.hardware.model import Hardware


class Profile:
    """The result of a capture or an import. Filled in when a capture ends."""

    def __init__(
        self, trace: Trace | None = None, *, partial: bool = False, hardware: Hardware | None = None
    ) -> None:
        self._trace = trace
        self.partial = partial
        self._hardware = hardware
        self._analysis: Analysis | None = None
        self._report: dict[str, Any] | None = None
        self._text: str | None = None
        self._widget: Any = None

    def _finish(self, trace: Trace, *, partial: bool) -> None:
        self._trace = trace
        self.partial = partial
        self._analysis = None
        self._report = None
        self._text = None
        self._widget = None

    @property
    def trace(self) -> Trace:
        if self._trace is None:
            raise GpuprofileError("this profile is still recording; use it after the block ends")
        return self._trace

    @property
    def analysis(self) -> Analysis:
        """The trace with its hardware roofs: the datasheet of the device it ran on unless
        given (``with_hardware``, ``gpuprofile.calibrate()``)."""
        if self._analysis is None:
            from gpuprofile.analyses.context import Analysis
            from gpuprofile.hardware.match import hardware_for_trace

            hardware = self._hardware or hardware_for_trace(self.trace)
            self._analysis = Analysis(self.trace, hardware)
        return self._analysis

    def with_hardware(self, hardware: Hardware) -> Profile:
        """The same trace analysed against other roofs (measured, or your own)."""
        return Profile(self.trace, partial=self.partial, hardware=hardware)

    def report(self) -> dict[str, Any]:
        """The versioned report dict (schema gpuprofile.report/1), as `--format json` prints."""
        if self._report is None:
            from gpuprofile.report.build import build_report

            self._report = build_report(self.analysis, partial=self.partial)
        return self._report

    def text(self) -> str:
        if self._text is None:
            self._text = render_text(self.report())
        return self._text

    def widget(self) -> Any:
        """The notebook widget, made once: displaying a Profile again shows the same widget
        rather than holding another copy of the timeline in the kernel."""
        # A closed widget (its cell re-ran, see magic.py) cannot be shown again: a new one.
        if self._widget is None or self._widget.comm is None:
            from gpuprofile.widget.widget import ProfileWidget

            self.fill_widget(ProfileWidget())
        return self._widget

    def fill_widget(self, widget: Any) -> None:
        """Show this profile in a widget (a new one, or the live one of a running cell); it
        becomes this Profile's widget."""
        from gpuprofile.widget.widget import show_result

        show_result(widget, {**self.report(), "text": self.text()}, self.trace, self.analysis)
        self._widget = widget

    def __repr__(self) -> str:
        if self._trace is None:
            return "<gpuprofile.Profile (recording)>"
        return self.text()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        # The widget view for Jupyter frontends; the text report for everything else, where a
        # widget would only cost time and memory (terminal IPython has no kernel to talk to).
        if not in_kernel():
            return {"text/plain": self.text()}, {}
        bundle = self.widget()._repr_mimebundle_(**kwargs)
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        return {**data, "text/plain": self.text()}, metadata


def in_kernel() -> bool:
    """Running in a Jupyter kernel, whose frontend can show widgets (not terminal IPython)."""
    from IPython import get_ipython

    return getattr(get_ipython(), "kernel", None) is not None


_last: Profile | None = None


def remember(profile: Profile) -> None:
    global _last
    _last = profile


def last() -> Profile:
    """The Profile that the most recent %%gpuprofile cell made."""
    if _last is None:
        raise GpuprofileError("no profile yet: run a cell with %%gpuprofile first")
    return _last
