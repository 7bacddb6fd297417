"""Preprocessing: from the user's messages to the exact prompt text and token ids.

Owns cleaning message text, rendering a conversation with the model's chat template (or the
documented ChatML fallback), counting tokens, and fitting a conversation into the context
window by dropping whole oldest turns, never silently: `FittedPrompt.dropped_messages` says how
many messages were left out. Does not own tokenizers or models (they are passed in), the KV
cache or generation.

Reasoning models: an assistant message's ``reasoning`` goes to the template as
``reasoning_content``, so the template decides whether past thinking stays in the prompt (Qwen3
and R1 drop it). ``thinking`` becomes the template's ``enable_thinking`` switch, offered only
where the template reads it (`supports_thinking_toggle`). `opens_thinking` tells whether the
rendered prompt already opened a ``<think>`` block.

Cleaning choices (`clean_text`):
- Removed: BOM / zero-width no-break space U+FEFF, zero-width space U+200B, word joiner U+2060
  (invisible, carry no meaning for a model, and split words into odd tokens); C0 control
  characters except tab and newline; DEL and C1 controls (they come from mis-decoded text).
- Kept: ZWJ U+200D and ZWNJ U+200C between two visible characters, where they build emoji
  sequences (👨‍👩‍👧) and shape Persian and Indic scripts; only stray ones next to whitespace or
  at either end are dropped. Bidi marks U+200E/U+200F and soft hyphens are kept.
- Newlines: CRLF, CR, NEL, U+2028 and U+2029 become "\\n". Leading/trailing whitespace is kept
  (indented code, deliberate blank lines).
- Lone surrogates (from broken UTF-16 or surrogateescape) become U+FFFD; a well-formed
  surrogate pair becomes the character it encodes.
- Images: a user message's images (`Message.images`) enter the rendered text as libmtmd's
  marker (`MEDIA_MARKER`), one per image before the text, so the chat template places them with
  the message; tokenizing splits the text there and puts each image's ids in (`ImageTokens`:
  the projector's begin text, one image id per image token, its end text). A marker typed by
  the user is removed.
- No Unicode normalisation: NFC/NFKC would rewrite what the user typed ("e" + U+0301, full-width
  forms, ligatures) and the model sees exactly what is shown in the chat.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jinja2 import TemplateError

from engine.errors import ContextOverflowError, InvalidParamsError
from engine.harmony import is_harmony, reopen_reply
from engine.template_sandbox import run_limited
from engine.tools.render import tool_turn_fields, with_tools
from engine.types import Message, Role, ToolSpec

# The fallback when a model ships no chat template: ChatML, the format SmolLM2, Qwen and many
# others were tuned on. Its markers are plain text to a tokenizer that lacks them as special
# tokens, which still beats concatenating messages without any roles.
CHATML_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

MEDIA_MARKER = "<__media__>"  # libmtmd's default: where an image goes in the rendered text


@dataclass(frozen=True)
class ImageTokens:
    """How one attached image enters the prompt: ``begin`` text, its image ids
    (`engine.runners.image_rows.image_ids`), ``end`` text (as libmtmd writes them)."""

    ids: tuple[int, ...]
    begin: str
    end: str


# The images of a request by (sha256, or the path when not given, budget), as
# `engine.image_input` prepared them.
ImageTable = Mapping[tuple[str, int | None], ImageTokens]

_INVISIBLE = re.compile("[\ufeff\u200b\u2060]")
_NEWLINES = re.compile("\r\n|[\r\x85\u2028\u2029]")
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_STRAY_JOINERS = re.compile(r"(?:^|(?<=\s))[\u200c\u200d]+|[\u200c\u200d]+(?=\s|$)")
_SURROGATES = re.compile("[\ud800-\udfff]")


def clean_text(s: str) -> str:
    """Make user text safe for a tokenizer without changing what it says (see module doc)."""
    if _SURROGATES.search(s):
        s = s.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    s = _INVISIBLE.sub("", s)
    s = _NEWLINES.sub("\n", s)  # before dropping controls: CR and NEL are newlines, not junk
    s = _CONTROLS.sub("", s)
    return _STRAY_JOINERS.sub("", s)


def render_prompt(
    tokenizer: Any,
    messages: Sequence[Message],
    *,
    continue_last: bool = False,
    thinking: bool | None = None,
    cancel: threading.Event | None = None,
    tools: Sequence[ToolSpec] = (),
    tool_choice: str = "auto",
) -> str:
    """The prompt text for ``messages``, cleaned, in the model's own chat format.

    Uses ``tokenizer.chat_template`` when there is one, else `CHATML_TEMPLATE`. With
    ``continue_last`` the last message is left open (no end marker) so generation extends it;
    otherwise the assistant's turn is opened. A template that refuses system messages (Gemma's
    raises "System role not supported") gets them folded into the first user message instead.
    ``thinking`` (when not None) is passed as ``enable_thinking``. A harmony reply (gpt-oss)
    being continued is reopened in the channel it stopped in (`engine.harmony.reopen_reply`).
    Raises InvalidParamsError, quoting the template, when it rejects the conversation.
    ``tools`` (unless ``tool_choice`` is "none") reach the template as ``tools=``, or through
    the Hermes fallback when the template ignores them (`engine.tools.render.with_tools`).
    The template runs under `engine.template_sandbox` limits (time, output size, depth);
    ``cancel`` set mid-render raises RenderCancelled.
    """
    if not messages:
        raise InvalidParamsError("a prompt needs at least one message")
    if continue_last and _is_harmony_reply(tokenizer, messages):
        # gpt-oss: its template would close the reply (and drop its thinking): reopen it.
        head = render_prompt(
            tokenizer,
            messages[:-1],
            thinking=thinking,
            cancel=cancel,
            tools=tools,
            tool_choice=tool_choice,
        )
        last = messages[-1]
        return head + reopen_reply(clean_text(last.reasoning), clean_text(last.content))[0]
    conversation = [_turn(m) for m in messages]
    options = {} if thinking is None else {"enable_thinking": thinking}
    conversation, options = with_tools(tokenizer, conversation, options, tools, tool_choice)
    try:
        return _apply_template(tokenizer, conversation, continue_last, options, cancel)
    except TemplateError as exc:
        error = exc
    folded = _fold_system_into_user(conversation)
    if folded is not None:
        try:
            return _apply_template(tokenizer, folded, continue_last, options, cancel)
        except TemplateError:
            pass  # report the template's complaint about the conversation as given
    raise InvalidParamsError(
        f"the model's chat template rejected the conversation: {error}"
    ) from error


def _is_harmony_reply(tokenizer: Any, messages: Sequence[Message]) -> bool:
    last = messages[-1]
    return len(messages) > 1 and last.role == Role.ASSISTANT and is_harmony(tokenizer)


def _turn(message: Message) -> dict[str, Any]:
    content = clean_text(message.content).replace(MEDIA_MARKER, "")
    turn: dict[str, Any] = {
        "role": message.role,
        "content": MEDIA_MARKER * len(message.images) + content,
    }
    if message.reasoning:
        turn["reasoning_content"] = clean_text(message.reasoning)
    turn.update(tool_turn_fields(message))  # an assistant's calls, a tool's answer
    return turn


def _apply_template(
    tokenizer: Any,
    conversation: list[dict[str, str]],
    continue_last: bool,
    options: dict[str, Any],
    cancel: threading.Event | None = None,
) -> str:
    template = None if getattr(tokenizer, "chat_template", None) else CHATML_TEMPLATE
    rendered: str = run_limited(
        lambda: tokenizer.apply_chat_template(
            conversation,
            chat_template=template,
            tokenize=False,
            add_generation_prompt=not continue_last,
            continue_final_message=continue_last,
            **options,
        ),
        cancel=cancel,
    )
    return rendered


def supports_thinking_toggle(tokenizer: Any) -> bool:
    """Whether the model's chat template reads ``enable_thinking`` (Qwen3 does)."""
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, dict):  # named templates: the default one is used
        template = template.get("default")
    return isinstance(template, str) and "enable_thinking" in template


