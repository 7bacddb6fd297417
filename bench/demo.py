"""The demo conversation shown by ``python -m app --screenshot PATH --demo`` (no model needed).

Owns sample content: English and Chinese text, a code block, a table, an alternative reply, a
formula and per-message statistics, written into the (temporary) store like a real chat would
be; with ``--slow-path``, the demo model as the engine reports one on the slower float32 path.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from app.store import Store
from engine.types import ModelInfo, SamplingParams, Stats

if TYPE_CHECKING:
    from app.application import Application

DEMO_MODEL = ModelInfo(
    name="SmolLM2-135M-Instruct",
    source="bundled",
    backend="torch",
    device="cpu",
    dtype="float32",
    context_window=8192,
)
# What the engine says when a GGUF file's quant type keeps it off the fast path.
DEMO_SLOW_REASON = "the fast path cannot run this file: blk.0.attn_q.weight uses IQ2_XXS"

QUESTION = "Write a Python function that counts words, and compare the options in a table."
ANSWER = """Here is a small, dependency-free version:

```python
from collections import Counter

def count_words(text: str) -> Counter[str]:
    \"\"\"Count words, ignoring case and punctuation.\"\"\"
    words = (w.strip(".,!?;:").lower() for w in text.split())
    return Counter(w for w in words if w)
```

| Approach | Speed | Handles Unicode |
|---|---|---|
| `str.split` + `Counter` | fast | yes |
| `re.findall(r"\\w+")` | medium | yes |
| manual loop | slow | depends |

For **Chinese** text, split on characters or use a segmenter such as *jieba*."""
QUESTION_ZH = "用一句话解释什么是 KV 缓存。"
ANSWER_ZH = (
    "KV 缓存保存了已经计算过的注意力键和值，所以生成下一个词时只需要处理新的词，"
    "不必重新计算整个对话。"
)
QUESTION_MATH = "注意力的公式是什么？"
ANSWER_MATH = (
    "**公式：**缩放点积注意力 $\\mathrm{Attention}(Q,K,V)$ 的定义是\n\n"
    "$$\\mathrm{softmax}\\left(\\frac{QK^\\top}{\\sqrt{d_k}}\\right)V$$\n\n"
    "其中 $d_k$ 是键向量的维度；除以 $\\sqrt{d_k}$ 让 softmax 的输入保持在合适的范围。"
)
OTHER_TITLES = [
    "周末徒步计划",
    "Rust lifetimes explained",
    "Recipe: mapo tofu",
    "SQL window functions",
]


async def fill_demo(hearth: Application, *, slow_path: bool = False) -> None:
    """Write the demo chat, open it, and show ``DEMO_MODEL`` as loaded (``slow_path``: on the
    slower path, as the engine reports it)."""
    params = SamplingParams(temperature=0.7, seed=42)
    conv_id = await hearth.db.call(_write_demo, params)
    session = hearth.session
    model = DEMO_MODEL
    if slow_path:
        model = dataclasses.replace(DEMO_MODEL, slow_path_reason=DEMO_SLOW_REASON)
    session.model_info = model
    session.sig_model_loaded.emit(model)
    session.sig_state_changed.emit(session.state.value)
    await session.refresh_conversations()
    await session.open_conversation(conv_id)
    session.sig_context_changed.emit(412, DEMO_MODEL.context_window, 396)
    hearth.window.composer.set_text("谢谢！Can you add a docstring test?")


def _write_demo(store: Store, params: SamplingParams) -> str:
    for title in OTHER_TITLES:
        other = store.create_conversation(title)
        store.add_message(other.id, None, "user", title)
    conv = store.create_conversation("Counting words 统计词频", params=params)
    user = store.add_message(conv.id, None, "user", QUESTION)
    store.add_message(conv.id, user.id, "assistant", "An earlier reply.", params=params)
    changed = params.replace(temperature=1.1)
    store.add_message(
        conv.id,
        user.id,
        "assistant",
        ANSWER,
        model=DEMO_MODEL.name,
        params=params,
        finish_reason="stop",
        param_changes=[{"token_index": 40, "params": changed.to_dict()}],
        stats=Stats(
            prompt_tokens=58,
            completion_tokens=164,
            ttft_s=0.21,
            decode_tokens_per_s=31.4,
            total_s=5.4,
            context_window=8192,
        ),
    )
    branch = store.branch(conv.id)
    user_zh = store.add_message(conv.id, branch[-1].id, "user", QUESTION_ZH)
    store.add_message(
        conv.id,
        user_zh.id,
        "assistant",
        ANSWER_ZH,
        model=DEMO_MODEL.name,
        params=params,
        finish_reason="stop",
        stats=Stats(
            prompt_tokens=240,
            cached_prompt_tokens=222,
            completion_tokens=38,
            ttft_s=0.09,
            decode_tokens_per_s=33.0,
            total_s=1.2,
            context_window=8192,
        ),
    )
    _add_math_turn(store, conv.id, params)
    return conv.id


def _add_math_turn(store: Store, conv_id: str, params: SamplingParams) -> None:
    """A question whose reply has CJK emphasis, inline and display math (docs/math.png)."""
    user = store.add_message(conv_id, store.branch(conv_id)[-1].id, "user", QUESTION_MATH)
    store.add_message(
        conv_id,
        user.id,
        "assistant",
        ANSWER_MATH,
        model=DEMO_MODEL.name,
        params=params,
        finish_reason="stop",
        stats=Stats(
            prompt_tokens=302,
            cached_prompt_tokens=280,
            completion_tokens=61,
            ttft_s=0.11,
            decode_tokens_per_s=32.2,
            total_s=2.0,
            context_window=8192,
        ),
    )
