"""Reading back the standalone HTML page (report/html.py) in tests."""

from __future__ import annotations

import html
import json
import re


def div_markup(page: str) -> str:
    """The markup of the page's bokeh Divs, read back from bokeh's document JSON (which the
    file holds HTML-escaped inside a <script type="application/json">)."""
    found = re.findall(r'<script type="application/json"[^>]*>(.*?)</script>', page, re.S)
    assert len(found) == 1
    texts: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("name") == "Div":
                texts.append(node["attributes"]["text"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(html.unescape(found[0])))
    return "\n".join(texts)
