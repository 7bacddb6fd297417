"""Import conversations from files: Hearth's JSON, Hearth's Markdown and plain chat JSON.

Owns reading and checking those files (see `app.portability.export` for the formats) and
handing them to `app.portability.portable.into_store`, which adds everything in one
transaction or nothing. Accepted:

- Hearth JSON (``"format": "hearth.conversation"`` with a ``tree``): exact, alternatives too.
- Plain JSON: ``{"title": ..., "messages": [{"role": ..., "content": ...}]}`` (a leading system
  message becomes the system prompt; OpenAI-style content parts are joined), a list of such
  objects, or ``{"conversations": [...]}``.
- Hearth Markdown (``<!-- hearth:turn ... -->`` markers): exact; a Markdown file without
  markers is split on ``## User`` / ``## Assistant`` / ``## System`` headings.

Bad input raises `app.portability.portable.ImportFormatError` naming the file, the line when
known, and the problem: every field is checked (`app.portability.checks`: types, ranges, sizes,
counts) before anything is written, so a refused file leaves the database unchanged. Does not
own writing files.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.portability.checks import (
    MAX_FILE_BYTES,
    Checker,
    check_counts,
    is_int,
    show,
)
from app.portability.export import FORMAT_NAME, FORMAT_VERSION
from app.portability.markdown_import import read_markdown
from app.portability.picture_files import restore_picture_files
from app.portability.portable import (
    TITLE_CHARS,
    ImportFormatError,
    PortableConversation,
    PortableMessage,
    check_tree,
    into_store,
    short_title,
)
from app.store import Conversation, Store
from app.store.images import keep_image_bytes
from app.system import paths


def import_files(store: Store, files: Sequence[Path]) -> list[Conversation]:
    """Read and check every file first, then add all their conversations (all or nothing)."""
    conversations = [pc for path in files for pc in read_file(path)]
    where = str(files[0]) if len(files) == 1 else f"{len(files)} files"
    check_counts(len(conversations), sum(len(pc.messages) for pc in conversations), where)
    return into_store(store, conversations)


def read_file(path: Path) -> list[PortableConversation]:
    source = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            problem = f"the file is {size / 2**20:,.0f} MB; Hearth imports files of at most "
            raise ImportFormatError(source, problem + f"{MAX_FILE_BYTES // 2**20} MB")
        data = path.read_bytes()
    except OSError as exc:
        raise ImportFormatError(source, f"cannot read the file ({exc.strerror or exc})") from exc
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise ImportFormatError(source, f"not UTF-8 text (bad byte at offset {exc.start})") from exc
    if path.suffix.lower() == ".json" or text.lstrip()[:1] in ("{", "["):
        return parse_json(text, source)
    return [parse_markdown(text, source)]


# -- JSON -------------------------------------------------------------------------------------


def parse_json(text: str, source: str = "<json>") -> list[PortableConversation]:
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        problem = f"invalid JSON: {exc.msg} (column {exc.colno})"
        raise ImportFormatError(source, problem, exc.lineno) from None
    except RecursionError:
        raise ImportFormatError(source, "invalid JSON: nested too deeply") from None
    except ValueError as exc:  # NaN/Infinity, or an integer too long to read
        raise ImportFormatError(source, f"invalid JSON: {exc}") from None
    data = replace_lone_surrogates(data)
    items = data.get("conversations") if isinstance(data, dict) else data
    items = [data] if isinstance(data, dict) and items is None else items
    if not isinstance(items, list) or not items:
        raise ImportFormatError(source, 'expected an object with "title" and "messages"')
    check_counts(len(items), 0, source)
    label = (
        (lambda i: "") if isinstance(data, dict) and "messages" in data else (lambda i: f"[{i}]")
    )
    return [_json_conversation(item, source, label(i)) for i, item in enumerate(items)]


def replace_lone_surrogates(value: Any) -> Any:
    """``value`` with every unpaired UTF-16 surrogate in its strings replaced by U+FFFD.

    JSON may escape half of a surrogate pair (``"\\ud800"``); Python decodes it to a lone
    surrogate, which SQLite (UTF-8) cannot store. A valid pair stays the character it encodes.
    """
    if isinstance(value, str):
        if not _SURROGATE.search(value):
            return value
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [replace_lone_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {replace_lone_surrogates(k): replace_lone_surrogates(v) for k, v in value.items()}
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _json_conversation(item: Any, source: str, where: str) -> PortableConversation:
    if not isinstance(item, dict):
        raise ImportFormatError(source, f"conversation{where} must be a JSON object")
    if item.get("format") == FORMAT_NAME:
        version = item.get("version")
        if not is_int(version) or version > FORMAT_VERSION:
            problem = (
                f"format version {show(version)} is newer than this Hearth reads ({FORMAT_VERSION})"
            )
            raise ImportFormatError(source, problem)
    tree = item.get("tree")
    if tree is not None:
        return _hearth_json(item, tree, source, where)
    return _plain_json(item, source, where)


def _plain_json(item: dict[str, Any], source: str, where: str) -> PortableConversation:
    raw = item.get("messages")
    if not isinstance(raw, list):
        raise ImportFormatError(source, f'conversation{where} needs a "messages" list')
    check_counts(0, len(raw), source)
    turns = [_plain_turn(m, source, f"{where}messages[{i}]") for i, m in enumerate(raw)]
    system_prompt = _text(item, "system_prompt", source, where, default="")
    while turns and turns[0][0] == "system" and not system_prompt and "system_prompt" not in item:
        system_prompt = turns.pop(0)[1]
    messages = tuple(
        PortableMessage(id=str(n), parent_id=str(n - 1) if n > 1 else None, role=r, content=c)
        for n, (r, c) in enumerate(turns, start=1)
    )
    return _with_header(item, messages, None, system_prompt, source, where)


def _plain_turn(m: Any, source: str, where: str) -> tuple[str, str]:
    if not isinstance(m, dict):
        raise ImportFormatError(source, f"{where} must be an object with role and content")
    role = Checker(source).role(m.get("role"), f"{where}.role")
    return role, _content(m.get("content"), source, where)


def _content(value: Any, source: str, where: str) -> str:
    if isinstance(value, str):
        return Checker(source).content(value, f"{where}.content")
    # OpenAI-style parts: [{"type": "text", "text": "..."}]
    if isinstance(value, list) and all(
        isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text", ""), str)
        for p in value
    ):
        return _content("".join(p.get("text", "") for p in value), source, where)
    raise ImportFormatError(source, f"{where}.content must be text, got {type(value).__name__}")


def _hearth_json(item: dict[str, Any], tree: Any, source: str, where: str) -> PortableConversation:
    nodes = tree.get("nodes") if isinstance(tree, dict) else None
    if not isinstance(nodes, list):
        raise ImportFormatError(source, f'conversation{where}.tree needs a "nodes" list')
    check_counts(0, len(nodes), source)
    messages = tuple(_json_node(n, source, f"{where}tree.nodes[{i}]") for i, n in enumerate(nodes))
    root = Checker(source).ident(tree.get("active_root"), f"{where}tree.active_root", optional=True)
    system_prompt = _text(item, "system_prompt", source, where, default="")
    pc = _with_header(item, messages, root, system_prompt, source, where)
    check_tree(pc, source)
    return pc


def _json_node(n: Any, source: str, where: str) -> PortableMessage:
    if not isinstance(n, dict):
        raise ImportFormatError(source, f'{where} must be an object with a text "id"')
    c = Checker(source)
    role, content = _plain_turn(n, source, where)
    return PortableMessage(
        id=c.ident(n.get("id"), f"{where}.id") or "",
        parent_id=c.ident(n.get("parent"), f"{where}.parent", optional=True),
        role=role,
        content=content,
        active_child_id=c.ident(n.get("active_child"), f"{where}.active_child", optional=True),
        status=c.status(n.get("status"), f"{where}.status"),
        finish_reason=c.short_text(n.get("finish_reason"), f"{where}.finish_reason"),
        error=c.short_text(n.get("error"), f"{where}.error"),
        model=c.short_text(n.get("model"), f"{where}.model"),
        params=c.params(n.get("params"), f"{where}.params"),
        param_changes=c.param_changes(n.get("param_changes"), f"{where}.param_changes"),
        stats=c.stats(n.get("stats"), f"{where}.stats"),
        created_at=c.epoch(n.get("created_at"), f"{where}.created_at"),
        updated_at=c.epoch(n.get("updated_at"), f"{where}.updated_at"),
        reasoning=_reasoning(n.get("reasoning"), source, f"{where}.reasoning"),
        reasoning_seconds=_reasoning_seconds(n.get("reasoning_seconds"), source, where),
        attachments=_documents(n.get("attachments"), ("name", "text"), source, where),
        sources=_documents(n.get("sources"), ("n", "file", "text"), source, where),
        tool_calls=_documents(n.get("tool_calls"), ("id", "name", "arguments"), source, where),
        images=_images(n.get("images"), source, f"{where}.images"),
    )


def _images(value: Any, source: str, where: str) -> tuple[dict[str, Any], ...]:
    """A node's pictures: each one's bytes (base64) checked against its sha256 and kept in the
    data folder by that hash; a record without bytes (its file was gone at export) is dropped."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(i, dict) for i in value):
        raise ImportFormatError(source, f"{where}: pictures must be a list of objects")
    kept = []
    for n, image in enumerate(value):
        if image.get("data") is None:
            continue
        try:
            data = base64.b64decode(str(image["data"]), validate=True)
        except (binascii.Error, ValueError):
            raise ImportFormatError(source, f"{where}[{n}]: its data is not base64") from None
        if hashlib.sha256(data).hexdigest() != image.get("sha256"):
            raise ImportFormatError(source, f"{where}[{n}]: its bytes do not match its sha256")
        name = str(image.get("name") or "picture")
        try:
            path, sha = keep_image_bytes(data, Path(name).suffix[:8] or ".img", _images_folder())
        except OSError as exc:
            raise ImportFormatError(source, f"{where}[{n}]: cannot be kept: {exc}") from None
        kept.append({**{k: image.get(k) for k in ("name", "width", "height", "budget")},
                     "path": str(path), "sha256": sha})  # fmt: skip
    return tuple(kept)


