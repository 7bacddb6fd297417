"""The one registry of weights the kernel ops read straight from mapped GGUF files.

Owns `MAPPED`: per kind (``"experts"``: a MoE file's `ExpertSet` per layer, `engine.fastpath.
expert_op`; ``"matrices"``: projections, the head or every matrix by name, `engine.fastpath.
matmul_op`) and per file key, the tables mapped once, how many runners hold them, the kernel's
threads, and their binding to the native op (`engine.kernels.native`), undone when the last
holder lets go (`MappedHandle`). Process-wide because an op's Python body is one function for
every session; locked, because runners open and close on several threads. Does not own what a
table holds or how it is mapped (the op modules' ``_map_*``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from engine.kernels import native

Kind = Literal["experts", "matrices"]


@dataclass(frozen=True)
class _Binding:
    bind: Callable[[str, Any, int | None], None]  # (key, table, threads) -> None
    prefix: Callable[[str], str]  # key -> the native op's binding prefix


_BINDINGS: dict[str, _Binding] = {
    "experts": _Binding(native.bind_experts, native.experts_prefix),
    "matrices": _Binding(native.bind_matrices, native.matrices_prefix),
}


class MappedWeights:
    """(kind, key) → a file's mapped table, with a hold count and the kernel's threads."""

    def __init__(self) -> None:
        self._tables: dict[tuple[str, str], Any] = {}
        self._holds: dict[tuple[str, str], int] = {}
        self._threads: dict[tuple[str, str], int | None] = {}
        self._lock = threading.Lock()

    def hold(self, kind: Kind, key: str, load: Callable[[], Any], threads: int | None) -> None:
        """Map ``key``'s table with ``load`` unless held already, bind it for the native op
        (where that runs) and count one more holder. The kernel refuses a table whose sizes
        disagree: then nothing stays mapped and the error propagates."""
        at, binding = (kind, key), _BINDINGS[kind]
        with self._lock:
            fresh = at not in self._tables
            if fresh:
                self._tables[at] = load()
            if native.serves():  # the native op's bindings (harmless where it does not run)
                try:
                    binding.bind(key, self._tables[at], threads)
                except BaseException:
                    if fresh:
                        self._tables.pop(at, None)
                        native.unbind(binding.prefix(key))
                    raise
            self._holds[at] = self._holds.get(at, 0) + 1
            self._threads[at] = threads

    def drop(self, kind: Kind, key: str) -> None:
        """One holder fewer; the last one unmaps the table and unbinds it."""
        at = (kind, key)
        with self._lock:
            self._holds[at] = self._holds.get(at, 1) - 1
            if self._holds[at] <= 0:
                for table in (self._holds, self._tables, self._threads):
                    table.pop(at, None)
                native.unbind(_BINDINGS[kind].prefix(key))

    def table(self, kind: Kind, key: str) -> Any:
        try:
            return self._tables[(kind, key)]
        except KeyError:
            raise RuntimeError(f"no {kind} mapped for {key}") from None

    def threads(self, kind: Kind, key: str) -> int | None:
        """The kernel's threads for ``key`` (the last opener's, as ONNX Runtime's)."""
        return self._threads.get((kind, key))

    def keys(self, kind: Kind) -> list[str]:
        """The files whose ``kind`` is mapped now (tests check a closed runner frees its own)."""
        with self._lock:
            return sorted(key for k, key in self._tables if k == kind)


MAPPED = MappedWeights()


class MappedHandle:
    """One runner's hold on a file's mapped table; the last hold released unmaps it."""

    def __init__(self, kind: Kind, key: str) -> None:
        self.kind, self.key = kind, key
        self._held = True

    def release(self) -> None:
        if self._held:
            self._held = False
            MAPPED.drop(self.kind, self.key)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter exit the registry may be gone
            self.release()
