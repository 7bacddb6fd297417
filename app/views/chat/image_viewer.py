"""A picture of the chat shown large: a plain dialog that fits the screen; Escape closes it.

Owns scaling the whole image (upright by its EXIF orientation) to fit ~90% of the screen the
chat is on, never enlarged past its own pixels, with its name and size in the title. Does not
own the thumbnails (`app.views.chat.message_images`) or the file.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QGuiApplication, QPixmap
from PySide6.QtWidgets import QDialog, QLabel, QVBoxLayout, QWidget

from app.views.chat.image_pixels import read_image

SCREEN_SHARE = 0.9  # of the screen's free area the picture may take


class ImageViewer(QDialog):
    def __init__(self, path: str, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("imageViewer")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.label = QLabel(self)
        self.label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        image = read_image(path)
        if image.isNull():
            self.label.setText(self.tr("This image can no longer be read: {0}").format(path))
            self.setWindowTitle(name)
        else:
            fitted = image.scaled(
                self._room(),
                Qt.AspectRatioMode.KeepAspectRatio,
                Qt.TransformationMode.SmoothTransformation,
            )
            picture = fitted if fitted.width() < image.width() else image
            self.label.setPixmap(QPixmap.fromImage(picture))
            self.setWindowTitle(f"{name} · {image.width()} × {image.height()}")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label)

    def _room(self) -> QSize:
        screen = self.screen() or QGuiApplication.primaryScreen()
        free = screen.availableGeometry().size() if screen is not None else QSize(1280, 800)
        return QSize(int(free.width() * SCREEN_SHARE), int(free.height() * SCREEN_SHARE))


def show_image(path: str, name: str, parent: QWidget | None) -> ImageViewer:
    """Open ``path`` large (non-modal: the chat stays usable behind it)."""
    viewer = ImageViewer(path, name, parent)
    viewer.show()
    viewer.raise_()
    return viewer
