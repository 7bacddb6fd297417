"""Split a Markdown conversation file into its front matter and turns.

Owns the reading side of the Markdown format that `app.portability.export.to_markdown`
writes (see its docstring): front matter lines ``key: <JSON>``, ``<!-- hearth:turn ... -->``
markers and the exact text of each turn. A file without markers is split on ``## User`` /
``## Assistant`` / ``## System`` headings instead (hand-written or other apps' exports; text
trimmed). Turning the result into a conversation and checking it is
`app.portability.importer`'s job.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from app.portability.export import FORMAT_VERSION, MARKER_PREFIX, THINKING_CLOSE, THINKING_OPEN
from app.portability.picture_files import picture_links
from app.portability.portable import ImportFormatError, PortableMessage
from app.store import ROLES, MessageStatus

_KEY_VALUE = re.compile(r"^([A-Za-z_][\w-]*):[ \t]*(.*)$")
_HEADING = re.compile(r"^##[ \t]+(user|assistant|system)[ \t]*$", re.IGNORECASE)
_TURN_HEADING = re.compile(r"^#{1,6}[ \t]")
_ID = re.compile(r"[A-Za-z0-9_.#-]{1,64}")  # ids, parents and marker prefixes, ASCII only
_NUMBER = re.compile(r"[0-9]{1,9}")  # str.isdigit() would also take "²" and "٣"
_SECONDS = re.compile(r"[0-9]{1,9}(\.[0-9]{1,6})?")


@dataclass
class MarkdownDoc:
    header: dict[str, Any]
    messages: list[PortableMessage]
    active_root_id: str | None = None
    lines: dict[str, int] = field(default_factory=dict)  # message id -> line of its marker


@dataclass(frozen=True)
class _Line:
    number: int  # 1-based
    start: int  # offset of the line's first character
    end: int  # offset just past its "\n" (or the end of the text)
    text: str  # without the line break


def read_markdown(text: str, source: str) -> MarkdownDoc:
    lines = _lines(text)
    header, first_body_line = _front_matter(lines, source)
    version = header.get("hearth")
    if isinstance(version, int | float) and version > FORMAT_VERSION:
        problem = f"format version {version} is newer than this Hearth reads ({FORMAT_VERSION})"
        raise ImportFormatError(source, problem, 1)
    body = lines[first_body_line:]
    prefix = header.get("markers") or MARKER_PREFIX
    if not isinstance(prefix, str) or not _ID.fullmatch(prefix):
        raise ImportFormatError(source, f"markers: must be a word like hearth-2, got {prefix!r}")
    marker = re.compile(rf"^<!-- {re.escape(prefix)}:(turn|aside)((?:[ \t]+[^ \t]+)*)[ \t]*-->$")
    marked = [(line, marker.match(line.text)) for line in body]
    found = [(line, m) for line, m in marked if m is not None]
    if found:
        return _marked_turns(text, header, found, source)
    return _heading_turns(text, header, body)


def _lines(text: str) -> list[_Line]:
    result, start = [], 0
    for number, raw in enumerate(text.split("\n"), start=1):
        end = min(start + len(raw) + 1, len(text))
        result.append(_Line(number, start, end, raw.removesuffix("\r")))
        start += len(raw) + 1
    return result


def _front_matter(lines: list[_Line], source: str) -> tuple[dict[str, Any], int]:
    """The ``---`` block's fields and the index of the first line after it."""
    if not lines or lines[0].text != "---":
        return {}, 0
    header: dict[str, Any] = {}
    for index, line in enumerate(lines[1:], start=1):
        if line.text == "---":
            return header, index + 1
        match = _KEY_VALUE.match(line.text)
        if match is None:
            if line.text.strip():
                problem = f"front matter line is not 'key: value': {line.text[:60]!r}"
                raise ImportFormatError(source, problem, line.number)
            continue
        try:
            header[match.group(1)] = _value(match.group(2))
        except (RecursionError, ValueError):
            problem = "front matter value is not readable"
            raise ImportFormatError(source, problem, line.number) from None
    raise ImportFormatError(source, "front matter opened with '---' is never closed", 1)


def _value(raw: str) -> Any:
    try:
        return json.loads(raw, parse_constant=_no_constant)
    except (json.JSONDecodeError, _NotJson):
        # YAML plain or single-quoted scalars, from hand edits or other tools ("NaN" is text).
        return raw.strip().strip("'") if raw.strip() else None


