"""Token ids in, text deltas out: incremental, UTF-8 safe, with stop-string holdback.

Owns turning a growing list of generated token ids into text that is safe to show now. Two
layers, each a small state machine:

1. Characters. A token may end in the middle of a multi-byte UTF-8 character (byte-level BPE
   splits CJK and emoji across tokens). Text is released only once it decodes without a
   trailing U+FFFD. With a fast tokenizer this is `tokenizers.decoders.DecodeStream` (Rust,
   ~2 us/token); otherwise a small window of ids is decoded with prefix-offset bookkeeping:
   decode(ids[prefix:]) minus decode(ids[prefix:read]), where ``prefix`` starts the previous
   emitted piece so decoders that strip a leading space see the same context both times.
   Nothing re-decodes the whole text per token.
2. Stop strings. Text that might be the start of a stop string is held back until the next
   characters prove it is not; once a stop string appears, the text before it is released and
   `stopped` turns true. No part of a stop string is ever emitted.

Invariant: the concatenation of every `add` result and `finalize` equals
``tokenizer.decode(ids, skip_special_tokens=...)`` (never with clean_up_tokenization_spaces,
which would rewrite "a ,b"), cut before the first stop string to complete. "First to complete"
is the one that ends earliest (ties: the one that starts earliest), a property of the text
alone, independent of how it was split into tokens. One exception: when generation ends in
the middle of a character (max tokens or cancel cut an emoji in half), `finalize` drops the
trailing U+FFFD that decode() would show for the unfinished bytes; a user never sees "�" for
a character the model did not get to finish. Elsewhere a U+FFFD appears only where decode()
has one mid-text, i.e. where the model produced bytes that are not UTF-8; it is emitted once
later text proves the sequence can no longer complete.

Knows nothing about models, sampling, threads or Qt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tokenizers.decoders import DecodeStream

_REPLACEMENT = "\ufffd"


class IncrementalDetokenizer:
    """Feed generated token ids one at a time; get text deltas that are safe to show."""

    def __init__(
        self, tokenizer: Any, stop: Sequence[str] = (), skip_special_tokens: bool = True
    ) -> None:
        self._chars = _CharacterStream(tokenizer, skip_special_tokens)
        self._stop: tuple[str, ...] = ()
        self._max_stop = 0
        self._pending = ""  # decoded, not yet emitted: might be the start of a stop string
        self._emitted: list[str] = []
        self._tail = ""  # the last (longest stop - 1) emitted characters, for set_stop
        self._stopped = False
        self._finalized = False
        self.set_stop(stop)

    @property
    def stopped(self) -> bool:
        """A stop string appeared: the caller ends generation with reason STOP."""
        return self._stopped

    @property
    def text(self) -> str:
        """Everything emitted so far by `add` and `finalize`."""
        return "".join(self._emitted)

    @property
    def token_ids(self) -> list[int]:
        """Every id passed to `add`, in order (a copy)."""
        return list(self._chars.ids)

    def set_stop(self, stop: Sequence[str]) -> None:
        """Replace the stop strings; they apply to text not yet emitted.

        A new stop string may complete across already-emitted text and new text: generation
        stops there, but what was emitted before the change stays emitted.
        """
        if isinstance(stop, str):
            raise TypeError("stop must be a sequence of strings, not a string")
        stops = tuple(s for s in stop if s)
        if stops == self._stop:
            return  # the loop may pass the live params every token: keep that cheap
        self._stop = stops
        self._max_stop = max((len(s) for s in stops), default=0)
        self._tail = self._recent_text(self._max_stop - 1)

    def add(self, token_id: int) -> str:
        """Take the next generated id; return the text that is safe to emit now (maybe "")."""
        if self._finalized:
            raise RuntimeError("add() after finalize()")
        piece = self._chars.add(token_id)
        if self._stopped:
            return ""
        return self._release(piece, final=False)

    def finalize(self) -> str:
        """Flush everything held back (minus a stop string and what follows it). Idempotent."""
        if self._finalized:
            return ""
        self._finalized = True
        piece = self._chars.flush()
        if self._stopped:
            return ""
        return self._release(piece, final=True)

    def _release(self, piece: str, *, final: bool) -> str:
        """Add ``piece`` to the held text; return what no stop string can claim any more."""
        self._pending += piece
        if not self._pending:
            return ""
        cut = self._find_stop()
        if cut is not None:
            self._stopped = True
            out, self._pending = self._pending[:cut], ""
        elif final:
            out, self._pending = self._pending, ""
        else:
            held = self._held_suffix_length()
            out = self._pending[: len(self._pending) - held]
            self._pending = self._pending[len(out) :]
        return self._emit(out)

    def _find_stop(self) -> int | None:
        """Where, in the pending text, to cut for the first stop string to complete; or None.

        The search also covers the emitted tail, so a stop string added by `set_stop` that
        started in emitted text still stops generation (the cut is then at 0).
        """
        if not self._stop:
            return None
        window = self._tail + self._pending
        best: tuple[int, int] | None = None  # (end, start) in window
        for stop in self._stop:
            # Only occurrences that end in the pending text are new.
            start = window.find(stop, max(0, len(self._tail) - len(stop) + 1))
            if start >= 0 and (best is None or (start + len(stop), start) < best):
                best = (start + len(stop), start)
        if best is None:
            return None
        return max(0, best[1] - len(self._tail))

    def _held_suffix_length(self) -> int:
        """Length of the longest suffix of the pending text that begins some stop string."""
        longest_possible = min(len(self._pending), self._max_stop - 1)
        for length in range(longest_possible, 0, -1):
            suffix = self._pending[-length:]
            if any(stop.startswith(suffix) for stop in self._stop):
                return length
        return 0

    def _recent_text(self, length: int) -> str:
        """The last ``length`` emitted characters, reading back only as far as needed."""
        if length <= 0:
            return ""
        pieces: list[str] = []
        total = 0
        for piece in reversed(self._emitted):
            pieces.append(piece)
            total += len(piece)
            if total >= length:
                break
        return "".join(reversed(pieces))[-length:]

    def _emit(self, out: str) -> str:
        if out:
            self._emitted.append(out)
            keep = max(self._max_stop - 1, 0)
            self._tail = (self._tail + out)[-keep:] if keep else ""
        return out


class _CharacterStream:
    """Token ids in, whole characters out (layer 1 of the module docstring)."""

    def __init__(self, tokenizer: Any, skip_special_tokens: bool) -> None:
        self.ids: list[int] = []
        self._prefix = 0  # ids[prefix:read] produced the previous piece (decoding context)
        self._read = 0  # ids[:read] are fully emitted
        backend = getattr(tokenizer, "backend_tokenizer", None)
        self._backend: Any = backend
        self._stream = DecodeStream(skip_special_tokens=skip_special_tokens) if backend else None
        self._decode: Callable[[list[int]], str]
        if backend is not None:
            self._decode = lambda ids: backend.decode(ids, skip_special_tokens=skip_special_tokens)
        else:
            self._decode = lambda ids: tokenizer.decode(
                ids, skip_special_tokens=skip_special_tokens, clean_up_tokenization_spaces=False
            )

    def add(self, token_id: int) -> str:
        self.ids.append(token_id)
        if self._stream is not None:
            piece = self._stream.step(self._backend, token_id) or ""
        else:
            piece = self._window_piece()
        if piece:
            self._prefix, self._read = self._read, len(self.ids)
        return piece

    def flush(self) -> str:
        """Whatever is still held, minus the U+FFFD of a character left unfinished at the end."""
        if self._read == len(self.ids):
            return ""
        before = self._decode(self.ids[self._prefix : self._read])
        after = self._decode(self.ids[self._prefix :])
        self._prefix = self._read = len(self.ids)
        # Held text always ends in U+FFFD (that is why it was held): those are the bytes of a
        # character that will now never be finished.
        return after[len(before) :].rstrip(_REPLACEMENT)

    def _window_piece(self) -> str:
        before = self._decode(self.ids[self._prefix : self._read])
        after = self._decode(self.ids[self._prefix :])
        if len(after) <= len(before) or after.endswith(_REPLACEMENT):
            return ""
        return after[len(before) :]
