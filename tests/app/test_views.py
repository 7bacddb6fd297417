"""Widgets offscreen: composer keys and drafts, sampling panel, message delegate clicks and
inert links, error texts, settings round trip, a 500-message transcript."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication

from app.listmodels.messages import MessageItem, MessageListModel
from app.system.settings import BUILTIN_PRESETS, Settings
from app.views.chat.chat_view import ChatView
from app.views.chat.composer import Composer
from app.views.chat.sampling_panel import SamplingPanel
from app.views.dialogs.common import friendly_error
from engine.errors import ContextOverflowError, InvalidParamsError, ModelNotFoundError
from engine.types import SamplingParams


def test_enter_sends_and_shift_enter_adds_a_line(qtbot: Any) -> None:
    composer = Composer()
    qtbot.addWidget(composer)
    sent: list[str] = []
    composer.sig_send_requested.connect(sent.append)
    composer.edit.setFocus()
    composer.edit.insertPlainText("你好")  # QTest.keyClicks only types ASCII
    qtbot.keyClick(composer.edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(composer.edit, "world")
    qtbot.keyClick(composer.edit, Qt.Key.Key_Return)
    assert sent == ["你好\nworld"]
    assert composer.text() == "你好\nworld"  # kept until the session accepts the message
    composer.clear_after_send()
    assert composer.text() == ""


def test_composer_turns_into_stop_while_generating(qtbot: Any) -> None:
    composer = Composer()
    qtbot.addWidget(composer)
    stops: list[bool] = []
    composer.sig_stop_requested.connect(lambda: stops.append(True))
    composer.set_generating(True)
    assert composer.button.text() == "Stop" and composer.button.isEnabled()
    qtbot.mouseClick(composer.button, Qt.MouseButton.LeftButton)
    qtbot.keyClick(composer.edit, Qt.Key.Key_Escape)
    assert stops == [True, True]
    composer.set_generating(False)
    composer.set_can_send(True)
    assert composer.button.text() == "Send" and not composer.button.isEnabled()  # empty


def test_sampling_panel_slider_and_field_emit_validated_params(qtbot: Any) -> None:
    panel = SamplingPanel()
    qtbot.addWidget(panel)
    panel.set_params(SamplingParams())
    emitted: list[SamplingParams] = []
    panel.sig_params_changed.connect(emitted.append)
    panel.fields["temperature"].slider.setValue(150)  # 0.00 + 150 * 0.01
    assert emitted[-1].temperature == 1.5
    panel.fields["top_k"].spin.setValue(7)
    assert emitted[-1].top_k == 7 and panel.fields["top_k"].slider.value() == 7
    panel.stop.setText(r"</s>, \n\n, 结束")
    panel.stop.editingFinished.emit()
    assert emitted[-1].stop == ("</s>", "\n\n", "结束")
    panel.seed.setValue(42)
    assert emitted[-1].seed == 42
    count = len(emitted)
    panel.set_params(BUILTIN_PRESETS["Creative"])  # showing params is not a change
    assert len(emitted) == count and panel.params() == BUILTIN_PRESETS["Creative"]


def test_errors_get_friendly_text_and_cancellation_is_silent() -> None:
    import asyncio

    assert friendly_error(asyncio.CancelledError()) is None
    headline, detail = friendly_error(ModelNotFoundError("no model at /x"))  # type: ignore[misc]
    assert "could not be found" in headline and detail == "no model at /x"
    assert "too long" in friendly_error(ContextOverflowError("x"))[0]  # type: ignore[index]
    assert "out of range" in friendly_error(InvalidParamsError("top_p"))[0]  # type: ignore[index]
    assert friendly_error(RuntimeError("boom"))[1] == "boom"  # type: ignore[index]


def test_settings_round_trip_and_survive_garbage(tmp_path: Path) -> None:
    path = str(tmp_path / "s.ini")
    s = Settings(path)
    params = SamplingParams(temperature=0.3, stop=("a",), seed=5)
    s.set_sampling_params(params)
    s.add_recent_model("/m/a.gguf")
    s.add_recent_model("/m/b")
    s.add_recent_model("/m/a.gguf")
    s.save_user_preset("Mine", params)
    s.set_draft("c1", "草稿")
    s.sync()
    again = Settings(path)
    assert again.sampling_params() == params
    assert again.recent_models() == ["/m/a.gguf", "/m/b"]
    assert again.user_presets() == {"Mine": params}
    assert again.draft("c1") == "草稿" and again.draft(None) == ""
    again._q.setValue("sampling/params", '{"temperature": -4}')  # hand-edited nonsense
    assert again.sampling_params() == BUILTIN_PRESETS["Balanced"]


@pytest.fixture
def chat(qtbot: Any) -> ChatView:
    model = MessageListModel()
    view = ChatView(model)
    qtbot.addWidget(view)
    view.resize(800, 600)
    view.show()
    qtbot.waitExposed(view)
    return view


def _reply(text: str, **kw: Any) -> MessageItem:
    return MessageItem.of("r1", "assistant", text, finish_reason="stop", **kw)


def test_clicking_a_button_in_a_message_emits_its_action(chat: ChatView, qtbot: Any) -> None:
    chat.message_model().set_items([_reply("Hello", sibling_index=0, sibling_count=2)])
    QApplication.processEvents()
    layout = chat.message_delegate.row_layout(
        chat.visualRect(chat.model().index(0, 0)), _reply("Hello", sibling_index=0, sibling_count=2)
    )
    actions: list[tuple[str, str]] = []
    chat.message_delegate.sig_action.connect(lambda a, i: actions.append((a, i)))
    for button in layout.buttons:
        if button.action in ("copy", "next", "regenerate"):
            qtbot.mouseClick(chat.viewport(), Qt.MouseButton.LeftButton, pos=button.rect.center())
    assert actions == [("next", "r1"), ("copy", "r1"), ("regenerate", "r1")]


def test_links_are_inert_until_clicked(chat: ChatView, qtbot: Any) -> None:
    text = "[site](https://example.com) ![img](https://example.com/x.png) <script>x()</script>"
    item = _reply(text)
    chat.message_model().set_items([item])
    QApplication.processEvents()
    delegate = chat.message_delegate
    doc = delegate.document(item)
    assert "<script>" in doc.toPlainText()  # shown as text, never run
    clicked: list[str] = []
    delegate.sig_link_clicked.connect(lambda url: clicked.append(url.toString()))
    layout = delegate.row_layout(chat.visualRect(chat.model().index(0, 0)), item)
    cursor_rect = doc.documentLayout().blockBoundingRect(doc.begin())
    pos = layout.body.topLeft() + QPoint(4, int(cursor_rect.height() / 2))
    qtbot.mouseClick(chat.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert clicked == ["https://example.com"]


def test_a_long_transcript_only_lays_out_what_changes(chat: ChatView, qtbot: Any) -> None:
    model = chat.message_model()
    model.set_items(
        [
            MessageItem.of(f"m{i}", "user" if i % 2 else "assistant", f"**{i}** 中文 `code`")
            for i in range(500)
        ]
    )
    last = model.index(499)
    # The list lays out in batches and follows the bottom as it grows.
    qtbot.waitUntil(lambda: chat.viewport().rect().contains(chat.visualRect(last).center()))
    delegate = chat.message_delegate
    docs_before = {k: v[1] for k, v in delegate._docs.items()}
    model.append_text(499, " more text")
    # Documents are rendered lazily, when a row is painted: wait for the next paint of m499.
    qtbot.waitUntil(lambda: delegate._docs["m499"][1] is not docs_before["m499"])
    same = [k for k, d in docs_before.items() if delegate._docs.get(k, (None, None))[1] is d]
    assert len(same) == len(docs_before) - 1  # no other row was re-rendered


def test_every_parameter_label_is_marked_for_translation() -> None:
    from app.views.chat.param_labels import MARKED
    from engine.types import PARAMS

    assert {p.label for p in PARAMS} <= set(MARKED)


def test_one_slider_per_table_row_with_its_range(qtbot: Any) -> None:
    from engine.types import PARAMS

    panel = SamplingPanel()
    qtbot.addWidget(panel)
    rows = {p.name: p.slider for p in PARAMS if p.slider is not None}
    assert list(panel.fields) == list(rows)
    for name, spec in rows.items():
        spin = panel.fields[name].spin
        assert (spin.minimum(), spin.maximum()) == (spec.low, spec.high)


def test_preset_box_says_custom_once_the_sliders_leave_the_preset(qtbot: Any) -> None:
    panel = SamplingPanel()
    qtbot.addWidget(panel)
    panel.set_params(BUILTIN_PRESETS["Balanced"])
    panel.set_presets([(k, k, p) for k, p in BUILTIN_PRESETS.items()], "Balanced")
    assert panel.presets.currentData() == "Balanced"
    panel.max_tokens.setValue(77)  # limits are not what a preset decides
    assert panel.presets.currentData() == "Balanced"
    panel.fields["temperature"].spin.setValue(1.37)
    assert panel.presets.currentText() == "Custom" and panel.presets.currentData() == ""
    panel.set_params(BUILTIN_PRESETS["Creative"])  # choosing a preset drops "Custom"
    assert panel.presets.currentData() == "Creative" and panel.presets.findData("") < 0


def test_details_show_labels_and_rounded_figures_and_survive_bad_values() -> None:
    from app.views.chat.message_text import describe_params, details_text, message_summary

    stats = {"ttft_s": 0.14521203699996477, "decode_tokens_per_s": 31.23456, "total_s": "x",
             "completion_tokens": 12, "future_field": 1.23456789}  # fmt: skip
    item = _reply("hi", stats=stats, params={"temperature": 0.7000000001, "stop": ["\n"]})
    item.update(finish_reason="length")
    text = details_text(item)
    assert "Time to first token: 0.15 s" in text and "Reply speed: 31.2 tok/s" in text
    assert "Total time: x" in text and "future_field: 1.235" in text
    assert "ttft_s" not in text and "0.1452120" not in text
    assert "Temperature 0.7" in text and "token limit reached" in text
    assert "0.15 s to first token" in message_summary(item)
    broken = _reply("hi", stats={"ttft_s": "x", "completion_tokens": "many"}, params=[1])  # type: ignore[arg-type]
    broken.update(param_changes=("junk", {"params": 3}))
    assert "Time to first token: x" in details_text(broken)
    assert message_summary(broken) == "settings changed while writing"
    assert describe_params({"seed": None}) == ""


def test_details_are_chinese_in_the_chinese_ui(qapp: Any) -> None:
    from PySide6.QtCore import QCoreApplication, QTranslator

    from app.views.chat.message_text import details_text

    translator = QTranslator()
    assert translator.load(str(Path(__file__).parents[2] / "assets/i18n/hearth_zh_CN.qm"))
    QCoreApplication.installTranslator(translator)
    try:
        text = details_text(_reply("hi", stats={"ttft_s": 0.5}, params={"temperature": 0.7}))
    finally:
        QCoreApplication.removeTranslator(translator)
    assert "首个 token 用时：0.50 s" in text and "温度 0.7" in text and "已完成" in text


def test_penalty_sliders_emit_presence_and_frequency(qtbot: Any) -> None:
    panel = SamplingPanel()
    qtbot.addWidget(panel)
    panel.set_params(SamplingParams())
    emitted: list[SamplingParams] = []
    panel.sig_params_changed.connect(emitted.append)
    panel.fields["presence_penalty"].slider.setValue(250)  # -2.00 + 250 * 0.01
    panel.fields["frequency_penalty"].spin.setValue(-1.5)
    assert (emitted[-1].presence_penalty, emitted[-1].frequency_penalty) == (0.5, -1.5)
