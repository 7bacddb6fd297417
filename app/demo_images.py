"""The images demo chats (``python -m app --screenshot PATH --demo --demo-chat images``).

Owns sample content for docs/images/: a photo-like picture of a Chinese menu board (drawn here
with QPainter, so no picture file ships), a chat where it was sent to a model that can see
with the reply translating it, and a second picture waiting in the composer with its token
count and budget choice (``images``); or the same chat opened on a text-only model, whose
picture button is greyed and whose refusal a dropped picture got (``images-refused``).
Written into the (temporary) store like a real chat, the pictures copied into the data folder
by `app.chat.images` as the composer does and stored with their turn; no model needed.
Does not own the main demo.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFont, QImage, QLinearGradient, QPainter, QPen

from app.chat.images import attach_image
from app.store import Store
from app.store.images import save_images
from app.store.records import ImageAttachment
from engine.types import ModelInfo, SamplingParams, Stats

if TYPE_CHECKING:
    from app.application import Application

SEEING_MODEL = ModelInfo(
    name="gemma-4-E2B-it", source="gemma-4-E2B-it-Q4_K_M.gguf", backend="onnx", device="cpu",
    dtype="q4_k+q6_k", quant="Q4_K_M", context_window=32768, vision_refusal="",
    image_budgets=(280, 70, 140, 560, 1120), image_tokens=280,
)  # fmt: skip
TEXT_MODEL = ModelInfo(
    name="SmolLM2-135M-Instruct", source="bundled", backend="onnx", device="cpu",
    dtype="q8_0", quant="Q8_0", context_window=8192,
    vision_refusal="this model has no vision projector — download its mmproj",
)  # fmt: skip
MENU = [("麻婆豆腐", "28"), ("宫保鸡丁", "32"), ("鱼香肉丝", "30"), ("酸辣汤", "12"), ("米饭", "2")]
QUESTION = "What's on this menu? I don't eat pork."
ANSWER = """The board lists five dishes (prices in yuan):

| Dish | In English | ¥ | Pork? |
|---|---|---|---|
| 麻婆豆腐 | Mapo tofu: tofu in a spicy bean sauce | 28 | usually minced pork or beef |
| 宫保鸡丁 | Kung Pao chicken with peanuts | 32 | no |
| 鱼香肉丝 | "Fish-fragrant" shredded pork | 30 | **yes** |
| 酸辣汤 | Hot and sour soup | 12 | often shredded pork |
| 米饭 | Steamed rice | 2 | no |

**Kung Pao chicken** with rice is the safe choice. To ask for no pork, say
**不要猪肉** (*bú yào zhūròu*)."""
WAITING_TEXT = "这张收据上的总额是多少？"


def draw_menu(path: Path) -> Path:
    """A 960 x 720 picture of a chalk menu board (a stand-in for a phone photo)."""
    image = QImage(960, 720, QImage.Format.Format_RGB32)
    painter = QPainter(image)
    try:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        wood = QLinearGradient(0, 0, 960, 720)
        wood.setColorAt(0, QColor("#8a5a2b"))
        wood.setColorAt(1, QColor("#5c3a1a"))
        painter.fillRect(image.rect(), wood)
        board = QRectF(40, 40, 880, 640)
        painter.fillRect(board, QColor("#26302b"))
        painter.setPen(QPen(QColor("#f4efe1")))
        painter.setFont(_font(64, bold=True))
        painter.drawText(QRectF(40, 60, 880, 100), Qt.AlignmentFlag.AlignCenter, "今日菜单")
        painter.setFont(_font(44))
        for row, (dish, price) in enumerate(MENU):
            top = 190 + row * 92
            painter.drawText(QRectF(120, top, 520, 80), Qt.AlignmentFlag.AlignVCenter, dish)
            painter.drawText(
                QRectF(620, top, 220, 80),
                Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight,
                f"¥{price}",
            )
    finally:
        painter.end()
    image.save(str(path), "JPEG", 88)  # type: ignore[call-overload]  # as a phone's photo would be
    return path


def draw_receipt(path: Path) -> Path:
    """A small receipt picture for the composer's waiting chip."""
    image = QImage(480, 640, QImage.Format.Format_RGB32)
    image.fill(QColor("#fbfaf6"))
    painter = QPainter(image)
    try:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.fillRect(QRectF(0, 0, 480, 120), QColor("#c64600"))
        painter.setPen(QPen(QColor("#ffffff")))
        painter.setFont(_font(48, bold=True))
        painter.drawText(QRectF(0, 20, 480, 80), Qt.AlignmentFlag.AlignCenter, "收据")
        painter.setPen(QPen(QColor("#222222")))
        painter.setFont(_font(32))
        for row, (dish, price) in enumerate(MENU[1:4]):
            line = QRectF(40, 160 + row * 70, 400, 60)
            painter.drawText(line, Qt.AlignmentFlag.AlignLeft, dish)
            painter.drawText(line, Qt.AlignmentFlag.AlignRight, f"¥{price}.00")
        painter.setFont(_font(36, bold=True))
        painter.drawText(QRectF(40, 420, 400, 60), Qt.AlignmentFlag.AlignRight, "合计 ¥74.00")
    finally:
        painter.end()
    image.save(str(path), "PNG")  # type: ignore[call-overload]
    return path


def _font(pixels: int, *, bold: bool = False) -> QFont:
    font = QFont("Noto Sans CJK SC")
    font.setPixelSize(pixels)
    font.setBold(bold)
    return font


def write_images_demo(store: Store, params: SamplingParams, menu: ImageAttachment) -> str:
    conv = store.create_conversation("菜单 What's on the menu?", params=params)
    user = store.add_message(conv.id, None, "user", QUESTION)
    save_images(store, user.id, (menu,))
    store.add_message(
        conv.id, user.id, "assistant", ANSWER, model=SEEING_MODEL.name, params=params,
        finish_reason="stop",
        stats=Stats(prompt_tokens=312, completion_tokens=171, ttft_s=3.4,
                    decode_tokens_per_s=18.6, total_s=12.6, context_window=32768),
    )  # fmt: skip
    return conv.id


async def open_images_demo(hearth: Application, params: SamplingParams, *, refused: bool) -> None:
    """Write and open the images chat; show the seeing model (a receipt waiting in the
    composer at budget 560) or, ``refused``, a text-only one that turned the receipt away."""
    session, composer = hearth.session, hearth.window.composer
    folder = Path(await hearth.db.call(lambda store: store.path)).parent  # the temporary one
    composer.images.images_folder = folder / "images"
    menu = attach_image(draw_menu(folder / "menu.jpg"), images_folder=folder / "images")
    conv_id = await hearth.db.call(write_images_demo, params, menu)
    model = TEXT_MODEL if refused else SEEING_MODEL
    session.model_info = model
    session.sig_model_loaded.emit(model)
    session.sig_state_changed.emit(session.state.value)
    await session.refresh_conversations()
    await session.open_conversation(conv_id)
    session.sig_context_changed.emit(483, model.context_window, 312)
    composer.set_text(WAITING_TEXT)
    composer.add_images([str(draw_receipt(folder / "receipt.png"))])  # refused: said in words
    await composer.images.wait_ready()  # read in the background: its chip shows when ready
    if not refused:
        # The budget chosen for the small print (no engine here to count: the budget shows).
        composer.images.chips[0].budget.setCurrentIndex(SEEING_MODEL.image_budgets.index(560))
