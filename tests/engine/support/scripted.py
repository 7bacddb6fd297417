"""A model whose replies the test writes: the real generation loop over a scripted Runner.

A tiny random model never chooses to call a tool, so the tool tests drive the real path —
chat template, `engine.generate.generate` (sampling, detokenizer, tool parser), the server —
with a `ScriptedRunner`: a real `Runner` whose logits put all the weight on the next token of
a scripted reply (tokenized with the bundled model's real tokenizer, so call markers arrive
split across tokens as a model's would). `ScriptedBackend` picks the reply from the
conversation and records each prompt it was given.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from engine.generate import generate
from engine.runners.base import check_extend
from engine.text import count_tokens
from engine.types import Event, GenerationRequest, LiveParams, Message, ModelInfo

EOS = 2  # SmolLM2's <|im_end|>


class ScriptedRunner:
    """A Runner whose reply after each prompt is ``script`` (then EOS), whatever the input."""

    backend, device, dtype = "torch", "cpu", "float32"
    extend_calls: list[int] | None = None

    def __init__(self, vocab_size: int, context_window: int = 32768) -> None:
        self.vocab_size = vocab_size
        self.context_window = context_window
        self._ids: list[int] = []
        self._script: list[int] = []
        self._prompt = 0
        self.prompts: list[list[int]] = []

    def start(self, script: Sequence[int]) -> None:
        """Reply with ``script`` to the next prompt."""
        self.reset()
        self._script = list(script)

    @property
    def cached_ids(self) -> list[int]:
        return list(self._ids)

    def extend(self, ids: Sequence[int], last_only: bool = False) -> np.ndarray:
        check_extend(ids, len(self._ids), self.context_window)
        if not self._ids:  # the prompt, in one prefill run (test prompts stay under 512)
            self._prompt = len(ids)
            self.prompts.append(list(ids))
        self._ids += list(ids)
        step = len(self._ids) - self._prompt
        token = self._script[step] if step < len(self._script) else EOS
        logits = np.zeros((1 if last_only else len(ids), self.vocab_size), np.float32)  # (T, V)
        logits[-1, token] = 100.0
        return logits

    def crop(self, n: int) -> None:
        del self._ids[n:]

    def reset(self) -> None:
        self._ids = []


class ScriptedBackend:
    """A `Backend` answering each request with ``reply(messages)`` through the real loop."""

    def __init__(self, tokenizer: Any, reply: Callable[[tuple[Message, ...]], str]) -> None:
        self.tokenizer = tokenizer
        self.reply = reply
        self.runner = ScriptedRunner(len(tokenizer))
        self.info = ModelInfo("scripted", "test", "torch", "cpu", "float32", 32768)

    def generate(
        self,
        request: GenerationRequest,
        cancel: threading.Event | None = None,
        live: LiveParams | None = None,
    ) -> Iterator[Event]:
        text = self.reply(request.messages)
        self.runner.start(self.tokenizer.encode(text, add_special_tokens=False))
        yield from generate(
            self.runner, self.tokenizer, request, eos_ids={EOS}, cancel=cancel, live=live
        )

    def count_tokens(self, messages: tuple[Message, ...]) -> int:
        return count_tokens(self.tokenizer, messages)

    def close(self) -> None:
        pass

    def prompt(self, index: int = -1) -> str:
        """The text of a prompt the model was given."""
        return str(self.tokenizer.decode(self.runner.prompts[index]))
