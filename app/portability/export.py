"""Export conversations to Markdown and JSON files that `importer` reads back exactly.

Owns both file formats' writing side and the export file names. Does not own reading them
(`app.portability.importer`), the database (`app.store`) or any dialog.

Markdown (readable first, exact on re-import)::

    ---
    hearth: 1
    title: "Trip plan"                        <- every value is JSON (so also valid YAML)
    model: "SmolLM2-135M-Instruct"             <- a name, never a local file's path
    created: "2026-12-02T10:00:00Z"
    updated: "2026-12-02T10:05:00Z"
    system_prompt: "Be brief."
    settings: {"temperature": 0.7, ...}
    ---

    # Trip plan

    <!-- hearth:turn id=1 role=user -->
    ## User

    content, verbatim

    <!-- hearth:turn id=2 parent=1 role=assistant -->
    ## Assistant

    ...

The shown branch comes first; alternatives (other replies, earlier versions of edited turns)
follow under "Other versions". A turn's text is everything between its heading's blank line and
the blank line before the next ``<!-- hearth:`` marker, so "## User" lines, front-matter-looking
lines and code fences inside a message are kept as they are. Should any message contain the
marker text itself, the file uses ``hearth-2`` (``hearth-3``, ...) instead and says so in the
front matter (``markers``). A message that ends inside an open code fence gets the fence closed
for readers; ``closed=N`` tells the importer to drop those N characters again.

A reply's thinking comes first, folded as GitHub shows it, and ``thinking=N`` says that the
N characters inside the block are the thinking (``thought=S``: for how many seconds)::

    <!-- hearth:turn id=2 parent=1 role=assistant thinking=12 thought=3.5 -->
    ## Assistant

    <details><summary>Thinking</summary>

    two plus two

    </details>

    Four.

A reply that did not finish says so in its heading ("## Assistant *(stopped)*"); the marker's
``status=`` is what the importer reads.

JSON: the plain ``{"title", "messages": [{"role", "content"}]}`` form (the shown branch, the
system prompt first) plus ``format``, ``version``, settings, timestamps and the whole ``tree``
with alternatives, statuses, live parameter changes and statistics.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.portability.picture_files import picture_link, write_picture_files
from app.portability.portable import (
    PortableConversation,
    PortableMessage,
    from_store,
    shareable_model,
)
from app.store import Store

FORMAT_NAME = "hearth.conversation"
FORMAT_VERSION = 1
FORMATS = ("markdown", "json")
SUFFIXES = {"markdown": ".md", "json": ".json"}
MARKER_PREFIX = "hearth"
ROLE_HEADINGS = {"user": "User", "assistant": "Assistant", "system": "System"}
UNTITLED = "Untitled"


# -- Markdown ---------------------------------------------------------------------------------


def to_markdown(pc: PortableConversation) -> str:
    prefix = marker_prefix(m.content + m.reasoning for m in pc.messages)
    parts = [_front_matter(pc, prefix), f"# {_one_line(pc.title) or UNTITLED}\n\n"]
    chosen = {pc.active_root_id} | {m.active_child_id for m in pc.messages}
    parts += [_turn(m, prefix, m.id in chosen, alternative=False) for m in pc.branch()]
    others = pc.alternatives()
    if others:
        parts.append(f"<!-- {prefix}:aside -->\n---\n\n# Other versions\n\n")
        parts += [_turn(m, prefix, m.id in chosen, alternative=True) for m in others]
    return "".join(parts)


def marker_prefix(contents: Iterable[str]) -> str:
    """``hearth``, or ``hearth-N`` for the smallest N whose marker no message contains."""
    texts = list(contents)
    prefix, n = MARKER_PREFIX, 1
    while any(f"<!-- {prefix}:" in text for text in texts):
        n += 1
        prefix = f"{MARKER_PREFIX}-{n}"
    return prefix


def _front_matter(pc: PortableConversation, prefix: str) -> str:
    fields: dict[str, Any] = {
        "hearth": FORMAT_VERSION,
        "title": pc.title,
        "model": pc.model,
        "created": iso_time(pc.created_at),
        "updated": iso_time(pc.updated_at),
        "system_prompt": pc.system_prompt,
        "settings": dict(pc.params),
    }
    if prefix != MARKER_PREFIX:
        fields["markers"] = prefix
    lines = [f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in fields.items()]
    return "---\n" + "\n".join(lines) + "\n---\n\n"


def _turn(m: PortableMessage, prefix: str, active: bool, *, alternative: bool) -> str:
    # Attachment names and cited sources are for readers; ``closed=`` has the importer drop
    # them with the fence closer (the JSON export carries them exactly).
    closer = fence_closer(m.content) + documents_trailer(m) + tools_trailer(m)
    attrs = [f"id={m.id}"]
    attrs += [f"parent={m.parent_id}"] if m.parent_id is not None else []
    attrs += [f"role={m.role}"]
    attrs += ["active"] if active else []
    attrs += [f"status={m.status}"] if m.status != "complete" else []
    attrs += [f"closed={len(closer)}"] if closer else []
    attrs += [f"thinking={len(m.reasoning)}"] if m.reasoning else []
    attrs += [f"thought={m.reasoning_seconds:.1f}"] if m.reasoning and m.reasoning_seconds else []
    heading = ROLE_HEADINGS[m.role] + (" (alternative)" if alternative else "")
    heading += f" *({UNFINISHED[m.status]})*" if m.status in UNFINISHED else ""
    marker = f"<!-- {prefix}:turn {' '.join(attrs)} -->"
    return f"{marker}\n## {heading}\n\n{thinking_block(m.reasoning)}{m.content}{closer}\n\n"


THINKING_OPEN = "<details><summary>Thinking</summary>\n\n"
THINKING_CLOSE = "\n\n</details>\n\n"
UNFINISHED = {"cancelled": "stopped", "partial": "partial", "error": "failed"}


def thinking_block(reasoning: str) -> str:
    """A reply's thinking as a folded ``<details>`` block ("" when it has none)."""
    return f"{THINKING_OPEN}{reasoning}{THINKING_CLOSE}" if reasoning else ""


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def fence_closer(content: str) -> str:
    """Text that closes a code fence left open at the end of ``content`` ("" when none is)."""
    open_fence: str | None = None
    for line in content.split("\n"):
        match = _FENCE.match(line.rstrip("\r"))
        if match is None:
            continue
        fence, rest = match.groups()
        if open_fence is None:
            if not (fence[0] == "`" and "`" in rest):  # a backtick fence's info has no `
                open_fence = fence
        elif fence[0] == open_fence[0] and len(fence) >= len(open_fence) and not rest.strip():
            open_fence = None
    if open_fence is None:
        return ""
    return ("" if content.endswith("\n") else "\n") + open_fence


