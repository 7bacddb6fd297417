"""The status bar says when the fast path runs on ONNX Runtime's kernels because Hearth's own
kernel does not run on this machine (`ModelInfo.kernel_note`, set by the engine from
`engine.kernels.platforms`): a short tag in the model label and the reason in its tooltip;
nothing where the kernel runs. Real widgets, offscreen.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from PySide6.QtWidgets import QMainWindow

from app.views.chat.status_bar import StatusBar
from engine.types import ModelInfo

ARM = ("Hearth's kernel is written for x86 CPUs and this one is aarch64; ONNX Runtime's "
       "kernels run instead")  # fmt: skip
INFO = ModelInfo(name="Qwen2.5 0.5B", source="/m/q.gguf", backend="onnx", device="cpu",
                 dtype="q4_k+q6_k", context_window=4096, quant="Q4_K_M")  # fmt: skip


def test_the_model_label_names_the_kernels_and_why(qapp: Any) -> None:
    window = QMainWindow()
    bar = StatusBar(window)
    bar.show_model(dataclasses.replace(INFO, kernel_note=ARM))
    assert bar.model_label.text() == "Qwen2.5 0.5B · cpu · Q4_K_M · ONNX Runtime kernels"
    assert ARM in bar.model_label.toolTip()
    bar.show_model(INFO)  # a model on a machine where the kernel runs
    assert bar.model_label.text() == "Qwen2.5 0.5B · cpu · Q4_K_M"
    assert "Kernels" not in bar.model_label.toolTip()
    window.deleteLater()