def _images_folder() -> Path:
    return paths.data_dir() / "images"


def _documents(value: Any, keys: tuple[str, ...], source: str, where: str) -> tuple[Any, ...]:
    """A node's attachments or sources: a list of objects with ``keys`` (absent: none)."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(
        isinstance(d, dict) and all(k in d for k in keys) for d in value
    ):
        raise ImportFormatError(source, f"{where}: attachments/sources must be objects with {keys}")
    return tuple(value)


def _reasoning(value: Any, source: str, where: str) -> str:
    """A node's thinking (schema version 2; absent in older files)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ImportFormatError(source, f"{where} must be text, got {type(value).__name__}")
    return Checker(source).content(value, where)


def _reasoning_seconds(value: Any, source: str, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1e9:
        problem = f"{where}.reasoning_seconds must be a number of seconds, got {value!r:.40}"
        raise ImportFormatError(source, problem)
    return float(value)


def _with_header(
    item: dict[str, Any],
    messages: tuple[PortableMessage, ...],
    root: str | None,
    system_prompt: str,
    source: str,
    where: str,
) -> PortableConversation:
    c = Checker(source)
    title = _text(item, "title", source, where, default="")
    if item.get("title") is None:  # no title at all (an empty one is kept as it is)
        title = derived_title(messages)
    here = f"conversation{where}"
    return PortableConversation(
        title=c.short_text(title, f"{here}.title") or "",
        messages=messages,
        active_root_id=root,
        model=item.get("model") if isinstance(item.get("model"), str) else None,
        system_prompt=system_prompt,
        params=c.params(item.get("params"), f"{here}.params") or {},
        created_at=c.epoch(item.get("created_at"), f"{here}.created_at"),
        updated_at=c.epoch(item.get("updated_at"), f"{here}.updated_at"),
        pinned=c.flag(item.get("pinned"), f"{here}.pinned"),
    )


def derived_title(messages: Sequence[PortableMessage], limit: int = TITLE_CHARS) -> str:
    """The first user message's first line, shortened at a word, for files with no title."""
    first = next((m.content for m in messages if m.role == "user" and m.content.strip()), "")
    return short_title(first, limit)


def _text(item: dict[str, Any], key: str, source: str, where: str, default: str) -> str:
    value = item.get(key, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise ImportFormatError(source, f'conversation{where}."{key}" must be text')
    return Checker(source).content(value, f'conversation{where}."{key}"')


# -- Markdown ---------------------------------------------------------------------------------


def parse_markdown(text: str, source: str = "<markdown>") -> PortableConversation:
    doc = read_markdown(text, source)
    if not doc.messages and "hearth" not in doc.header:  # Hearth's own export may be empty
        problem = (
            "no conversation turns found (expected <!-- hearth:turn ... --> markers "
            "or ## User / ## Assistant headings)"
        )
        raise ImportFormatError(source, problem)
    h = doc.header
    item = {
        "title": h.get("title"),
        "model": h.get("model"),
        "params": h.get("settings"),
        "created_at": h.get("created"),
        "updated_at": h.get("updated"),
    }
    check_counts(0, len(doc.messages), source)
    for m in doc.messages:
        Checker(source, doc.lines.get(m.id)).content(m.content, f"message {m.id}")
    system_prompt = _text(h, "system_prompt", source, "", default="")
    pc = _with_header(item, tuple(doc.messages), doc.active_root_id, system_prompt, source, "")
    check_tree(pc, source, doc.lines)
    return restore_picture_files(pc, source, _images_folder())


__all__ = ["ImportFormatError", "import_files", "parse_json", "parse_markdown", "read_file"]
