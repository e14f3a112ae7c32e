"""The hand-written-code hints on a shared GPU trace: Hugging Face's Qwen2RMSNorm is written op
by op (pow, mean, add, rsqrt, mul), and torch's with_stack module events name each call. The
count of its calls is read from the raw JSON here."""

from __future__ import annotations

from typing import Any

import pytest

from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.detectors import elementwise_chain, mask_routing, python_loop
from gpuprofile.importers.kineto import load_kineto
from helpers.prerequisites import SHARED_TRACES, require_trace

pytestmark = pytest.mark.traces

QWEN = SHARED_TRACES / "kineto" / "tracelens_h100_qwen1.5_0.5b_inference.json.gz"


def test_qwen_rms_norm_is_found_in_every_call(traces: Any) -> None:
    path = require_trace(QWEN)
    events = traces.read_json(path)["traceEvents"]
    norms = [
        e
        for e in events
        if e.get("cat") == "python_function"
        and str(e.get("name", "")).startswith("nn.Module: Qwen2RMSNorm_")
    ]
    analysis = Analysis(load_kineto(path))
    [hint] = elementwise_chain.detect(analysis)
    assert hint.title.startswith("Hand-written RMSNorm in Qwen2Model_0.Qwen2DecoderLayer_0.")
    assert hint.numbers["calls"] == len(norms) > 0
    assert hint.numbers["ops"] == 5  # pow, mean, add, rsqrt, mul; the casts end the chain
    assert "F.rms_norm" in hint.code
    assert hint.rank == 0 and hint.confidence == "medium"
    assert 0 < hint.gain_ns < int(hint.numbers["chain_ns"])
    assert "GPU kernel time" in hint.gain_method
    # Inference: no loop over heads or experts, no mask routing.
    assert python_loop.detect(analysis) == []
    assert mask_routing.detect(analysis) == []
