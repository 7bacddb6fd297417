"""Values that cross the engine boundary: requests, sampling parameters and streamed events.

Owns the frozen dataclasses and enums the app, the server and the remote backend share with the
local engine. Holds no torch and no I/O, so `import engine.types` stays light for the GUI.
Does not own how any of these are produced; see `engine.engine` and `engine.generate`.
`SamplingParams` and the table of parameters live in `engine.params` and are re-exported here.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol, runtime_checkable

from engine.errors import InvalidParamsError

# Re-exported: the app may import engine.types, not engine.params.
from engine.params import LOCAL_PARAMS as LOCAL_PARAMS
from engine.params import PARAM as PARAM
from engine.params import PARAMS as PARAMS
from engine.params import Param as Param
from engine.params import SamplingParams as SamplingParams
from engine.params import Slider as Slider


class Role(StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"  # a tool's result, answering the assistant's call ``tool_call_id``


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One function the model may call, as OpenAI's ``tools`` entries describe it.

    ``parameters`` is the JSON Schema of the arguments as JSON text: frozen values stay
    hashable, and the schema reaches the chat template and the grammar unchanged.
    """

    name: str
    description: str = ""
    parameters: str = '{"type": "object", "properties": {}}'


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A complete call the model made. ``arguments`` is JSON text of an object."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ResponseFormat:
    """OpenAI's ``response_format``: ``kind`` is "json_object" or "json_schema".

    ``schema`` is the JSON Schema as JSON text (kind "json_schema" only); ``strict`` asks for
    every reply to match it, which the engine enforces at sampling time.
    """

    kind: str
    schema: str = ""
    name: str = ""
    strict: bool = True


@dataclass(frozen=True, slots=True)
class ImageRef:
    """An image attached to a user turn: the file it is read from (for a chat, the copy kept in
    the data folder under its hash) and the sha256 of its bytes, which keys the embeddings
    cache with the projector and the budget. ``budget`` is the image-token budget a projector
    with a choice takes (Gemma 4: 70, 140, 280, 560 or 1,120); None takes its default."""

    path: str
    sha256: str = ""
    budget: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.path, str) or not self.path:
            raise InvalidParamsError("an image needs a file path")
        if self.budget is not None and not 1 <= self.budget <= 16384:
            raise InvalidParamsError(f"image budget must be in [1, 16384], got {self.budget}")


@dataclass(frozen=True, slots=True)
class Message:
    """One chat turn. ``role`` is one of `Role`'s values.

    ``reasoning`` is an assistant turn's thinking (the ``<think>`` block, kept apart from the
    answer). It reaches the chat template as ``reasoning_content``: templates that keep
    reasoning in history render it, the others (Qwen3, R1 for past turns) leave it out.
    """

    role: str
    content: str
    reasoning: str = ""
    # An assistant turn's calls, and a tool turn's answer to one of them (``tool_call_id``,
    # and the tool's ``name``), rendered by the model's own chat template.
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""
    name: str = ""
    # Images of a user turn, in order; the chat template places each at its image marker
    # before the text (`engine.vision`).
    images: tuple[ImageRef, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "images", tuple(self.images))
        if self.images and self.role != Role.USER:
            raise InvalidParamsError(f"only a user message can carry images, not {self.role!r}")
        if self.role not in {r.value for r in Role}:
            raise InvalidParamsError(
                f"message role must be one of system/user/assistant/tool, got {self.role!r}"
            )
        if not isinstance(self.content, str):
            raise InvalidParamsError(
                f"message content must be text, got {type(self.content).__name__}"
            )
        if not isinstance(self.reasoning, str):
            raise InvalidParamsError(
                f"message reasoning must be text, got {type(self.reasoning).__name__}"
            )


class LiveParams:
    """Thread-safe holder of the current `SamplingParams`.

    The GUI thread calls `set` when a slider moves; the generation loop calls `get` once per
    token, so a change applies from the next token. The lock is held only to swap a reference,
    never across a forward pass.
    """

    def __init__(self, params: SamplingParams) -> None:
        self._lock = threading.Lock()
        self._params = params
        self._version = 0

    def get(self) -> SamplingParams:
        with self._lock:
            return self._params

    def snapshot(self) -> tuple[int, SamplingParams]:
        """The current version counter and params (the loop notices changes by version)."""
        with self._lock:
            return self._version, self._params

    def set(self, params: SamplingParams) -> None:
        with self._lock:
            if params != self._params:
                self._params = params
                self._version += 1


MAX_TOP_LOGPROBS = 20  # OpenAI's limit for ``top_logprobs``


