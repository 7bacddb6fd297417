"""Conversions between SQLite rows / JSON columns and the `app.store.records` values.

Owns the JSON encoding of settings, statistics and live parameter changes, and walking a
message tree along its remembered active children. Does not run queries.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeVar

from app.store.records import (
    RECORD_FIELDS,
    Conversation,
    MessageRecord,
    MessageStatus,
    StoredMessage,
    StoreError,
)

ROLES = frozenset({"system", "user", "assistant"})


class TreeNode(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def parent_id(self) -> str | None: ...
    @property
    def active_child_id(self) -> str | None: ...


NodeT = TypeVar("NodeT", bound=TreeNode)


def shown_branch(tree: Sequence[NodeT], root_id: str | None) -> list[NodeT]:
    """Walk ``tree`` (insertion order) from ``root_id`` along active children.

    Works on anything shaped like a message node (`StoredMessage`, the export's messages).
    """
    children: dict[str | None, list[NodeT]] = {}
    for message in tree:
        children.setdefault(message.parent_id, []).append(message)
    branch: list[NodeT] = []
    chosen, parent = root_id, None
    while kids := children.get(parent):
        by_id = {kid.id: kid for kid in kids}
        node = by_id.get(chosen) if chosen else None
        node = node or kids[-1]  # no (or a dangling) pointer: the newest alternative
        branch.append(node)
        chosen, parent = node.active_child_id, node.id
    return branch


def check_role(role: str) -> None:
    if role not in ROLES:
        raise StoreError(f"message role must be one of system/user/assistant, got {role!r}")


LATEST_TIME = 253402300799.0  # 9999-12-31 23:59:59 UTC: the last second datetime can write


def check_time(value: float, name: str) -> float:
    """Unix seconds a calendar can show (1970..9999): 1e300 or NaN would break every export."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not (0 <= value <= LATEST_TIME)
    ):
        raise StoreError(f"{name} must be Unix seconds between 1970 and 9999, got {value!r}")
    return float(value)


def parse_status(status: MessageStatus | str) -> MessageStatus:
    try:
        return MessageStatus(status)
    except ValueError:
        names = ", ".join(s.value for s in MessageStatus)
        raise StoreError(f"message status must be one of {names}, got {status!r}") from None


def finish_columns(
    finish_reason: str | None = None,
    error: str | None = None,
    stats: Mapping[str, Any] | Any | None = None,
    param_changes: Sequence[Mapping[str, Any] | Any] = (),
) -> dict[str, Any]:
    return {
        "finish_reason": None if finish_reason is None else str(finish_reason),
        "error": error,
        "stats_json": None if stats is None else dumps(stats),
        "param_changes_json": dumps([_param_change(c) for c in param_changes]),
    }


def _param_change(change: Mapping[str, Any] | Any) -> dict[str, Any]:
    # A `ParamsApplied` event or an already plain {"token_index", "params"} dict.
    if isinstance(change, Mapping):
        return {"token_index": change["token_index"], "params": _plain(change["params"])}
    return {"token_index": change.token_index, "params": _plain(change.params)}


def _plain(value: Mapping[str, Any] | Any) -> dict[str, Any]:
    """A JSON-ready dict from a mapping or a value with ``to_dict()`` (SamplingParams, Stats)."""
    if isinstance(value, Mapping):
        return dict(value)
    to_dict = getattr(value, "to_dict", None)
    if to_dict is None:
        raise StoreError(f"cannot store {type(value).__name__} as settings or stats")
    return dict(to_dict())


def dumps(value: Any) -> str:
    if not isinstance(value, list):
        value = _plain(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def conversation_from_row(row: sqlite3.Row) -> Conversation:
    return Conversation(
        id=row["id"],
        title=row["title"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        model=row["model"],
        system_prompt=row["system_prompt"],
        params=loads(row["params_json"]) or {},
        pinned=bool(row["pinned"]),
        deleted_at=row["deleted_at"],
        active_root_id=row["active_root_id"],
    )


def message_from_row(row: sqlite3.Row) -> StoredMessage:
    return StoredMessage(
        id=row["id"],
        conversation_id=row["conversation_id"],
        parent_id=row["parent_id"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        status=MessageStatus(row["status"]),
        active_child_id=row["active_child_id"],
        **record_from_row(row),
    )


# The `MessageRecord` fields kept as JSON text, and their columns; every other field is the
# column of its own name, as is.
_JSON_COLUMNS = {"params": "params_json", "param_changes": "param_changes_json",
                 "stats": "stats_json"}  # fmt: skip


def record_from_row(row: sqlite3.Row) -> dict[str, Any]:
    """The `MessageRecord` fields of a ``messages`` row, decoded."""
    values = {name: row[_JSON_COLUMNS.get(name, name)] for name in RECORD_FIELDS}
    values["params"] = loads(values["params"])
    values["param_changes"] = tuple(loads(values["param_changes"]) or ())
    values["stats"] = loads(values["stats"])
    return values


def record_columns(values: Mapping[str, Any]) -> dict[str, Any]:
    """``messages`` columns for `MessageRecord` fields given by name (an absent one: its
    default); ``params``/``stats`` may be SamplingParams/Stats, ``param_changes`` events."""
    unknown = set(values) - set(RECORD_FIELDS)
    if unknown:
        raise TypeError(f"not a message field: {', '.join(sorted(unknown))}")
    defaults = MessageRecord(role="", content="")
    full = {name: values.get(name, getattr(defaults, name)) for name in RECORD_FIELDS}
    full["reasoning"] = full["reasoning"] or ""
    columns = {name: full[name] for name in RECORD_FIELDS if name not in _JSON_COLUMNS}
    columns["params_json"] = None if full["params"] is None else dumps(full["params"])
    finished = finish_columns(full["finish_reason"], full["error"], full["stats"],
                              full["param_changes"])  # fmt: skip
    return {**columns, **finished}
