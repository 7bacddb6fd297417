"""The local engine: one model, its tokenizer and its KV caches, driven from one thread.

Owns loading (via `engine.loader`), the runner's life cycle (warm-up, unload after idle,
reload), the per-conversation prefix caches, and dispatching each request to the streaming
loop (`engine.generate`) or to beam search (`engine.beam`). Implements `engine.types.Backend`.
Which forward implementation runs the model (torch, or a fast path Runner), the vision
projector, the saved-cache store and the info notes are decided in `engine.assembly`.

Not thread-safe by design: the model, the cache and the tokenizer belong to ONE worker thread
(the app's single-worker executor; the server's engine thread). Call every method from it.

Memory: the live KV cache grows with the conversation (SmolLM2-135M float32: 46 KB per token,
~380 MB at the default 8192-token window); up to ``prefix_cache_size`` other conversations'
caches are parked as copies (`engine.kv_cache.ConversationCaches`). With ``saved_caches_bytes``
a left conversation's cache is also written to disk (`engine.runners.kv_store`, in budget) and
a chat reopened after a restart reads it back: its next turn prefills only the new tokens.

Speculative decoding (prompt lookup, `engine.speculative`) is off unless asked for
(``Engine(speculative=True)``, or ``engine.speculative`` between requests; the app asks): greedy
and seeded replies are bitwise the same either way (sampled ones draw from the same rows),
quoting ones (documents, code edits) gain 2-2.6x on a real Qwen2.5-0.5B, and a per-reply
ledger stops drafting where it costs more than it saves.
The OMP_WAIT_POLICY default is set in `engine/__init__.py`, before anything imports torch.

Images: with a vision projector (``mmproj=``, or an ``mmproj*.gguf`` found beside the model) a
request's images are encoded (once: `engine.vision`'s cache) and join the prompt as image ids
(`engine.image_input`); ``last_images`` reports the last request's image tokens and encode
time. Without one, a request with images is refused with ``info.vision_refusal``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from engine.assembly import (
    file_quant,
    kernel_note,
    make_runner,
    open_vision,
    release_memory,
    saved_store,
    set_torch_threads,
)
from engine.errors import EngineClosedError, InvalidParamsError, UnsupportedModelError
from engine.generate import generate as stream_reply
from engine.image_input import ImageReport
from engine.kv_cache import ConversationCaches, settle
from engine.loader import LoadedModel, load_model
from engine.reply_taps import marking_restored, recording_speed
from engine.runners.base import Runner
from engine.text import count_tokens, supports_thinking_toggle
from engine.types import (
    Event,
    GenerationRequest,
    ImageRef,
    LiveParams,
    LoadProgress,
    Message,
    ModelInfo,
    ToolSpec,
)

BACKENDS = ("auto", "torch", "onnx")


class Engine:
    """A local model ready to generate (see the module docstring)."""

    def __init__(
        self,
        model: str = "bundled",
        *,
        dtype: str = "auto",
        device: str = "auto",
        backend: str = "auto",
        context_window: int | None = None,
        progress: Callable[[LoadProgress], None] | None = None,
        prefix_cache_size: int = 4,
        speculative: bool = False,
        threads: int | None = None,
        saved_caches_bytes: int = 0,
        mmproj: str | Path | None = None,
    ) -> None:
        if backend not in BACKENDS:
            raise InvalidParamsError(
                f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}"
            )
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise InvalidParamsError(f"threads must be a whole number >= 1, got {threads!r}")
        self._threads = threads  # CPU threads (torch intra-op, ONNX Runtime); None: automatic
        report = progress or (lambda _p: None)
        # Read per request, so it may be flipped between requests (bench, tests).
        self.speculative = speculative
        self._loaded: LoadedModel = load_model(
            model, dtype=dtype, device=device, context_window=context_window, progress=report
        )
        self._slow_reason = ""
        self._choice = (backend, dtype)  # kept to rebuild the runner after an idle unload
        self._report = report
        self._runner: Runner | None = self._make_runner(backend, dtype, report)
        report(LoadProgress("warmup", None, "Warming up"))
        self._warm_up()
        set_torch_threads(threads)  # after the loader's choice and the warm-up, which it overrides
        # Conversation caches on disk (engine.runners.kv_store): off unless given a byte budget.
        store = saved_store(self._loaded, self.runner, saved_caches_bytes)
        self._caches = ConversationCaches(prefix_cache_size, store)
        self._closed = False
        self._active: Iterator[Event] | None = None  # the generation that owns the runner
        self._last_used = time.monotonic()  # for unload_if_idle
        # Called (on the engine thread) when the model is unloaded: holders of the runner (the
        # server's batch of KV slots) drop it, so its memory is really returned.
        self.unload_listeners: list[Callable[[], None]] = []
        loaded = self._loaded
        self.last_images = ImageReport()  # the last request's images (the CLI's done record)
        self._vision, refusal = open_vision(loaded.spec, self.runner, mmproj)
        self._info = ModelInfo(
            name=loaded.spec.name,
            source=loaded.spec.source,
            backend=self.runner.backend,
            device=self.runner.device,
            dtype=self.runner.dtype,
            context_window=loaded.context_window,
            thinking_toggle=supports_thinking_toggle(loaded.tokenizer),
            slow_path_reason=self._slow_reason,  # supported_params: every row of engine.params
            kernel_note=kernel_note(self.runner),
            quant=file_quant(loaded.spec),
            path=str(loaded.spec.path),
            vision_refusal=refusal,
            image_budgets=self._vision.budgets if self._vision else (),
            image_tokens=self._vision.typical_tokens() if self._vision else 0,
        )
        report(LoadProgress("ready", 1.0, f"{loaded.spec.name} ready on {self.runner.device}"))

    def _make_runner(
        self, backend: str, dtype: str, report: Callable[[LoadProgress], None]
    ) -> Runner:
        """The forward implementation (`engine.assembly.make_runner`); keeps why a slower one
        was taken in ``_slow_reason``."""
        runner, reason = make_runner(self._loaded, backend, dtype, report, self._threads)
        if reason:
            self._slow_reason = reason
        return runner

    @property
    def runner(self) -> Runner:
        """The forward implementation; after `unload` the first use reloads it."""
        if self._runner is None:
            self._reload()
        assert self._runner is not None
        return self._runner

    @runner.setter
    def runner(self, runner: Runner) -> None:
        self._runner = runner

    @property
    def unloaded(self) -> bool:
        """The model was unloaded after idle; the next generation reloads it first."""
        return self._runner is None and not self._closed

    def unload(self) -> bool:
        """Free the model's memory (runner, weights, KV caches; the tokenizer stays).

        The live conversation's cache is saved first when saving is on. The next `generate`
        reloads (with progress reports "Reloading ..."), so callers just wait. Returns whether
        anything was unloaded."""
        if self._closed or self._runner is None:
            return False
        self._close_active()
        self.save_caches()
        self._caches.clear()
        self._runner = None
        for listener in self.unload_listeners:
            listener()
        # The torch weights load lazily (LoadedModel.model): dropping them reloads on use.
        self._loaded._model = None
        release_memory()
        return True

    def settle(self) -> int:
        """Prepare the live cache for the next turn (call when a reply has ended and the engine
        is otherwise idle): see `engine.kv_cache.settle`. Returns the tokens re-run."""
        if self._closed or self._runner is None:
            return 0
        self._close_active()
        return settle(self._runner)

    def touch(self) -> None:
        """Mark the engine used now (the server's batch runs without `generate`)."""
        self._last_used = time.monotonic()

    def unload_if_idle(self, idle_s: float) -> bool:
        """`unload` when no generation started for ``idle_s`` seconds."""
        if time.monotonic() - self._last_used < idle_s:
            return False
        return self.unload()

    def _reload(self) -> None:
        self._check_open()
        name, report = self._loaded.spec.name, self._report
        report(LoadProgress("reload", None, f"Reloading {name} (unloaded while idle)"))
        self._runner = self._make_runner(*self._choice, report)
        self._warm_up()
        set_torch_threads(self._threads)
        report(LoadProgress("ready", 1.0, f"{name} ready on {self._runner.device}"))

    def _warm_up(self) -> None:
        """One tiny forward so the first request does not pay for lazy kernel set-up."""
        ids = self._loaded.tokenizer.encode("Hello", add_special_tokens=False) or [0]
        self.runner.extend(ids[:4], last_only=True)
        self.runner.extend(ids[:1], last_only=True)  # a decode step: CUDA graphs capture here
        self.runner.reset()

    # --- Backend -------------------------------------------------------------------------

    @property
    def info(self) -> ModelInfo:
        return self._info

    @property
    def tokenizer(self) -> object:
        return self._loaded.tokenizer

    @property
    def eos_ids(self) -> frozenset[int]:
        return self._loaded.eos_ids

    @property
    def loaded(self) -> LoadedModel:
        return self._loaded

    def generate(
        self,
        request: GenerationRequest,
        cancel: threading.Event | None = None,
        live: LiveParams | None = None,
    ) -> Iterator[Event]:
        """Stream events for ``request``: PromptPrepared, TextDelta..., Finished (exactly one).

        One generation at a time: starting a new one closes a previous stream that was not
        run to its end (its cache stays consistent: every extend() completes or none starts).
        """
        self._check_open()
        self._close_active()
        self._last_used = time.monotonic()
        params = live.get() if live is not None else request.params
        has_images = any(m.images for m in request.messages)
        if has_images and (self._vision is None or params.num_beams > 1):
            raise UnsupportedModelError(self.info.vision_refusal or "beam search takes no images")
        if params.num_beams > 1:
            from engine.beam import beam_generate
            from engine.tools.grammar import constrains

            if constrains(request):  # beam search scores whole beams and applies no token mask
                raise InvalidParamsError(
                    "num_beams must be 1 with response_format or a forced tool call: "
                    "beam search does not apply the output grammar"
                )

            self._active = beam_generate(
                self._loaded, request, params, cancel or threading.Event(), self.runner
            )
            return self._active
        self._caches.switch_to(self.runner, request.conversation_id)
        restored = self._caches.restored
        images = None
        self.last_images = ImageReport()
        if has_images and self._vision is not None:
            images, self.last_images = self._vision.prepare(request.messages, self.runner)
        events = stream_reply(
            self.runner,
            self._loaded.tokenizer,
            request,
            eos_ids=self._loaded.eos_ids,
            cancel=cancel,
            live=live,
            speculative=self.speculative,
            images=images,
        )
        spec = self._loaded.spec
        gguf = spec.path if spec.kind == "gguf" else None
        if restored:
            events = marking_restored(events, restored)
        self._active = recording_speed(events, self.info.backend, gguf)
        return self._active

    def _close_active(self) -> None:
        active, self._active = self._active, None
        close = getattr(active, "close", None)
        if close is not None:
            close()

    def count_tokens(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> int:
        """Tokens the templated conversation takes (with the assistant header appended), the
        definitions of ``tools`` (offered to the model) included, and the messages' images
        (their tokens by their size, without encoding them) where the model can see."""
        count = int(count_tokens(self._loaded.tokenizer, tuple(messages), tuple(tools)))
        if self._vision is not None:
            refs = [r for m in messages for r in m.images]
            count += sum(self._vision.prompt_tokens(r, self.tokenize) for r in refs)
        return count

    def image_ids(self, images: Sequence[ImageRef]) -> list[int]:
        """The prompt ids of ``images`` in a row (each: the projector's begin text, its image
        ids, its end text), their rows given to the runner: a text scored after them
        (perplexity) is conditioned on the pictures. Refused as `generate` refuses images."""
        if self._vision is None:
            raise UnsupportedModelError(self.info.vision_refusal)
        table, self.last_images = self._vision.prepare(
            (Message("user", "", images=tuple(images)),), self.runner
        )
        ids: list[int] = []
        for ref in images:
            tokens = table[(ref.sha256 or ref.path, ref.budget)]
            ids += self.tokenize(tokens.begin) + list(tokens.ids) + self.tokenize(tokens.end)
        return ids

    def tokenize(self, text: str) -> list[int]:
        """Token ids of ``text`` without special tokens (BOS etc.)."""
        return list(self._loaded.tokenizer.encode(text, add_special_tokens=False))

    def close(self) -> None:
        """Drop the model and caches; later calls raise EngineClosedError."""
        if self._closed:
            return
        if self._runner is not None:
            self._close_active()
            self.save_caches()
            self._runner.reset()
        self._closed = True
        self._caches.clear()

    def save_caches(self, wait: bool = True) -> None:
        """Write the live conversation's cache to disk (when saving is on): a chat was left,
        the app quits. ``wait``: until it is on disk (else the write runs in the background)."""
        if self._runner is not None:
            self._caches.save_current(self._runner)
        if self._caches.store is not None and wait:
            self._caches.store.flush()

    def _check_open(self) -> None:
        if self._closed:
            raise EngineClosedError("the engine was closed")