def opens_thinking(prompt: str) -> bool:
    """Whether ``prompt`` ends inside an opened ``<think>`` block (R1 distills and QwQ open
    it in the generation prompt, so the reply starts with thinking)."""
    return prompt.rstrip().endswith("<think>")


def _fold_system_into_user(conversation: list[dict[str, str]]) -> list[dict[str, str]] | None:
    """The conversation with every system message's text prepended to the first user message
    (None when there is no system message to fold, or no user message to fold it into)."""
    system = [m["content"] for m in conversation if m["role"] == Role.SYSTEM]
    rest = [dict(m) for m in conversation if m["role"] != Role.SYSTEM]
    first_user = next((m for m in rest if m["role"] == Role.USER), None)
    if not system or first_user is None:
        return None
    first_user["content"] = "\n\n".join([*system, first_user["content"]])
    return rest


def count_tokens(
    tokenizer: Any, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()
) -> int:
    """Tokens the rendered prompt for ``messages`` takes (with the assistant turn opened),
    the definitions of ``tools`` included."""
    return len(_encode(tokenizer, render_prompt(tokenizer, messages, tools=tools)))


@dataclass(frozen=True)
class FittedPrompt:
    """A conversation fitted into the context window.

    ``messages`` are the cleaned messages actually rendered; ``dropped_messages`` counts the
    messages of the oldest turns left out to make room (0 when everything fit).
    """

    text: str
    ids: list[int]
    messages: tuple[Message, ...]
    dropped_messages: int