class _NotJson(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not a number JSON allows")


def _marked_turns(
    text: str, header: dict[str, Any], found: list[tuple[_Line, re.Match[str]]], source: str
) -> MarkdownDoc:
    doc = MarkdownDoc(header=header, messages=[])
    pending: list[dict[str, Any]] = []
    previous: str | None = None
    for n, (line, match) in enumerate(found):
        if match.group(1) != "turn":
            continue
        attrs = _attributes(match.group(2))
        segment_end = found[n + 1][0].start if n + 1 < len(found) else len(text)
        turn = _turn(attrs, text[line.end : segment_end], source, line.number, previous, n)
        pending.append(turn)
        doc.lines[turn["id"]] = line.number
        previous = turn["id"]
    _link_active(doc, pending)
    return doc


def _attributes(raw: str) -> dict[str, str]:
    pairs = (token.partition("=") for token in raw.split())
    return {key: value for key, _, value in pairs}


def _turn(
    attrs: dict[str, str], segment: str, source: str, line: int, previous: str | None, n: int
) -> dict[str, Any]:
    role = attrs.get("role")
    if role not in ROLES:
        problem = f"turn marker needs role=user, role=assistant or role=system, got {role!r}"
        raise ImportFormatError(source, problem, line)
    status = attrs.get("status") or MessageStatus.COMPLETE.value
    if status not in {s.value for s in MessageStatus}:
        raise ImportFormatError(source, f"unknown turn status {status!r}", line)
    closed = attrs.get("closed", "0")
    if not _NUMBER.fullmatch(closed):
        raise ImportFormatError(source, f"closed= must be a number, got {closed[:20]!r}", line)
    for key in ("id", "parent"):
        if key in attrs and not _ID.fullmatch(attrs[key]):
            problem = f"{key}= must be up to 64 ASCII letters or digits, got {attrs[key][:20]!r}"
            raise ImportFormatError(source, problem, line)
    turn_id = attrs.get("id") or f"#{n}"
    # Without ids (hand-written markers) each turn follows the previous one.
    parent = attrs.get("parent") if "id" in attrs else previous
    content = _turn_text(segment, int(closed))
    if content is None:
        raise ImportFormatError(source, f"closed={closed} is longer than the turn's text", line)
    # The trailer the importer drops may link the turn's pictures (files beside the export).
    # It ends the segment, before at most the "\r\n\r\n" `_turn_text` trims.
    pictures = picture_links(segment[-(int(closed) + 4) :]) if int(closed) else ()
    reasoning, content = _thinking(attrs, content, source, line)
    return {"id": turn_id, "parent": parent, "role": role, "content": content, "images": pictures,
            "status": status, "active": "active" in attrs, "reasoning": reasoning,
            "reasoning_seconds": _seconds(attrs.get("thought"), source, line)}  # fmt: skip


def _thinking(attrs: dict[str, str], text: str, source: str, line: int) -> tuple[str, str]:
    """(thinking, answer): ``thinking=N`` says the turn opens with a ``<details>`` block
    holding N characters of thinking (see `app.portability.export`)."""
    size = attrs.get("thinking")
    if size is None:
        return "", text
    if not _NUMBER.fullmatch(size):
        raise ImportFormatError(source, f"thinking= must be a number, got {size[:20]!r}", line)
    end = len(THINKING_OPEN) + int(size)
    if not text.startswith(THINKING_OPEN) or not text.startswith(THINKING_CLOSE, end):
        problem = f"thinking={size} does not match the turn's <details> block"
        raise ImportFormatError(source, problem, line)
    return text[len(THINKING_OPEN) : end], text[end + len(THINKING_CLOSE) :]


def _seconds(raw: str | None, source: str, line: int) -> float | None:
    if raw is None:
        return None
    if not _SECONDS.fullmatch(raw):
        raise ImportFormatError(source, f"thought= must be seconds, got {raw[:20]!r}", line)
    return float(raw)


def _turn_text(segment: str, closed: int) -> str | None:
    """Undo the writer's layout: heading line, blank line, text (+ fence closer), blank line."""
    if _TURN_HEADING.match(segment):
        segment = segment.partition("\n")[2]
    segment = (
        segment.removeprefix("\r\n") if segment.startswith("\r\n") else segment.removeprefix("\n")
    )
    # "\n\n" as written; the others only after hand edits (CRLF line ends, a lost blank line).
    for tail in ("\n\n", "\r\n\r\n", "\n"):
        if segment.endswith(tail):
            segment = segment[: -len(tail)]
            break
    if closed > len(segment):
        return None
    return segment[: len(segment) - closed] if closed else segment


def _link_active(doc: MarkdownDoc, turns: list[dict[str, Any]]) -> None:
    chosen = {t["parent"]: t["id"] for t in turns if t["active"]}
    doc.active_root_id = chosen.get(None)
    doc.messages = [
        PortableMessage(
            id=t["id"],
            parent_id=t["parent"],
            role=t["role"],
            content=t["content"],
            status=t["status"],
            active_child_id=chosen.get(t["id"]),
            reasoning=t.get("reasoning", ""),
            reasoning_seconds=t.get("reasoning_seconds"),
            images=t.get("images", ()),
        )
        for t in _tree_order(turns)
    ]


def _tree_order(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # The file shows the shown branch first, alternatives after; numeric ids give back the
    # original order (parents first, siblings oldest first). Other ids keep file order.
    if all(_NUMBER.fullmatch(t["id"]) for t in turns):
        return sorted(turns, key=lambda t: int(t["id"]))
    return turns


def _heading_turns(text: str, header: dict[str, Any], body: list[_Line]) -> MarkdownDoc:
    doc = MarkdownDoc(header=header, messages=[])
    heads = [(line, m.group(1).lower()) for line in body if (m := _HEADING.match(line.text))]
    for n, (line, role) in enumerate(heads):
        end = heads[n + 1][0].start if n + 1 < len(heads) else len(text)
        content = text[line.end : end].strip("\r\n")
        parent = str(n) if n else None
        doc.messages.append(
            PortableMessage(id=str(n + 1), parent_id=parent, role=role, content=content)
        )
        doc.lines[str(n + 1)] = line.number
    return doc
