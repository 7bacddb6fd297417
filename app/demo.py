"""The demo conversation shown by ``python -m app --screenshot PATH --demo`` (no model needed).

Owns sample content: English and Chinese text, a code block, a table, an alternative reply, a
formula and per-message statistics, written into the (temporary) store like a real chat would
be; with ``--slow-path``, the demo model as the engine reports one on the slower float32 path.
``--demo-chat reasoning`` opens a reasoning model's chat instead: one reply's thinking folded
("Thought for 9 s"), the last one's opened (docs/reasoning.png).

Part of the product (an offline sample conversation for screenshots and first looks), so the
"app never imports bench" contract sees the import plainly.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from app.demo_images import open_images_demo
from app.store import Store
from engine.types import ModelInfo, SamplingParams, Stats

if TYPE_CHECKING:
    from app.application import Application

DEMO_MODEL = ModelInfo(  # as the engine reports the bundled model on its fast path
    name="SmolLM2-135M-Instruct",
    source="bundled",
    backend="onnx",
    device="cpu",
    dtype="q4_1",
    context_window=8192,
    quant="Q4_1",
)
# What the engine says when a GGUF file's quant type keeps it off the fast path.
DEMO_SLOW_REASON = "the fast path cannot run this file: blk.0.attn_q.weight uses IQ1_S"

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


async def fill_demo(hearth: Application, *, slow_path: bool = False, chat: str = "main") -> None:
    """Write the demo chats, open one (``chat``: "main" or "reasoning"), and show a model as
    loaded (``slow_path``: on the slower path, as the engine reports it)."""
    params = SamplingParams(temperature=0.7, seed=42)
    conv_id = await hearth.db.call(_write_demo, params)
    thinking_id = await hearth.db.call(_write_reasoning_demo, params)
    session = hearth.session
    model = REASONING_MODEL if chat == "reasoning" else DEMO_MODEL
    if slow_path:
        model = dataclasses.replace(model, backend="torch", dtype="float32", quant="",
                                    slow_path_reason=DEMO_SLOW_REASON)  # fmt: skip
    session.model_info = model
    session.sig_model_loaded.emit(model)
    session.sig_state_changed.emit(session.state.value)
    await session.refresh_conversations()
    if chat == "safety":  # docs/safety.png: a question and a reply stopped by the review
        from app.demo_safety import open_safety_demo

        await open_safety_demo(hearth, params)
        return
    if chat in ("images", "images-refused"):  # docs/images/: a picture, its reply, a budget
        await open_images_demo(hearth, params, refused=chat == "images-refused")
        return
    if chat == "documents":  # docs/documents.png: a reply with its Sources open
        from app.demo_documents import open_documents_demo

        await open_documents_demo(hearth, params)
        return
    if chat == "reasoning":
        await session.open_conversation(thinking_id)
        last = session.messages.rowCount() - 1
        session.messages.item(last).thinking_open = True  # as after a click on its header
        session.messages.touch(last)
        session.sig_context_changed.emit(689, REASONING_MODEL.context_window, 655)
        hearth.window.composer.set_text("那如果是 2 的 20 次方呢？")
        return
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


REASONING_MODEL = dataclasses.replace(
    DEMO_MODEL, name="Qwen3-0.6B", source="Qwen3-0.6B-Q8_0.gguf", dtype="q8_0", quant="Q8_0",
    context_window=32768, thinking_toggle=True,
)  # fmt: skip
QUESTION_THINK = "一个数的平方等于 144，这个数是多少？"
THOUGHT_THINK = (
    "The user asks which number squared gives 144. 12 × 12 = 144, and (−12) × (−12) = 144 "
    "too, so there are two answers. The question is in Chinese, so I should answer in Chinese "
    "and mention both roots."
)
ANSWER_THINK = "这个数是 **12** 或 **−12**，因为 12² = (−12)² = 144。"
QUESTION_THINK_2 = "Is 2^10 bigger than 1000?"
THOUGHT_THINK_2 = (
    "2^10 = 1024. Compare with 1000: 1024 − 1000 = 24 > 0, so yes, slightly bigger.\n"
    'Worth saying why people call 1024 "a kilo" in computing: it is the power of two '
    "closest to 1000."
)
ANSWER_THINK_2 = (
    "Yes: 2^10 = **1024**, which is 24 more than 1000. That closeness is why 1024 bytes "
    "came to be called a kilobyte."
)


def _write_reasoning_demo(store: Store, params: SamplingParams) -> str:
    """A reasoning model's chat: thinking stored apart from each answer, with its duration."""
    conv = store.create_conversation("想一想 Thinking it through", params=params)
    turns = [
        (QUESTION_THINK, THOUGHT_THINK, ANSWER_THINK, 9.2, 118),
        (QUESTION_THINK_2, THOUGHT_THINK_2, ANSWER_THINK_2, 4.6, 96),
    ]
    parent = None
    for question, thought, answer, seconds, tokens in turns:
        user = store.add_message(conv.id, parent, "user", question)
        reply = store.add_message(
            conv.id, user.id, "assistant", answer, model=REASONING_MODEL.name, params=params,
            finish_reason="stop", reasoning=thought, reasoning_seconds=seconds,
            stats=Stats(prompt_tokens=120, completion_tokens=tokens, ttft_s=0.18,
                        decode_tokens_per_s=24.5, total_s=seconds + 1.3, context_window=32768),
        )  # fmt: skip
        parent = reply.id
    return conv.id
