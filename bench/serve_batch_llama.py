"""llama.cpp's multi-sequence batching, for `bench.serve_batch` (run as a subprocess).

What ``llama-server --parallel N`` does per step, through llama-cpp-python's low-level API: N
chat prompts (the GGUF's own template, the same tagged prompts the HTTP clients send) prefilled
in one batch, then one ``llama_decode`` per step with one token for every live sequence, greedy,
until each has ``max_tokens`` or an end-of-generation token. Prints one JSON line: per client
count, aggregate tokens/s and TTFT (all first tokens come from the one prefill batch).
Usage: ``python -m bench.serve_batch_llama '{"gguf": ..., "clients": [1, 4, 8], "max_tokens": 64}'``
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import numpy as np

from bench.serve_batch import PROMPTS, _cores, _summary


def main(argv: list[str]) -> int:
    job = json.loads(argv[0])
    runner = _Batched(job["gguf"], max(job["clients"]), job["max_tokens"])
    runner.round(1, "warm")  # warm-up, not measured
    repeat = int(job.get("repeat", 1))
    rows = [
        max((runner.round(n, f"l{n}r{k}") for k in range(repeat)), key=lambda r: r["tok_s"])
        for n in job["clients"]
    ]
    print(json.dumps(rows))
    return 0


class _Batched:
    def __init__(self, gguf: str, most: int, max_tokens: int) -> None:
        import llama_cpp as lc
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self.lc, self.max_tokens = lc, max_tokens
        self.llm = Llama(gguf, n_ctx=512, n_threads=_cores(), verbose=False)
        model = self.llm._model
        self.format = Jinja2ChatFormatter(
            self.llm.metadata["tokenizer.chat_template"],
            eos_token=model.token_get_text(self.llm.token_eos()),
            bos_token=model.token_get_text(self.llm.token_bos()),
        )
        params = lc.llama_context_default_params()
        params.n_ctx = most * 512
        params.n_batch = params.n_ubatch = 512 * most
        params.n_seq_max = most
        params.n_threads = params.n_threads_batch = _cores()
        params.kv_unified = False  # a KV stream per sequence: attention reads only its own
        self.ctx = lc.llama_init_from_model(model.model, params)
        self.vocab = lc.llama_model_get_vocab(model.model)
        self.n_vocab = lc.llama_vocab_n_tokens(self.vocab)
        self.batch = lc.llama_batch_init(512 * most, 0, most)

    def round(self, clients: int, tag: str) -> dict[str, Any]:
        lc = self.lc
        lc.llama_memory_clear(lc.llama_get_memory(self.ctx), True)
        prompts = [self._ids(f"[{tag}-{i}] {PROMPTS[i % len(PROMPTS)]}") for i in range(clients)]
        start = time.perf_counter()
        entries = [
            (tok, pos, seq, pos == len(ids) - 1)
            for seq, ids in enumerate(prompts)
            for pos, tok in enumerate(ids)
        ]
        rows = self._decode(entries)  # the row of each sequence's logits, in sequence order
        nexts = [self._argmax(r) for r in rows]
        ttft = time.perf_counter() - start
        positions, counts = [len(ids) for ids in prompts], [1] * clients
        live = [s for s in range(clients) if not lc.llama_vocab_is_eog(self.vocab, nexts[s])]
        live = [s for s in live if counts[s] < self.max_tokens]
        while live:
            rows = self._decode([(nexts[s], positions[s], s, True) for s in live])
            for s, row in zip(live, rows, strict=True):
                positions[s] += 1
                nexts[s] = self._argmax(row)
                counts[s] += 1
            live = [s for s in live if counts[s] < self.max_tokens]
            live = [s for s in live if not lc.llama_vocab_is_eog(self.vocab, nexts[s])]
        wall = time.perf_counter() - start
        return _summary(clients, [ttft] * clients, sum(counts), wall)

    def _ids(self, prompt: str) -> list[int]:
        text = self.format(messages=[{"role": "user", "content": prompt}]).prompt
        return list(self.llm.tokenize(text.encode(), add_bos=False, special=True))

    def _decode(self, entries: list[tuple[int, int, int, bool]]) -> list[int]:
        """One llama_decode over (token, position, sequence, wants logits); the batch indices
        of the rows with logits."""
        b = self.batch
        b.n_tokens = len(entries)
        for k, (tok, pos, seq, logits) in enumerate(entries):
            b.token[k], b.pos[k], b.n_seq_id[k], b.logits[k] = tok, pos, 1, logits
            b.seq_id[k][0] = seq
        if self.lc.llama_decode(self.ctx, b) != 0:
            raise RuntimeError("llama_decode failed")
        return [k for k, entry in enumerate(entries) if entry[3]]

    def _argmax(self, row: int) -> int:
        pointer = self.lc.llama_get_logits_ith(self.ctx, row)
        return int(np.ctypeslib.as_array(pointer, shape=(self.n_vocab,)).argmax())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
