"""``python -m bench.markdown``: what rendering model output costs on this machine.

Prints JSON figures (milliseconds) for a ~4,000-character reply with two code blocks and for a
reply that is one long code block: a full render, a cache hit, and every frame of streaming
either reply in small deltas through ``render_markdown(..., streaming=True)``; then the three
hostile replies of issue 12 (``hostile``: render, Qt layout, chat open and repaint). A command,
not a test: the figures depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable

from app.markdown import highlight as code_highlight
from app.markdown import render as markdown_render
from bench.markdown_hostile import hostile_figures

_PARAGRAPH = (
    "This is a paragraph with **bold**, *italics*, `inline code` and a "
    "[link](https://example.com). 中文也可以。\n\n"
)


def sample_reply(chars: int = 4000) -> str:
    """Prose, a Python block, a list, a table and a JavaScript block, cut to ``chars``."""
    python = "".join(
        f"def func_{i}(x, y):\n    return [x * {i} for _ in range(y)]  # comment\n"
        for i in range(14)
    )
    javascript = "".join(f"const v{i} = items.map((x) => x + {i});\n" for i in range(16))
    table = "- item one\n- item two\n  - nested\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n\n"
    text = (
        _PARAGRAPH * 13
        + f"```python\n{python}```\n\n"
        + _PARAGRAPH * 5
        + table
        + f"```javascript\n{javascript}```\n\n"
        + _PARAGRAPH * 6
    )
    return text[:chars]


def code_reply(lines: int = 300) -> str:
    body = "".join(f"def f{i}(x):\n    return x * {i}  # step {i}\n" for i in range(lines // 2))
    return f"Here it is:\n\n```python\n{body}```\n\nDone."


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered), 3),
        "p90_ms": round(ordered[int(len(ordered) * 0.9)], 3),
        "max_ms": round(ordered[-1], 3),
        "n": len(ordered),
    }


def _time(call: Callable[[], object], repeat: int) -> dict[str, float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000)
    return _summary(samples)


def _stream(text: str, delta: int) -> dict[str, float]:
    code_highlight.highlight_code.cache_clear()
    renderer = markdown_render.StreamingRenderer()
    samples = []
    for end in [*range(delta, len(text), delta), len(text)]:
        start = time.perf_counter()
        renderer.render(text[:end])
        samples.append((time.perf_counter() - start) * 1000)
    return _summary(samples)


def _cold_render(text: str) -> None:
    # Nothing cached: neither the finished-message LRU nor highlighted code.
    markdown_render._render_cached.cache_clear()
    code_highlight.highlight_code.cache_clear()
    markdown_render.render_markdown(text)


def run() -> dict[str, object]:
    """The figures, as a JSON-ready dict."""
    code_highlight.warm_up()  # as the app does at start-up; lexer imports are one-off costs
    reply, code = sample_reply(), code_reply()
    figures: dict[str, object] = {"reply_chars": len(reply)}
    figures["full_render_uncached"] = _time(lambda: _cold_render(reply), 20)
    markdown_render.render_markdown(reply)
    figures["finished_cache_hit"] = _time(lambda: markdown_render.render_markdown(reply), 200)
    figures["stream_reply_12_char_deltas"] = _stream(reply, 12)
    figures["code_reply_chars"] = len(code)
    figures["full_render_code_reply_uncached"] = _time(lambda: _cold_render(code), 5)
    figures["stream_code_reply_20_char_deltas"] = _stream(code, 20)
    # Issue 22 A8: a 2,000-item list is one block; its settled items must freeze as it grows.
    items = "".join(f"- item {i} with **bold** and `code`\n" for i in range(2000))
    figures["stream_list_2000_items_40_char_deltas"] = _stream(items, 40)
    big = _PARAGRAPH * 10_000  # ~1 MB: what the right-click menu's "copy code" scan costs
    figures["right_click_code_scan_1mb"] = _time(
        lambda: markdown_render.extract_code_blocks(big), 3
    )
    # Issue 12 row 4: a 1 MB code line, a 10k-row table, a URL + 100k ")": render, Qt layout,
    # opening and repainting the chat (single runs; see bench/markdown_hostile.py).
    figures["hostile"] = hostile_figures()
    return figures


def main(argv: list[str] | None = None) -> int:
    """``python -m bench markdown``: takes no options."""
    if argv:
        raise SystemExit(f"python -m bench markdown takes no arguments, got {argv}")
    print(json.dumps(run(), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