def documents_trailer(m: PortableMessage) -> str:
    """The attached files' names under a user turn, the Sources list under a reply."""
    pictures = ", ".join(picture_link(i) for i in m.images)
    if m.attachments or pictures:
        names = ", ".join(f"`{a.get('name', '')}`" for a in m.attachments)
        attached = f"\n\n*Attached:* {names}" if names else ""
        return attached + (f"\n\n*Pictures:* {pictures}" if pictures else "")
    if m.sources:
        lines = ["**Sources**"]
        for src in m.sources:
            name = str(src.get("file") or "")
            if src.get("collection"):  # a collection's file, not an attachment: say which
                name += f" ({src['collection']})"
            where = ", ".join(x for x in (name, str(src.get("locator") or "")) if x)
            quote = _one_line(str(src.get("text", "")))
            quote = quote[:300] + ("…" if len(quote) > 300 else "")
            lines.append(f"[{src.get('n')}] {where}: “{quote}”")
        return "\n\n" + "\n\n".join(lines)
    return ""


def tools_trailer(m: PortableMessage) -> str:
    """A reply's tool calls and results as a folded block, each result as a plain code block
    (tool output is untrusted: never Markdown or HTML)."""
    if not m.tool_calls:
        return ""
    parts = ["<details><summary>Tools</summary>"]
    for call in m.tool_calls:
        status = str(call.get("status", ""))
        parts.append(f"**{call.get('name', '')}** ({status})")
        parts.append(_code(str(call.get("arguments", "")), "json"))
        parts.append(_code(str(call.get("result", "")), "text"))
    return "\n\n" + "\n\n".join(parts) + "\n\n</details>"


