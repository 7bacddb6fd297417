"""gpt-oss's "harmony" reply format, split into thinking and answer while it streams.

A harmony reply is a run of messages, each a header and a body::

    <|channel|>analysis<|message|>…thinking…<|end|>
    <|start|>assistant<|channel|>final<|message|>…answer…<|return|>

(the prompt already wrote the first ``<|start|>assistant``). The ``analysis`` channel is the
model's thinking, ``final`` is the answer. ``commentary`` carries tool calls (a header with a
recipient, ``to=functions.x``): never shown, collected whole in ``calls``; a commentary
message without a recipient is a preamble meant for the user and counts as answer.
``<|end|>`` ends one message, not the turn: the turn ends at ``<|return|>`` (answer given) or
``<|call|>`` (a tool call), which is why those two, and not ``<|end|>``, stop generation for
a harmony model (as in gpt-oss's generation config and llama.cpp).

Owns recognising a harmony vocabulary (`is_harmony`), the turn-ending token names
(`HARMONY_TURN_END`), and `HarmonySplitter`: text decoded *with* the markers in, of any
chunking (a marker may be split across deltas), ``("reasoning" | "answer", text)`` pieces out.
No raw marker is ever released. Pure Python; does not own decoding tokens
(`engine.detokenizer`), the generation loop (`engine.generate`) or showing anything.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from engine.markers import first_marker, partial_marker_len

START, CHANNEL, MESSAGE, CONSTRAIN = "<|start|>", "<|channel|>", "<|message|>", "<|constrain|>"
END, RETURN, CALL = "<|end|>", "<|return|>", "<|call|>"
MARKERS = (START, CHANNEL, MESSAGE, CONSTRAIN, END, RETURN, CALL)
# The tokens that end a harmony turn; <|end|> only ends one message of it.
HARMONY_TURN_END = (RETURN, CALL)
# A vocabulary with all of these speaks harmony (o200k_harmony: gpt-oss).
_SIGNATURE = (CHANNEL, MESSAGE, START, RETURN, CALL)

Kind = Literal["reasoning", "answer"]
Piece = tuple[Kind, str]


def _token_id(tokenizer: Any, token: str) -> int | None:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        found = backend.token_to_id(token)
        return None if found is None else int(found)
    get_vocab = getattr(tokenizer, "get_vocab", None)  # wrappers that only render prompts
    value = get_vocab().get(token) if get_vocab is not None else None
    return None if value is None else int(value)


def is_harmony(tokenizer: Any) -> bool:
    """Whether ``tokenizer``'s vocabulary has harmony's markers (gpt-oss)."""
    return all(_token_id(tokenizer, t) is not None for t in _SIGNATURE)


def harmony_turn_end_ids(tokenizer: Any) -> frozenset[int]:
    """Ids of ``<|return|>`` and ``<|call|>`` (empty for a non-harmony vocabulary)."""
    found = (_token_id(tokenizer, t) for t in HARMONY_TURN_END)
    return frozenset(i for i in found if i is not None)


class _State(StrEnum):
    START = "start"  # nothing decided: a header, or plain text (a prompt that opened the body)
    HEADER = "header"  # role / channel / recipient, up to <|message|>
    BODY = "body"  # a message's text, up to <|end|>, <|return|>, <|call|> or a new header
    DONE = "done"  # <|return|> or <|call|>: the turn is over


class HarmonySplitter:
    """Incremental split of one harmony reply (see the module docstring).

    ``feed`` returns the pieces that are certain now, in order; ``reasoning`` and ``answer``
    hold everything released so far. Text that could still become a marker is held back
    (fewer than ``len("<|constrain|>")`` characters). A reply that does not start with a
    header is plain answer text until a marker appears.
    """

    def __init__(self, *, resume: Kind | None = None) -> None:
        """``resume``: the prompt reopened a message of that kind (`reopen_reply`): the reply
        starts inside its body."""
        self.reasoning = ""
        self.answer = ""
        self._state = _State.START if resume is None else _State.BODY
        self._held = ""
        self._header = ""
        self._kind: Kind | None = resume  # where the current body goes; None: left out
        # Tool calls (a commentary message addressed ``to=functions.NAME``): complete ones as
        # (NAME, arguments JSON text), for `engine.generate` to turn into ToolCallDeltas.
        self.calls: list[tuple[str, str]] = []
        self._recipient: str | None = None
        self._call_body = ""

    def feed(self, text: str) -> list[Piece]:
        self._held += text
        pieces: list[Piece] = []
        while self._held and self._state != _State.DONE:
            before = (self._state, len(self._held))
            self._step(pieces)
            if (self._state, len(self._held)) == before:
                break  # waiting for more text
        if self._state == _State.DONE:
            self._held = ""
        return pieces

    def finish(self) -> list[Piece]:
        """The reply ended: release a body's held text; an unfinished header is dropped."""
        held, self._held = self._held, ""
        pieces: list[Piece] = []
        if self._state in (_State.BODY, _State.START):
            self._emit(pieces, held)
        self._end_call()
        self._state = _State.DONE
        return pieces

    def _step(self, pieces: list[Piece]) -> None:
        if self._state == _State.START:
            self._step_start()
        elif self._state == _State.HEADER:
            self._step_header()
        else:
            self._step_body(pieces)

    def _step_start(self) -> None:
        held = self._held
        if any(held.startswith(m) for m in (START, CHANNEL, MESSAGE)):
            self._state = _State.HEADER
        elif not any(m.startswith(held) for m in (START, CHANNEL, MESSAGE)):
            self._state, self._kind = _State.BODY, "answer"  # no header: plain text
        # else: a prefix of a header marker so far: wait

    def _step_header(self) -> None:
        at = self._held.find(MESSAGE)
        if at < 0:  # keep what could be the start of <|message|>
            keep = partial_marker_len(self._held, (MESSAGE,))
            self._header += self._held[: len(self._held) - keep]
            self._held = self._held[len(self._held) - keep :]
            return
        self._header += self._held[:at]
        self._held = self._held[at + len(MESSAGE) :]
        self._kind = _route(self._header)
        self._recipient = _recipient(self._header) if self._kind is None else None
        self._header = ""
        self._state = _State.BODY

    def _step_body(self, pieces: list[Piece]) -> None:
        at, marker = first_marker(self._held, MARKERS)
        if marker is None:
            keep = partial_marker_len(self._held, MARKERS)
            self._emit(pieces, self._held[: len(self._held) - keep])
            self._held = self._held[len(self._held) - keep :]
            return
        self._emit(pieces, self._held[:at])
        if marker not in (MESSAGE, CONSTRAIN):  # the message ended
            self._end_call()
        if marker in (RETURN, CALL):
            self._state, self._held = _State.DONE, ""
        elif marker == END:
            self._state, self._held = _State.HEADER, self._held[at + len(END) :]
        elif marker in (MESSAGE, CONSTRAIN):  # stray in a body: dropped, the body goes on
            self._held = self._held[at + len(marker) :]
        else:  # a new header without <|end|> first: read it as one
            self._state, self._held = _State.HEADER, self._held[at:]

    def _end_call(self) -> None:
        if self._recipient is not None:
            self.calls.append((self._recipient, self._call_body.strip()))
        self._recipient, self._call_body = None, ""

    def _emit(self, pieces: list[Piece], text: str) -> None:
        if self._kind is None and self._recipient is not None:
            self._call_body += text
        if not text or self._kind is None:
            return
        if self._kind == "reasoning":
            self.reasoning += text
        else:
            self.answer += text
        if pieces and pieces[-1][0] == self._kind:
            pieces[-1] = (self._kind, pieces[-1][1] + text)
        else:
            pieces.append((self._kind, text))