def fit_context(
    tokenizer: Any,
    messages: Sequence[Message],
    *,
    context_window: int,
    reserve_tokens: int,
    continue_last: bool = False,
    thinking: bool | None = None,
    cancel: threading.Event | None = None,
    tools: Sequence[ToolSpec] = (),
    tool_choice: str = "auto",
    images: ImageTable | None = None,
) -> FittedPrompt:
    """Render ``messages`` so that prompt tokens + ``reserve_tokens`` <= ``context_window``.

    Keeps every system message and the newest turns; drops whole oldest turns (a user message
    and the replies after it), never the last one (the last user message and, with
    ``continue_last``, the assistant message being continued). Finds the fewest turns to drop
    by binary search over the cut, so a long conversation is rendered O(log turns) times.
    Raises ContextOverflowError, with the token counts, when even the last turn cannot fit.
    ``images``: the ids of the messages' images (an image's tokens count like any others).
    """
    _check_budget(context_window, reserve_tokens)
    cleaned = [
        dataclasses.replace(m, content=clean_text(m.content), reasoning=clean_text(m.reasoning))
        for m in messages
    ]  # a turn's tool calls and tool answer fields stay
    turns = _split_turns(cleaned)
    budget = context_window - reserve_tokens

    def attempt(cut: int) -> FittedPrompt:
        kept = _without_oldest_turns(cleaned, turns, cut)
        text = render_prompt(
            tokenizer,
            kept,
            continue_last=continue_last,
            thinking=thinking,
            cancel=cancel,
            tools=tools,
            tool_choice=tool_choice,
        )
        ids = _encode(tokenizer, text, _images_of(kept, images))
        return FittedPrompt(text, ids, tuple(kept), len(cleaned) - len(kept))

    first = attempt(0)
    if len(first.ids) <= budget:
        return first
    last_cut = len(turns) - 1  # dropping every turn but the last
    smallest = attempt(last_cut) if last_cut > 0 else first
    if len(smallest.ids) > budget:
        error = _overflow(len(smallest.ids), reserve_tokens, context_window, smallest)
        if tools and tool_choice != "none":  # say what the tool definitions take
            bare = render_prompt(tokenizer, smallest.messages, continue_last=continue_last)
            used = len(smallest.ids) - len(_encode(tokenizer, bare))
            raise ContextOverflowError(
                f"{error} (the {len(tools)} tool definitions take {used} tokens of it: "
                "switch some tools off)"
            )
        raise error
    # Invariant: attempt(low - 1) does not fit; attempt(high) fits and is `best`.
    low, high, best = 1, last_cut, smallest
    while low < high:
        middle = (low + high) // 2
        candidate = attempt(middle)
        if len(candidate.ids) <= budget:
            best, high = candidate, middle
        else:
            low = middle + 1
    return best