@dataclass(frozen=True, slots=True)
class GenerationRequest:
    """One generation: the conversation so far and how to sample the reply.

    ``conversation_id`` keys the engine's prefix cache: turns of one conversation reuse the
    KV cache of the shared prefix. ``continue_last`` continues the final assistant message
    instead of starting a new one ("continue" after a reply stopped at max tokens).
    ``thinking`` is passed to the chat template as ``enable_thinking`` (Qwen3); None leaves
    the template's default.
    """

    messages: tuple[Message, ...]
    params: SamplingParams = field(default_factory=SamplingParams)
    conversation_id: str | None = None
    continue_last: bool = False
    thinking: bool | None = None
    # Tools the model may call; ``tool_choice`` is "auto", "none", "required" or a tool's name.
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: str = "auto"
    parallel_tool_calls: bool = True
    response_format: ResponseFormat | None = None
    # Log probabilities of the reply's tokens: None off, N >= 0 with the N likeliest
    # alternatives at each position (OpenAI's ``logprobs`` / ``top_logprobs``, at most 20).
    logprobs: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "messages", tuple(self.messages))
        if self.logprobs is not None and not 0 <= self.logprobs <= MAX_TOP_LOGPROBS:
            raise InvalidParamsError(
                f"top_logprobs must be in [0, {MAX_TOP_LOGPROBS}], got {self.logprobs}"
            )
        if self.logprobs is not None and self.params.num_beams > 1:
            raise InvalidParamsError("logprobs needs num_beams 1 (beam search reports none)")
        object.__setattr__(self, "tools", tuple(self.tools))
        if not self.messages:
            raise InvalidParamsError("a request needs at least one message")
        if self.continue_last and self.messages[-1].role != Role.ASSISTANT:
            raise InvalidParamsError("continue_last needs the last message to be the assistant's")


class FinishReason(StrEnum):
    STOP = "stop"  # EOS token or a stop string
    LENGTH = "length"  # max_new_tokens reached (or the context window is full)
    CANCELLED = "cancelled"  # the caller set the cancel event
    ERROR = "error"  # a backend failed mid-stream; the partial text is kept
    TOOL_CALLS = "tool_calls"  # the reply ended in tool calls (`Finished.tool_calls`)
    CONTENT_FILTER = "content_filter"  # the safety review flagged it (`Finished.safety`)


@dataclass(frozen=True, slots=True)
class Stats:
    """Figures for one generation. Times in seconds."""

    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0  # of prompt_tokens, how many the prefix cache served
    completion_tokens: int = 0
    ttft_s: float = 0.0  # request start to first token sampled
    prefill_tokens_per_s: float = 0.0
    decode_tokens_per_s: float = 0.0
    total_s: float = 0.0
    context_window: int = 0
    dropped_messages: int = 0  # whole oldest turns dropped to fit the context

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


@dataclass(frozen=True, slots=True)
class PromptPrepared:
    """First event of a generation: how the conversation was fitted into the context."""

    prompt_tokens: int
    cached_prompt_tokens: int
    context_window: int
    dropped_messages: int  # whole oldest turns left out; never silent
    # The rendered prompt ends inside an opened <think> block (R1 distills, QwQ): the reply
    # starts with thinking and only its closing tag is generated.
    opens_thinking: bool = False
    # Of the cached tokens, those read back from a cache saved on disk by an earlier session
    # (a chat reopened after a restart): "context 3,912 tokens (3,890 restored)".
    restored_prompt_tokens: int = 0


@dataclass(frozen=True, slots=True)
class TextDelta:
    """New text. Concatenating every delta's ``text`` gives the full reply (its answer, when
    the thinking is sent apart as `ReasoningDelta`s)."""

    text: str
    token_index: int  # completion tokens generated so far, including this delta's


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """New thinking text sent apart from the answer (a remote endpoint's
    ``reasoning_content``, or a local harmony model's analysis channel: gpt-oss). Other local
    models stream thinking inside `TextDelta`s as ``<think>…</think>``; the app splits those."""

    text: str
    token_index: int


@dataclass(frozen=True, slots=True)
class TokenLogprob:
    """One reply token's log probability under the model (its raw logits' log-softmax, before
    temperature and the other filters, as vLLM reports them) and the ``top`` likeliest
    alternatives at that position as (text, logprob), likeliest first. Sent only when the
    request asks for `GenerationRequest.logprobs`, before the token's text events."""

    token_index: int  # completion tokens generated so far, including this one
    token_id: int
    text: str  # the token decoded alone (a piece of a UTF-8 character decodes to U+FFFD)
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, slots=True)
class ParamsApplied:
    """The live parameters changed; they apply from completion token ``token_index`` on."""

    token_index: int
    params: SamplingParams


