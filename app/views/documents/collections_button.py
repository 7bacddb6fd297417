"""The composer's "Collections" button: which document collections this chat searches.

Owns a tool button beside the paperclip whose menu lists every collection as a check box (the
open chat's choice, saved with it by `ChatDocuments.set_collections`) and "Manage
collections…", which opens the Collections window. Its text says how many are on
("Collections (3)"; the names in its tooltip). Does not own the list of collections
(`CollectionLibrary`) or indexing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QMenu, QToolButton, QWidget

if TYPE_CHECKING:
    from app.chat.chat_documents import ChatDocuments


class CollectionsButton(QToolButton):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("collectionsButton")
        self.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.setMenu(QMenu(self))
        self.setAccessibleName(self.tr("Collections"))
        self.documents: ChatDocuments | None = None
        self.open_manager: Callable[[], object] = lambda: None
        self.available: list[str] = []
        self.chosen: list[str] = []
        self._update_text()

    def bind(self, documents: ChatDocuments, open_manager: Callable[[], object]) -> None:
        self.documents = documents
        self.open_manager = open_manager
        documents.sig_collections_changed.connect(self.on_collections_changed)
        documents.library.sig_changed.connect(self.refresh)
        self.menu().aboutToShow.connect(self.fill_menu)
        self.chosen = list(documents.collections)
        self.refresh()

    def refresh(self) -> None:
        """Read the collections' names again (after an add or a remove)."""
        if self.documents is not None:
            self.documents.session.spawn(self._refresh())

    async def _refresh(self) -> None:
        assert self.documents is not None
        infos = await self.documents.library.collections()
        self.available = [i.name for i in infos]
        self._update_text()

    def on_collections_changed(self, names: list[str]) -> None:
        self.chosen = list(names)
        self._update_text()

    def fill_menu(self) -> None:
        menu = self.menu()
        menu.clear()
        names = self.available + [n for n in self.chosen if n not in self.available]
        for name in names:
            action = menu.addAction(
                name if name in self.available else self.tr("{0} (removed)").format(name)
            )
            action.setCheckable(True)
            action.setChecked(name in self.chosen)
            action.toggled.connect(lambda on, n=name: self.choose(n, on))
        if not names:
            menu.addAction(self.tr("No collections yet")).setEnabled(False)
        menu.addSeparator()
        menu.addAction(self.tr("Manage collections…"), self.open_manager)

    def choose(self, name: str, on: bool) -> None:
        chosen = [n for n in self.chosen if n != name] + ([name] if on else [])
        if self.documents is not None:
            self.documents.set_collections(chosen)

    def _update_text(self) -> None:
        # A count, not the names: the composer's column stays narrow; the tooltip names them.
        if not self.chosen:
            self.setText(self.tr("Collections"))
            self.setToolTip(self.tr("Document collections this chat searches with each question"))
            return
        self.setText(self.tr("Collections ({0})").format(len(self.chosen)))
        self.setToolTip(self.tr("This chat searches: {0}").format(", ".join(self.chosen)))