def _check_budget(context_window: int, reserve_tokens: int) -> None:
    if context_window < 1:
        raise InvalidParamsError(f"context_window must be >= 1, got {context_window}")
    if reserve_tokens < 0:
        raise InvalidParamsError(f"reserve_tokens must be >= 0, got {reserve_tokens}")


def _split_turns(messages: Sequence[Message]) -> list[tuple[int, int]]:
    """[start, end) index ranges of turns: each user message opens one; the messages before
    the first user message (a greeting, say) form a turn of their own. System messages are
    inside the ranges but never dropped (see `_without_oldest_turns`)."""
    starts = [i for i, m in enumerate(messages) if m.role == Role.USER]
    first_other = next((i for i, m in enumerate(messages) if m.role != Role.SYSTEM), None)
    if first_other is None:
        return [(0, len(messages))]  # only system messages: one turn, never dropped
    if not starts or starts[0] > first_other:
        starts.insert(0, first_other)
    ends = [*starts[1:], len(messages)]
    return list(zip(starts, ends, strict=True))


def _without_oldest_turns(
    messages: Sequence[Message], turns: Sequence[tuple[int, int]], cut: int
) -> list[Message]:
    """``messages`` minus the user/assistant messages of the first ``cut`` turns."""
    if cut == 0:
        return list(messages)
    dropped_until = turns[cut - 1][1]
    return [m for i, m in enumerate(messages) if i >= dropped_until or m.role == Role.SYSTEM]


def _overflow(
    prompt_tokens: int, reserve_tokens: int, context_window: int, smallest: FittedPrompt
) -> ContextOverflowError:
    dropped = (
        f" even after leaving out {smallest.dropped_messages} earlier messages"
        if smallest.dropped_messages
        else ""
    )
    return ContextOverflowError(
        f"the prompt needs {prompt_tokens} tokens plus {reserve_tokens} reserved for the reply, "
        f"but the context window holds {context_window} tokens{dropped}; shorten the last "
        "message or the system prompt, or lower the reply length"
    )


def _encode(tokenizer: Any, text: str, images: Sequence[ImageTokens] | None = None) -> list[int]:
    """``text``'s ids; at each `MEDIA_MARKER` the next of ``images`` (None: markers dropped,
    for counting a conversation without its images' encodings)."""

    def encode(piece: str) -> list[int]:
        # add_special_tokens=False: the chat template already wrote any BOS/markers as text.
        return list(tokenizer(piece, add_special_tokens=False)["input_ids"]) if piece else []

    pieces = text.split(MEDIA_MARKER)
    if images is None or len(pieces) == 1:
        return encode("".join(pieces))
    if len(pieces) - 1 != len(images):  # a template that repeats or drops a message's content
        raise InvalidParamsError(
            f"the chat template placed {len(pieces) - 1} images for {len(images)} attached"
        )
    ids = encode(pieces[0])
    for image, piece in zip(images, pieces[1:], strict=True):
        # As libmtmd: the begin and end texts are tokenized apart from the prompt around them.
        ids += encode(image.begin) + list(image.ids) + encode(image.end) + encode(piece)
    return ids


def _images_of(messages: Sequence[Message], images: ImageTable | None) -> list[ImageTokens] | None:
    """The kept messages' images, in order, from ``images`` (None when there is no table)."""
    if images is None:
        return None
    try:
        return [images[(ref.sha256 or ref.path, ref.budget)] for m in messages for ref in m.images]
    except KeyError:
        raise InvalidParamsError("an attached image was not encoded for this model") from None
