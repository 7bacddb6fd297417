"""The local engine: one model, its tokenizer and its KV caches, driven from one thread.

Owns loading (via `engine.loader`), choosing the forward implementation (torch, or a fast
path Runner when asked), warm-up, the per-conversation prefix caches, and dispatching each
request to the streaming loop (`engine.generate`) or to beam search (`engine.beam`).
Implements `engine.types.Backend`.

Not thread-safe by design: the model, the cache and the tokenizer belong to ONE worker thread
(the app's single-worker executor; the server's engine thread). Call every method from it.

Memory: the live KV cache grows with the conversation (SmolLM2-135M float32: 46 KB per token,
~380 MB at the default 8192-token window); up to ``prefix_cache_size`` other conversations'
caches are parked as copies (`engine.kv_cache.ConversationCaches`). With ``saved_caches_bytes``
a left conversation's cache is also written to disk (`engine.runners.kv_store`, in budget) and
a chat reopened after a restart reads it back: its next turn prefills only the new tokens.

Speculative decoding (prompt lookup, `engine.speculative`) is off unless asked for
(``Engine(speculative=True)``, or ``engine.speculative`` between requests; the app asks): greedy
replies are bitwise the same either way, quoting ones (documents, code edits) gain 1.5-2.5x on
the bundled model, and a per-reply ledger stops drafting where it costs more than it saves.
The OMP_WAIT_POLICY default is set in `engine/__init__.py`, before anything imports torch.

Images: with a vision projector (``mmproj=``, or an ``mmproj*.gguf`` found beside the model) a
request's images are encoded (once: `engine.vision`'s cache) and join the prompt as image ids
(`engine.image_input`); ``last_images`` reports the last request's image tokens and encode
time. Without one, a request with images is refused with ``info.vision_refusal``.
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from engine.cache_folders import conversation_cache_dir, gguf_cache_key
from engine.errors import EngineClosedError, EngineError, InvalidParamsError, UnsupportedModelError
from engine.generate import generate as stream_reply
from engine.gguf.header import read_gguf_summary
from engine.gguf.reader import open_gguf
from engine.image_input import NO_PROJECTOR, ImageReport, Vision, find_mmproj
from engine.kernels import build as kernel_build
from engine.kv_cache import ConversationCaches, settle
from engine.loader import LoadedModel, load_model
from engine.models import ModelSpec, quant_label
from engine.reply_taps import marking_restored, recording_speed
from engine.runners.base import Runner
from engine.runners.kv_store import KVStore, PersistentRunner
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
        _set_torch_threads(threads)  # after the loader's choice and the warm-up, which it overrides
        # Conversation caches on disk (engine.runners.kv_store): off unless given a byte budget.
        self._caches = ConversationCaches(prefix_cache_size, self._saved_store(saved_caches_bytes))
        self._closed = False
        self._active: Iterator[Event] | None = None  # the generation that owns the runner
        self._last_used = time.monotonic()  # for unload_if_idle
        # Called (on the engine thread) when the model is unloaded: holders of the runner (the
        # server's batch of KV slots) drop it, so its memory is really returned.
        self.unload_listeners: list[Callable[[], None]] = []
        loaded = self._loaded
        self.last_images = ImageReport()  # the last request's images (the CLI's done record)
        self._vision, refusal = self._open_vision(mmproj)
        self._info = ModelInfo(
            name=loaded.spec.name,
            source=loaded.spec.source,
            backend=self.runner.backend,
            device=self.runner.device,
            dtype=self.runner.dtype,
            context_window=loaded.context_window,
            thinking_toggle=supports_thinking_toggle(loaded.tokenizer),
            slow_path_reason=self._slow_reason,  # supported_params: every row of engine.params
            kernel_note=_kernel_note(self.runner),
            quant=_file_quant(loaded.spec),
            path=str(loaded.spec.path),
            vision_refusal=refusal,
            image_budgets=self._vision.budgets if self._vision else (),
            image_tokens=self._vision.typical_tokens() if self._vision else 0,
        )
        report(LoadProgress("ready", 1.0, f"{loaded.spec.name} ready on {self.runner.device}"))

    def _open_vision(self, mmproj: str | Path | None) -> tuple[Vision | None, str]:
        """The vision projector (given, or found beside the model) and the refusal line when
        there is none. A given one that does not fit raises; a found one is only reported."""
        spec = self._loaded.spec
        path = Path(mmproj) if mmproj is not None else None
        if path is None and spec.kind == "gguf":
            path = find_mmproj(Path(spec.path))
        if path is None:
            return None, NO_PROJECTOR
        if not hasattr(self.runner, "add_image"):
            reason = f"the {self.runner.backend} path cannot read images (the fast path can)"
            if mmproj is not None:
                raise UnsupportedModelError(reason)
            return None, reason
        try:
            reader = open_gguf(spec.path, arrays=False)
            arch = reader.architecture
            width = int(reader.get(f"{arch}.embedding_length") or 0)
            deepstack = int(reader.get(f"{arch}.n_deepstack_layers") or 0)  # Qwen3-VL
            reader.close()
            return Vision(path, arch, width, deepstack=deepstack), ""
        except EngineError as exc:
            if mmproj is not None:
                raise
            return None, str(exc)

    def _make_runner(
        self, backend: str, dtype: str, report: Callable[[LoadProgress], None]
    ) -> Runner:
        """The forward implementation, and why a slower one was taken (``_slow_reason``).

        - CUDA device ("auto"): the static-cache runner (CUDA-graph decode) on bf16 weights.
        - A .gguf on CPU at dtype "auto": the fast path over the file's own quantised weights;
          when it declines, the float32 torch path with the reason kept for the UI. An explicit
          "onnx" raises instead.
        - Otherwise (a Hugging Face folder, an explicit dtype): the torch path.
        """
        loaded = self._loaded
        on_cuda = loaded.device.startswith("cuda")
        if on_cuda and backend == "auto":
            from engine.runners.cuda_runner import StaticCacheRunner

            return StaticCacheRunner(loaded.model, context_window=loaded.context_window)
        auto_fast = loaded.spec.kind == "gguf" and not on_cuda and dtype == "auto"
        if backend == "onnx" or (backend == "auto" and auto_fast):
            runner, reason = _fast_runner(loaded, report, self._threads)
            if runner is not None:
                return runner
            if backend == "onnx":
                raise UnsupportedModelError(
                    f"the fast path cannot run {loaded.spec.name}: {reason}"
                )
            self._slow_reason = f"the fast path cannot run this file: {reason}"
        elif backend == "auto" and loaded.spec.kind == "folder" and not on_cuda:
            self._slow_reason = (
                "a Hugging Face folder runs on the float32 torch path; the fast path needs the "
                "model as a .gguf file"
            )
        from engine.runners.torch_runner import TorchRunner

        return TorchRunner(loaded.model, context_window=loaded.context_window)

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
        _set_torch_threads(self._threads)
        report(LoadProgress("ready", 1.0, f"{name} ready on {self._runner.device}"))

    def _saved_store(self, budget_bytes: int) -> KVStore | None:
        """The on-disk store of conversation caches, keyed by everything the K/V depend on."""
        runner, spec = self.runner, self._loaded.spec
        if budget_bytes <= 0 or spec.kind != "gguf" or not isinstance(runner, PersistentRunner):
            return None

        template = str(getattr(self._loaded.tokenizer, "chat_template", None) or "")
        key = {
            "model": gguf_cache_key(Path(spec.path)),
            "template": hashlib.sha256(template.encode()).hexdigest()[:16],
            "runner": runner.state_key(),
        }
        return KVStore(conversation_cache_dir(), key, budget_bytes)

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


def _fast_runner(
    loaded: LoadedModel, report: Callable[[LoadProgress], None], threads: int | None = None
) -> tuple[Runner | None, str]:
    try:
        from engine.runners.fast_open import fast_runner_or_reason
    except ImportError:  # onnxruntime missing: the fast path is optional
        return None, "onnxruntime is not installed"
    return fast_runner_or_reason(loaded, report, threads)


def _set_torch_threads(threads: int | None) -> None:
    """torch's intra-op threads, when torch is loaded (a torch Runner); the fast path's ONNX
    Runtime session took ``threads`` itself, and importing torch just to set it would cost the
    fast path ~1 s and ~250 MB it never uses."""
    if threads is None or "torch" not in sys.modules:
        return
    import torch

    torch.set_num_threads(threads)


def release_memory() -> None:
    """Return freed memory to the system: collect cycles, then ask glibc to give back its
    free heap pages (without malloc_trim a freed session's arenas stay in the RSS)."""
    import ctypes
    import gc

    gc.collect()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6").malloc_trim(0)


def _file_quant(spec: ModelSpec) -> str:
    """A GGUF file's own type label ("Q4_K_M"); "" for other sources or when unstated."""
    if spec.kind != "gguf":
        return ""
    summary = spec.summary or read_gguf_summary(spec.path)
    return quant_label(summary.file_type)


def _kernel_note(runner: Runner) -> str:
    """Why the fast path runs on ONNX Runtime's kernels alone (Hearth's C kernel does not
    run here: another CPU, no OpenMP, no compiler, turned off), for the status bar; "" where
    it runs or where the runner is not the fast path's."""
    if runner.backend != "onnx":
        return ""
    return kernel_build.unavailable_reason() or ""