def _code(text: str, info: str) -> str:
    longest = max((len(r) for r in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


# -- JSON -------------------------------------------------------------------------------------


def to_json_data(pc: PortableConversation) -> dict[str, Any]:
    plain = [{"role": "system", "content": pc.system_prompt}] if pc.system_prompt else []
    plain += [_plain_message(m) for m in pc.branch()]
    return {
        "title": pc.title,
        "messages": plain,
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "id": pc.source_id,
        "model": pc.model,
        "system_prompt": pc.system_prompt,
        "params": dict(pc.params),
        "created_at": iso_time(pc.created_at),
        "updated_at": iso_time(pc.updated_at),
        "pinned": pc.pinned,
        "tree": {
            "active_root": pc.active_root_id,
            "nodes": [_json_node(m) for m in pc.messages],
        },
    }


def _plain_message(m: PortableMessage) -> dict[str, Any]:
    # reasoning_content: the field DeepSeek's and vLLM's APIs use for thinking.
    thinking = {"reasoning_content": m.reasoning} if m.reasoning else {}
    return {"role": m.role, "content": m.content, **thinking}


def _json_node(m: PortableMessage) -> dict[str, Any]:
    return {
        "id": m.id,
        "parent": m.parent_id,
        "role": m.role,
        "content": m.content,
        "active_child": m.active_child_id,
        "status": m.status,
        "finish_reason": m.finish_reason,
        "error": m.error,
        "model": m.model,
        "params": None if m.params is None else dict(m.params),
        "param_changes": [dict(c) for c in m.param_changes],
        "stats": None if m.stats is None else dict(m.stats),
        "created_at": iso_time(m.created_at),
        "updated_at": iso_time(m.updated_at),
        "reasoning": m.reasoning,
        "reasoning_seconds": m.reasoning_seconds,
        **({"attachments": [dict(a) for a in m.attachments]} if m.attachments else {}),
        **({"sources": [dict(s) for s in m.sources]} if m.sources else {}),
        **({"tool_calls": [dict(c) for c in m.tool_calls]} if m.tool_calls else {}),
        **({"images": [_embedded(i) for i in m.images]} if m.images else {}),
    }


def _embedded(image: Mapping[str, Any]) -> dict[str, Any]:
    """A picture for a JSON file: its record without this computer's path, its bytes in
    base64 (left out, with the record kept, when the file is gone)."""
    out = {k: image.get(k) for k in ("name", "sha256", "width", "height", "budget")}
    with contextlib.suppress(OSError):
        out["data"] = base64.b64encode(Path(str(image.get("path", ""))).read_bytes()).decode()
    return out


def to_json(pc: PortableConversation) -> str:
    return json.dumps(to_json_data(pc), ensure_ascii=False, indent=2) + "\n"


def iso_time(epoch: float | None) -> str | None:
    """UTC ISO 8601 with microseconds (exact for re-import), e.g. 2026-12-02T10:00:00.5Z.

    None for no time, and for one no calendar holds (1e300, infinity: an older Hearth let such
    values in): exporting the rest of the conversation matters more than that one field."""
    moment = _moment(epoch, UTC)
    if moment is None:
        return None
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def _moment(epoch: float | None, tz: Any = None) -> datetime | None:
    if epoch is None:
        return None
    try:
        return datetime.fromtimestamp(epoch, tz)
    except (OverflowError, OSError, ValueError, TypeError):
        return None


# -- files ------------------------------------------------------------------------------------

# Characters Windows forbids in names, plus controls; reserved device names on Windows.
_FORBIDDEN = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]')
_RESERVED = re.compile(r"^(con|prn|aux|nul|com\d|lpt\d)(\..*)?$", re.IGNORECASE)
_MAX_STEM_BYTES = 180  # well under the 255-byte limit of common file systems, with room


def file_stem(title: str, created_at: float | None) -> str:
    """A name safe on Windows, macOS and Linux that keeps Chinese, e.g. "你好世界 - 2026-12-02"."""
    name = unicodedata.normalize("NFC", _one_line(_FORBIDDEN.sub(" ", title)))
    name = _truncate_utf8(name, _MAX_STEM_BYTES).strip(" .") or UNTITLED
    if _RESERVED.match(name):
        name = f"_{name}"
    if (created := _moment(created_at)) is not None:
        name += " - " + created.strftime("%Y-%m-%d")
    return name


def _truncate_utf8(text: str, limit: int) -> str:
    """At most ``limit`` bytes, cut after a whole word with an ellipsis where it must be cut."""
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    cut = encoded[: limit - len("…".encode())].decode("utf-8", errors="ignore")
    space = cut.rfind(" ")
    if space >= len(cut) // 2 and not text[len(cut)].isspace():
        cut = cut[:space]
    return cut.rstrip(" ,;:-–—") + "…"


class NamePicker:
    """Free file names in ``folder``: ``stem+suffix``, else ``stem (2)+suffix``, ...

    Names are compared without case, as Windows and macOS do. The folder is listed once and a
    counter is kept per name, so exporting thousands of chats that share a title stays linear
    (listing the folder and retrying from 1 per file was cubic: 2,000 "New chat"s took 100 s).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._taken = {p.name.casefold() for p in folder.iterdir()} if folder.is_dir() else set()
        self._next: dict[str, int] = {}

    def pick(self, stem: str, suffix: str) -> Path:
        key = f"{stem}{suffix}".casefold()
        n = self._next.get(key, 1)
        while True:
            name = f"{stem}{suffix}" if n == 1 else f"{stem} ({n}){suffix}"
            n += 1
            if name.casefold() not in self._taken:
                self._taken.add(name.casefold())
                self._next[key] = n
                return self.folder / name


def render(pc: PortableConversation, fmt: str) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"export format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    return to_markdown(pc) if fmt == "markdown" else to_json(pc)


def export_conversations(
    store: Store, conversation_ids: Iterable[str], fmt: str, folder: Path
) -> list[Path]:
    """Write one file per conversation into ``folder`` (created if missing); return the paths."""
    if fmt not in FORMATS:
        raise ValueError(f"export format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    folder.mkdir(parents=True, exist_ok=True)
    names = NamePicker(folder)
    written = []
    for cid in conversation_ids:
        pc = from_store(store, cid)
        # A shared file names the model; its path would tell the reader the user's folders.
        pc = replace(pc, model=shareable_model(pc.model, pc.messages))
        stem = file_stem(pc.title, pc.created_at)
        while True:
            path = names.pick(stem, SUFFIXES[fmt])
            try:
                # newline="" writes "\n" as is on every OS, so content stays byte-identical.
                with path.open("x", encoding="utf-8", newline="") as f:
                    # Markdown's pictures go beside the file, named after it: once it is ours.
                    shown = write_picture_files(pc, path) if fmt == "markdown" else pc
                    f.write(render(shown, fmt))
                break
            except FileExistsError:  # another program made that name meanwhile: next one
                continue
        written.append(path)
    return written
