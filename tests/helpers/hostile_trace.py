"""A small Kineto trace for the HTML report's tests: matmuls with shapes (roofline points) on
two streams, two of whose kernels are named to inject markup."""

from __future__ import annotations

from helpers.kineto_docs import cpu_op, kernel, runtime

HOSTILE = "<img src=x onerror=alert(1)>"
# Breaking out of bokeh's inline JSON <script> would need this.
BREAKOUT = "</script><script>window.pwned=1</script>"
# Bokeh typesets $$...$$ in Div text with MathJax, fetched from a CDN: offline, it must not.
TEX = "$$\\alpha$$_kernel"
KERNEL_NAMES = ("sgemm_128x64_nn", "vectorized_elementwise<float>", HOSTILE, BREAKOUT, TEX)


def report_events(launches: int = 12) -> list[dict]:
    """Per launch an aten::mm (256x512 @ 512x256, fp32), its cudaLaunchKernel and its kernel,
    the kernels alternating streams 7 and 8 with durations 10..38 us."""
    events: list[dict] = []
    for i in range(launches):
        ts = i * 100.0
        dims = {"Input Dims": [[256, 512], [512, 256]], "Input type": ["float", "float"]}
        events.append(cpu_op("aten::mm", ts, 40, ext=i, **dims))
        events.append(runtime("cudaLaunchKernel", ts + 5, 10, corr=1000 + i))
        name = KERNEL_NAMES[i % len(KERNEL_NAMES)]
        extra = {"External id": i}
        events.append(kernel(name, ts + 20, 10 + 7 * (i % 5), 1000 + i, stream=7 + i % 2, **extra))
    return events
