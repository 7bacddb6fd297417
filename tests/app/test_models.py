"""The GUI's item models pass Qt's model tester and keep rows consistent while they change."""

from __future__ import annotations

from typing import Any

from app.listmodels.conversations import ConversationListModel, ConversationRow, IdRole
from app.listmodels.messages import ItemRole, MessageItem, MessageListModel


def _items(n: int) -> list[MessageItem]:
    return [
        MessageItem.of(f"m{i}", "user" if i % 2 == 0 else "assistant", f"text {i}")
        for i in range(n)
    ]


def test_message_model_passes_the_model_tester(qtmodeltester: Any) -> None:
    model = MessageListModel()
    model.set_items(_items(6))
    qtmodeltester.check(model, force_py=True)
    model.append(_items(2))
    model.append_text(3, " more")
    model.replace_tail(2, _items(1))
    qtmodeltester.check(model, force_py=True)


def test_appending_text_touches_one_row_and_bumps_its_revision(qtbot: Any) -> None:
    model = MessageListModel()
    model.set_items(_items(500))
    changed: list[tuple[int, int]] = []
    model.dataChanged.connect(lambda a, b: changed.append((a.row(), b.row())))
    before = model.item(499).revision
    model.append_text(499, "你好")
    assert changed == [(499, 499)]
    assert model.item(499).record.content.endswith("你好")
    assert model.index(499).data(ItemRole).revision == before + 1


def test_replace_tail_switches_branch_below_a_row() -> None:
    model = MessageListModel()
    model.set_items(_items(4))
    model.replace_tail(1, [MessageItem.of("x", "assistant", "other")])
    assert [i.id for i in model.items()] == ["m0", "x"]
    assert model.row_of("x") == 1 and model.row_of("m3") == -1


def test_conversation_model_passes_the_model_tester_and_renames(qtmodeltester: Any) -> None:
    model = ConversationListModel()
    model.set_rows([ConversationRow(f"c{i}", f"Chat {i}", float(i)) for i in range(5)])
    qtmodeltester.check(model, force_py=True)
    renamed: list[tuple[str, str]] = []
    model.sig_rename_requested.connect(lambda cid, title: renamed.append((cid, title)))
    assert model.setData(model.index(2), "  新标题  ")
    assert renamed == [("c2", "新标题")]
    assert model.index(2).data() == "新标题"
    assert not model.setData(model.index(2), "   ")  # an empty title is refused
    model.upsert_top(ConversationRow("c4", "Chat 4", 9.0))
    assert model.index(0).data(IdRole) == "c4" and model.rowCount() == 5
    model.remove("c0")
    assert model.row_of("c0") == -1
    qtmodeltester.check(model, force_py=True)