def _route(header: str) -> Kind | None:
    """Where a message with this header goes: its channel, unless it is addressed to a tool."""
    if " to=" in header or header.startswith("to=") or f"{START}to=" in header:
        return None  # a tool call (commentary to=functions.x): left out
    channel = header.rsplit(CHANNEL, 1)[1] if CHANNEL in header else ""
    name = channel.split(CONSTRAIN, 1)[0].strip().split(" ", 1)[0]
    if name == "analysis":
        return "reasoning"
    if name in ("final", "commentary", ""):
        return "answer"
    return None  # an unknown channel: never shown raw


def _recipient(header: str) -> str | None:
    """The function a header addresses (``to=functions.get_weather`` -> "get_weather")."""
    at = header.find("to=")
    if at < 0:
        return None
    # "to= <|message|>" (a model that wrote no name) names nothing: never an IndexError.
    words = header[at + len("to=") :].split("<|", 1)[0].split()
    name = words[0].removeprefix("functions.") if words else ""
    return name or None


def reopen_reply(reasoning: str, content: str) -> tuple[str, Kind]:
    """The prompt text that reopens an unfinished harmony reply after ``<|start|>assistant``,
    and the kind of message it leaves open. gpt-oss's own template cannot do this: it closes
    the turn with ``<|return|>`` and renders thinking only from a ``thinking`` field."""
    if not content:
        return f"{CHANNEL}analysis{MESSAGE}{reasoning}", "reasoning"
    thought = f"{CHANNEL}analysis{MESSAGE}{reasoning}{END}{START}assistant" if reasoning else ""
    return f"{thought}{CHANNEL}final{MESSAGE}{content}", "answer"


def split_harmony(text: str) -> tuple[str, str]:
    """(reasoning, answer) of a whole harmony reply, as `HarmonySplitter` streams it."""
    splitter = HarmonySplitter()
    splitter.feed(text)
    splitter.finish()
    return splitter.reasoning, splitter.answer
