"""Field checks and limits for imported conversations: every value a file carries is checked
here before anything reaches the database.

Owns the rules for what an imported field may hold (ids, roles, statuses, timestamps,
sampling settings, live parameter changes, statistics) and the size limits of one import.
Every failure is an `ImportFormatError` naming the field and the value; nothing here writes.
Does not own the file formats (`app.portability.importer`, `app.portability.markdown_import`).

Why so strict: a value the GUI cannot show (``"ttft_s": "x"``) or a time no calendar holds
(``1e300``) would otherwise be stored, and then break every later open or export of the chat.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TypeGuard

from app.portability.portable import ImportFormatError
from app.store import ROLES, MessageStatus
from engine.errors import EngineError
from engine.types import SamplingParams

MAX_FILE_BYTES = 64 * 1024 * 1024  # one file; a larger one is refused before it is read
MAX_MESSAGE_CHARS = 4_000_000  # one message (a long pasted document fits; 200 MB does not)
MAX_MESSAGES = 20_000  # one import, all files together
MAX_CONVERSATIONS = 5_000  # one import
MAX_ID_CHARS = 64  # document-local message ids ("1", "2", ...)
MAX_SHORT_TEXT = 10_000  # titles, model names, finish reasons, error texts
MAX_JSON_DEPTH = 8  # settings and statistics are flat; a newer Hearth's extras nest a little
# Unix seconds from 1970 to the end of 9999: what datetime (and so export) can write.
EARLIEST_EPOCH = 0.0
LATEST_EPOCH = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()
STATUSES = frozenset(s.value for s in MessageStatus)
# Known statistics: counts are integers, the rest seconds or rates (engine.types.Stats).
_STAT_COUNTS = frozenset(
    {"prompt_tokens", "cached_prompt_tokens", "completion_tokens", "context_window",
     "dropped_messages"}
)  # fmt: skip
_STAT_FLOATS = frozenset({"ttft_s", "prefill_tokens_per_s", "decode_tokens_per_s", "total_s"})


class Checker:
    """Checks for one source file; each method returns the value to keep or raises."""

    def __init__(self, source: str, line: int | None = None) -> None:
        self.source, self.line = source, line

    def fail(self, problem: str) -> ImportFormatError:
        return ImportFormatError(self.source, problem, self.line)

    def ident(self, value: Any, where: str, *, optional: bool = False) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value or len(value) > MAX_ID_CHARS:
            raise self.fail(f"{where} must be a non-empty text id of at most {MAX_ID_CHARS} "
                            f"characters, got {show(value)}")  # fmt: skip
        return value

    def role(self, value: Any, where: str) -> str:
        if not isinstance(value, str) or value not in ROLES:
            raise self.fail(f"{where} must be system, user or assistant, got {show(value)}")
        return value

    def status(self, value: Any, where: str) -> str:
        if value is None or value == "":
            return MessageStatus.COMPLETE.value
        if not isinstance(value, str) or value not in STATUSES:
            raise self.fail(f"{where} is not a message status: {show(value)}")
        return value

    def content(self, value: str, where: str) -> str:
        if len(value) > MAX_MESSAGE_CHARS:
            raise self.fail(
                f"{where} is {len(value):,} characters long; Hearth imports messages of at most "
                f"{MAX_MESSAGE_CHARS:,} characters"
            )
        return value

    def short_text(self, value: Any, where: str) -> str | None:
        """An optional short text (model, finish reason, error)."""
        if value is None:
            return None
        if not isinstance(value, str) or len(value) > MAX_SHORT_TEXT:
            raise self.fail(f"{where} must be text of at most {MAX_SHORT_TEXT:,} characters, "
                            f"got {show(value)}")  # fmt: skip
        return value

    def flag(self, value: Any, where: str) -> bool:
        if value is None:
            return False
        if not isinstance(value, bool):
            raise self.fail(f"{where} must be true or false, got {show(value)}")
        return value

    def epoch(self, value: Any, where: str) -> float | None:
        """Unix seconds from a number or an ISO 8601 text; within 1970..9999."""
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise self.fail(f"{where} must be an ISO 8601 time, got {show(value)}")
        if isinstance(value, str):
            value = self._iso(value, where)
        if not (isinstance(value, float) and math.isnan(value)) and (
            EARLIEST_EPOCH <= value <= LATEST_EPOCH
        ):
            return float(value)
        raise self.fail(f"{where} is not a time between 1970 and 9999: {show(value)}")

    def _iso(self, text: str, where: str) -> float:
        try:
            return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
        except (ValueError, OverflowError, OSError):
            raise self.fail(f"{where} is not an ISO 8601 time: {show(text)}") from None

    def params(self, value: Any, where: str) -> dict[str, Any] | None:
        """Sampling settings: what `SamplingParams.from_dict` accepts (unknown keys kept)."""
        if value is None:
            return None
        data = self.mapping(value, where)
        try:
            SamplingParams.from_dict(data)
        except (EngineError, TypeError, ValueError) as exc:
            raise self.fail(f"{where} are not valid sampling settings: {exc}") from None
        return data

    def param_changes(self, value: Any, where: str) -> tuple[dict[str, Any], ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self.fail(f"{where} must be a list, got {show(value)}")
        changes = []
        for i, change in enumerate(value):
            here = f"{where}[{i}]"
            if not isinstance(change, dict) or set(change) != {"token_index", "params"}:
                raise self.fail(f'{here} must be {{"token_index": N, "params": {{...}}}}')
            index = change["token_index"]
            if not is_int(index) or index < 0:
                raise self.fail(f"{here}.token_index must be an integer >= 0, got {show(index)}")
            params = self.params(change["params"], f"{here}.params")
            changes.append({"token_index": index, "params": params or {}})
        return tuple(changes)

    def stats(self, value: Any, where: str) -> dict[str, Any] | None:
        """Generation statistics: known figures are finite numbers >= 0 (counts integers);
        unknown keys (a newer Hearth's) may hold short texts, numbers, true/false or null."""
        if value is None:
            return None
        data = self.mapping(value, where)
        for key, item in data.items():
            if key in _STAT_COUNTS and not (is_int(item) and 0 <= item < 2**63):
                raise self.fail(f"{where}.{key} must be an integer >= 0, got {show(item)}")
            if key in _STAT_FLOATS and not (_is_number(item) and item >= 0):
                raise self.fail(f"{where}.{key} must be a number >= 0, got {show(item)}")
            if not (_is_number(item) or item is None or isinstance(item, bool | str)):
                raise self.fail(f"{where}.{key} must be a number or text, got {show(item)}")
        return data

    def mapping(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(f"{where} must be a JSON object, got {show(value)}")
        if _depth(value) > MAX_JSON_DEPTH:
            raise self.fail(f"{where} is nested more than {MAX_JSON_DEPTH} levels deep")
        if any(isinstance(v, float) and not math.isfinite(v) for v in _leaves(value)):
            raise self.fail(f"{where} holds a number that is not finite (NaN or Infinity)")
        return value


def check_counts(conversations: int, messages: int, source: str) -> None:
    if conversations > MAX_CONVERSATIONS:
        raise ImportFormatError(
            source, f"{conversations:,} conversations; Hearth imports at most "
            f"{MAX_CONVERSATIONS:,} at once (split the file)"
        )  # fmt: skip
    if messages > MAX_MESSAGES:
        raise ImportFormatError(
            source, f"{messages:,} messages; Hearth imports at most {MAX_MESSAGES:,} at once "
            "(split the file)"
        )  # fmt: skip


def is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (is_int(value) and abs(value) < 2**63) or (
        isinstance(value, float) and math.isfinite(value)
    )


def _depth(value: Any) -> int:
    """How deeply lists and objects nest (iterative: a hostile value must not recurse)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            if level > MAX_JSON_DEPTH:
                return level
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return deepest


def _leaves(value: Any) -> list[Any]:
    out, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        else:
            out.append(item)
    return out


def show(value: Any) -> str:
    """A value for an error message, cut short (a file may hold megabytes in one field)."""
    try:
        text = repr(value)
    except ValueError:  # an int too long to convert to text
        text = f"an integer of about {value.bit_length() * 0.30103:.0f} digits"
    return text if len(text) <= 80 else text[:77] + "..."
