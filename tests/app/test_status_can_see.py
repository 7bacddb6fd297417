"""The status bar says the loaded model can see when the engine loaded its vision projector
(`ModelInfo.vision_refusal` is ""): "can see" in the model label, the typical image's token
cost in its tooltip; a text-only model says nothing of images. Real widgets, offscreen.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from PySide6.QtWidgets import QMainWindow

from app.views.chat.status_bar import StatusBar
from engine.types import ModelInfo

INFO = ModelInfo(name="Gemma 4 E2B", source="/m/g.gguf", backend="onnx", device="cpu",
                 dtype="q4_k+q6_k", context_window=8192, quant="Q4_K_M")  # fmt: skip


def test_a_model_with_its_projector_says_it_can_see(qapp: Any) -> None:
    window = QMainWindow()
    bar = StatusBar(window)
    bar.show_model(dataclasses.replace(INFO, vision_refusal="", image_tokens=280))
    assert bar.model_label.text() == "Gemma 4 E2B · cpu · Q4_K_M · can see"
    assert "Reads images (≈ 280 tokens a typical image)" in bar.model_label.toolTip()
    bar.show_model(INFO)  # text only: the engine's default refusal
    assert bar.model_label.text() == "Gemma 4 E2B · cpu · Q4_K_M"
    assert "images" not in bar.model_label.toolTip()
    window.deleteLater()