@dataclass(frozen=True, slots=True)
class SafetyVerdict:
    """What a safety review (`engine.safety`) said of a prompt or a reply: a guard model's
    ``Safety:`` / ``Categories:`` / ``Refusal:`` lines, or a blocklist match. ``safety`` is
    "Safe", "Unsafe", "Controversial" (Qwen3Guard's words), or "Unreviewed" when the guard could
    not be asked (``error`` says why) and the review was not required."""

    safety: str
    categories: tuple[str, ...] = ()  # Qwen3Guard's names ("Violent", "PII"), or "Blocklist"
    stage: str = "prompt"  # "prompt" or "reply"
    source: str = "guard"  # "guard" or "blocklist"
    refusal: bool | None = None  # reply checks: did the reply refuse the user's request
    error: str = ""  # with "Unreviewed": what went wrong, user-facing

    @property
    def category(self) -> str:
        """The first category named, "" when none."""
        return self.categories[0] if self.categories else ""

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


@dataclass(frozen=True, slots=True)
class Finished:
    """Last event of every generation."""

    reason: FinishReason
    stats: Stats
    text: str
    token_ids: tuple[int, ...] = ()
    error: str | None = None  # with reason ERROR: what went wrong, user-facing
    tool_calls: tuple[ToolCall, ...] = ()  # the complete calls, with reason TOOL_CALLS
    # The safety review's last verdict, when one ran; with reason CONTENT_FILTER the one that
    # flagged (``text`` then holds only what was shown before it).
    safety: SafetyVerdict | None = None


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A streamed piece of tool call ``index``, as OpenAI streams ``tool_calls``.

    The first piece of a call carries its ``id`` and ``name``; later pieces carry only the
    next fragment of ``arguments`` (JSON text). Partial calls never arrive as `TextDelta`.
    """

    index: int
    id: str
    name: str
    arguments: str
    token_index: int


Event = (
    PromptPrepared
    | TextDelta
    | ReasoningDelta
    | ParamsApplied
    | ToolCallDelta
    | TokenLogprob
    | Finished
)


@dataclass(frozen=True, slots=True)
class LoadProgress:
    """Model loading progress. ``fraction`` in [0, 1]; None when the stage has no measure."""

    stage: str  # "resolve", "convert", "load", "warmup", "ready"; "reload" after an idle unload
    fraction: float | None
    message: str
    # Seconds this stage still needs, where the reporter can know it (bytes left at a measured
    # rate); None otherwise, and the app then estimates from how fast ``fraction`` moves. The
    # app never shows a step's fraction going back: a lower fraction in the same stage counts
    # as a new step only when its message changes too (otherwise the higher one is held).
    eta_s: float | None = None


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What is loaded, for the status bar and the server's /v1/models."""

    name: str
    source: str  # "bundled", a folder, a .gguf path or a base URL
    backend: str  # "torch", "onnx", "remote"
    device: str  # "cpu", "cuda:0", "remote"
    dtype: str  # "float32", "float16", "bfloat16", "q4_1", ...
    context_window: int
    # `SamplingParams` fields this backend honours (`engine.params`); the app greys the rest.
    supported_params: frozenset[str] = LOCAL_PARAMS
    # Set when a local model runs on a slower path than it could (e.g. the float32 torch path
    # because the fast path cannot run this file): the reason, in a sentence. "" otherwise.
    slow_path_reason: str = ""
    # Set when the CPU fast path runs on ONNX Runtime's kernels alone because Hearth's C
    # kernel does not run on this machine (`engine.kernels.platforms`): why, in a sentence.
    kernel_note: str = ""
    # The chat template takes ``enable_thinking`` (Qwen3): thinking can be switched off.
    thinking_toggle: bool = False
    # The file's own quantisation label as people know it ("Q4_K_M"); "" when the file does
    # not say. ``dtype`` then holds the detail (the tensors' mix, "q4_k+q6_k").
    quant: str = ""
    # The model file or folder actually opened ("bundled" resolved to its file); "" if remote.
    path: str = ""
    # Images: "" when the model can read them (a vision projector is loaded, or a remote
    # endpoint, which is sent them as they are); else why not, in a sentence the app shows
    # ("this model has no vision projector — download its mmproj").
    vision_refusal: str = "this model has no vision projector"
    # The image-token budgets the projector offers (Gemma 4's 70 ... 1,120), its default first;
    # () when it has no choice. ``image_tokens`` is a typical image's cost at the default.
    image_budgets: tuple[int, ...] = ()
    image_tokens: int = 0


@runtime_checkable
class Backend(Protocol):
    """What the app, the server and the CLI drive: the local `Engine` and `RemoteEngine`.

    ``generate`` is a synchronous generator; call it on one worker thread. ``cancel`` is
    checked every token; ``live`` (when given) is read every token.
    """

    @property
    def info(self) -> ModelInfo: ...

    def generate(
        self,
        request: GenerationRequest,
        cancel: threading.Event | None = None,
        live: LiveParams | None = None,
    ) -> Iterator[Event]: ...

    def count_tokens(self, messages: tuple[Message, ...]) -> int: ...

    def close(self) -> None: ...
