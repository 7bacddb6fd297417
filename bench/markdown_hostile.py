"""What the hostile replies of issue 12 row 4 cost: render, then lay out as the chat view does.

Three inputs: a 1 MB single-line code block, a 10,000-row table, and a URL followed by
100,000 ``)``. For each: the Markdown render (ms), the HTML size, and the Qt layout of that
HTML in a QTextDocument at the chat's text width (ms), which is what froze the GUI. Part of
``python -m bench markdown``; a command that prints figures, not a test.
"""

from __future__ import annotations

import os
import time

from app.markdown import highlight as code_highlight
from app.markdown import render as markdown_render

TEXT_WIDTH = 860  # the chat delegate's widest text column


def hostile_inputs() -> dict[str, str]:
    """The three replies, by name."""
    return {
        "code_line_1mb": "```python\n" + "x = 1; " * (1_000_000 // 7) + "\n```\n",
        "table_10k_rows": "| n | value |\n|---|---|\n"
        + "".join(f"| {i} | v{i} |\n" for i in range(10_000)),
        "url_100k_parens": "see https://example.com/a" + ")" * 100_000,
    }


def _qapp() -> object:
    from PySide6.QtWidgets import QApplication

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    return QApplication.instance() or QApplication([])


def _layout_ms(html: str) -> float:
    from PySide6.QtGui import QTextDocument

    _qapp()
    doc = QTextDocument()
    start = time.perf_counter()
    doc.setHtml(html)
    doc.setTextWidth(TEXT_WIDTH)
    doc.size()  # forces the layout
    return (time.perf_counter() - start) * 1000


def _chat_view_ms(text: str) -> tuple[float, float]:
    """Open a chat holding ``text`` as a reply in the real ChatView (800x600, offscreen) and
    paint it: (first paint ms, one more repaint ms). What a user waits for."""
    from PySide6.QtWidgets import QApplication

    from app.listmodels.messages import MessageItem, MessageListModel
    from app.views.chat.chat_view import ChatView

    _qapp()
    model = MessageListModel()
    view = ChatView(model)
    view.resize(800, 600)
    view.show()
    times = []
    for items in ([MessageItem.of("m1", "assistant", text, finish_reason="stop")], None):
        start = time.perf_counter()
        if items:
            model.set_items(items)
        view.viewport().repaint()
        QApplication.processEvents()
        times.append((time.perf_counter() - start) * 1000)
    view.close()
    view.deleteLater()
    return times[0], times[1]


def hostile_figures() -> dict[str, dict[str, float]]:
    """Per input: render_ms, html_chars, layout_ms, open_ms and repaint_ms in the chat view
    (single runs: each was seconds before the fix)."""
    figures = {}
    for name, text in hostile_inputs().items():
        markdown_render._render_cached.cache_clear()
        code_highlight.highlight_code.cache_clear()
        start = time.perf_counter()
        html = markdown_render.render_markdown(text, wrap_code=True)
        render_ms = (time.perf_counter() - start) * 1000
        figures[name] = {
            "render_ms": round(render_ms, 1),
            "html_chars": len(html),
            "layout_ms": round(_layout_ms(html), 1),
        }
        markdown_render._render_cached.cache_clear()
        open_ms, repaint_ms = _chat_view_ms(text)
        figures[name] |= {"open_ms": round(open_ms, 1), "repaint_ms": round(repaint_ms, 1)}
    return figures


if __name__ == "__main__":
    import json

    print(json.dumps(hostile_figures(), indent=2))
