"""The Collections window: add a folder, watch it index, rescan, remove; see what was skipped.

Owns a non-modal dialog over `CollectionLibrary`: one row per collection (files, chunks, its
languages with their share of chunks, "en 80 %, zh-Hans 20 %", and either its indexing
progress, "Indexing 3 of 12: report.pdf", or what needs a look: "2 skipped · 1 missing"), a
warning when a collection's embedding model does not cover its languages (naming them and a
catalogue model that does), the files of the chosen one with their status and reason
("junk.txt: this is binary data, not text"), the last add or rescan's summary line, and Add
folder… / Rescan / Remove. Indexing runs in the background: the window may be closed
meanwhile. Does not own indexing, search or language detection (`app.documents.languages`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QLocale, Qt
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.documents import WHOLE_INDEX, CollectionInfo, DocumentError, IndexReport
from app.documents.languages import Uncovered, shares_text, uncovered
from app.documents.records import LanguageShare
from app.documents.retrieval import relative_path
from app.views.dialogs.file_dialogs import FolderMemory
from engine.errors import CorruptModelError
from engine.hub.embedding import EmbeddingModel, load_embedding_models

if TYPE_CHECKING:
    from app.chat.chat_documents import ChatDocuments


MIN_NAME_DIALOG_WIDTH = 360  # px: a folder's name fits in the field
TITLE_BAR_EXTRA = 160  # px: a title bar's icon and buttons beside the title


class CollectionsWindow(QDialog):
    def __init__(self, documents: ChatDocuments, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("collectionsWindow")
        self.setWindowTitle(self.tr("Document collections"))
        self.resize(720, 520)
        self.documents = documents
        self.library = documents.library
        # Where "Add folder…" opens: the main window's memory when it has one.
        shared = getattr(parent, "folders", None)
        self.folders = shared if isinstance(shared, FolderMemory) else FolderMemory()
        self.infos: dict[str, CollectionInfo] = {}
        # The catalogue's embedding models: what each collection's model covers, and which
        # one to suggest when it misses a language.
        self.embedding_models: list[EmbeddingModel] = _catalogue_embedding_models()
        self.roots: dict[str, list[str]] = {}
        intro = QLabel(
            self.tr(
                "A collection is a folder of documents indexed on this computer. Choose it in a"
                " chat (the Collections button beside Attach) and every question searches it;"
                " the reply cites what it used. Changed files are indexed again by themselves."
            ),
            self,
        )
        intro.setWordWrap(True)
        self.table = QTreeWidget(self)
        self.table.setObjectName("collectionsTable")
        self.table.setRootIsDecorated(False)
        self.table.setHeaderLabels(
            [self.tr("Collection"), self.tr("Files"), self.tr("Chunks"), self.tr("Languages"),
             self.tr("Status"), self.tr("Folders")]
        )  # fmt: skip
        self.table.currentItemChanged.connect(lambda *_: self.show_files())
        self.files = QTreeWidget(self)
        self.files.setObjectName("collectionFiles")
        self.files.setRootIsDecorated(False)
        self.files.setHeaderLabels([self.tr("File"), self.tr("Status")])
        self.language_warning = QLabel(self)
        self.language_warning.setObjectName("collectionsLanguageWarning")
        self.language_warning.setWordWrap(True)
        self.language_warning.setVisible(False)
        self.summary = QLabel(self)
        self.summary.setObjectName("collectionsSummary")
        self.summary.setWordWrap(True)
        self.progress = QProgressBar(self)
        self.progress.setVisible(False)
        self.add_button = QPushButton(self.tr("Add folder…"), self)
        self.add_button.clicked.connect(self.on_add_clicked)
        self.rescan_button = QPushButton(self.tr("Rescan"), self)
        self.rescan_button.clicked.connect(self.on_rescan_clicked)
        self.remove_button = QPushButton(self.tr("Remove"), self)
        self.remove_button.clicked.connect(self.on_remove_clicked)
        close = QPushButton(self.tr("Close"), self)
        close.clicked.connect(self.close)
        buttons = QHBoxLayout()
        for b in (self.add_button, self.rescan_button, self.remove_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(close)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.table, 2)
        layout.addWidget(self.language_warning)
        layout.addWidget(self.progress)
        layout.addWidget(self.summary)
        layout.addWidget(self.files, 3)
        layout.addLayout(buttons)
        self.library.sig_progress.connect(self.on_library_progress)
        self.library.sig_done.connect(self.on_library_done)
        self.library.sig_changed.connect(self.refresh)
        self.refresh()

    # -- reading -------------------------------------------------------------------------------
    def refresh(self) -> None:
        self.documents.session.spawn(self._refresh())

    async def _refresh(self) -> None:
        infos = await self.library.collections()
        self.roots = await self.library.roots()
        current = self.current_name()
        self.infos = {i.name: i for i in infos}
        self.table.clear()
        for info in infos:
            folders = self.roots.get(info.name, [])
            counts = [info.name, f"{info.files:,}", f"{info.chunks:,}"]
            cells = [*counts, shares_text(info.languages), "", "; ".join(folders)]
            row = QTreeWidgetItem(cells)
            row.setToolTip(3, "\n".join(_share_name(s) for s in info.languages))
            row.setToolTip(5, "\n".join(folders))
            row.setData(0, Qt.ItemDataRole.UserRole, info.name)
            self.table.addTopLevelItem(row)
            self._show_status(row, info.name)
            if info.name == current:
                self.table.setCurrentItem(row)
        first = self.table.topLevelItem(0)
        if self.table.currentItem() is None and first is not None:
            self.table.setCurrentItem(first)
        self._update_buttons()
        self._warn_uncovered(infos)

    def _warn_uncovered(self, infos: list[CollectionInfo]) -> None:
        """One line per collection whose embedding model (its own, else the one the app
        would index it with) does not list some of its languages."""
        lines = []
        configured = self.library.embed_model() if infos else None
        for info in infos:
            model = info.embed_model or configured
            missing = uncovered(info.languages, model, self.embedding_models)
            if missing is not None:
                lines.append(self._uncovered_line(info.name, missing))
        self.language_warning.setText("\n".join(lines))
        self.language_warning.setVisible(bool(lines))

    def _uncovered_line(self, name: str, missing: Uncovered) -> str:
        languages = ", ".join(language_name(tag) for tag in missing.languages)
        if missing.suggestion is not None:
            return self.tr(
                "⚠ {0}: its embedding model, {1}, does not cover {2}, so searching those"
                " passages by meaning works poorly (keyword search still finds them). Pick a"
                " multilingual embedding model that covers them, such as {3}, and index the"
                " collection again."
            ).format(name, missing.model, languages, missing.suggestion)
        return self.tr(
            "⚠ {0}: its embedding model, {1}, does not cover {2}, so searching those passages"
            " by meaning works poorly (keyword search still finds them). Pick an embedding"
            " model whose languages include them and index the collection again."
        ).format(name, missing.model, languages)

    def current_name(self) -> str | None:
        item = self.table.currentItem()
        return None if item is None else str(item.data(0, Qt.ItemDataRole.UserRole))

    def _row(self, name: str) -> QTreeWidgetItem | None:
        for i in range(self.table.topLevelItemCount()):
            item = self.table.topLevelItem(i)
            if item is not None and item.data(0, Qt.ItemDataRole.UserRole) == name:
                return item
        return None

    def _show_status(self, row: QTreeWidgetItem, name: str) -> None:
        if name in self.library.busy:
            done, total, file = self.library.busy[name]
            text = (
                self.tr("Indexing {0} of {1}: {2}").format(done + 1, total, Path(file).name)
                if total and file
                else self.tr("Indexing…")
            )
        else:
            info = self.infos.get(name)
            bits = []
            if info is not None and info.skipped:
                bits.append(self.tr("{0} skipped").format(info.skipped))
            if info is not None and info.missing:
                bits.append(self.tr("{0} missing").format(info.missing))
            if info is not None and info.failed:
                bits.append(self.tr("{0} failed").format(info.failed))
            text = " · ".join(bits) or self.tr("Up to date")
        row.setText(4, text)

    def show_files(self) -> None:
        self._update_buttons()
        if (name := self.current_name()) is not None:
            self.documents.session.spawn(self._show_files(name))
        else:
            self.files.clear()

    async def _show_files(self, name: str) -> None:
        files = await self.library.files(name)
        if name != self.current_name():
            return
        self.files.clear()
        labels = {"skipped": self.tr("skipped: {0}"), "failed": self.tr("failed: {0}"),
                  "missing": self.tr("missing: {0}")}  # fmt: skip
        roots = self.roots.get(name, [])
        for f in files:
            if f.status == "ok":
                status = (
                    self.tr("1 chunk") if f.chunks == 1 else self.tr("{0} chunks").format(f.chunks)
                )
            else:
                status = labels.get(f.status, "{0}").format(f.error or "")
            row = QTreeWidgetItem([relative_path(f.path, roots), status])
            row.setToolTip(0, f.path)
            row.setToolTip(1, f.error or "")
            self.files.addTopLevelItem(row)
        self.files.resizeColumnToContents(0)

    # -- acting --------------------------------------------------------------------------------
    def on_add_clicked(self) -> None:
        folder = self.folders.open_folder(self, "documents", self.tr("Add a folder of documents"))
        if not folder:
            return
        dialog = self.name_dialog(Path(folder))
        if dialog.exec() and (name := dialog.textValue().strip()):
            self.add_folder(Path(folder), name)

    def name_dialog(self, folder: Path) -> QInputDialog:
        """Ask the new collection's name. Wide enough for its title: Qt's own getText sized
        the dialog to the name field, and window managers cut the title ("New c… ection")."""
        dialog = QInputDialog(self)
        dialog.setWindowTitle(self.tr("New collection"))
        dialog.setLabelText(self.tr("Name:"))
        dialog.setTextValue(folder.name)
        title_room = dialog.fontMetrics().horizontalAdvance(dialog.windowTitle()) + TITLE_BAR_EXTRA
        # The dialog's layout sizes it to its contents (a minimum width on the dialog is
        # ignored), so the field is what is widened.
        field = dialog.findChild(QLineEdit)
        if field is not None:
            field.setMinimumWidth(max(MIN_NAME_DIALOG_WIDTH, title_room))
        return dialog

    def add_folder(self, folder: Path, name: str) -> None:
        """Index ``folder`` into ``name`` (new, or one more folder of an existing one)."""
        self.library.add(name, folder)
        self.summary.setText(self.tr("Indexing {0}…").format(folder))
        self.refresh()

    def on_rescan_clicked(self) -> None:
        if (name := self.current_name()) is not None:
            self.library.rescan(name)
            self.refresh()

    def on_remove_clicked(self) -> None:
        name = self.current_name()
        if name is None:
            return
        answer = QMessageBox.question(
            self,
            self.tr("Remove collection"),
            self.tr("Forget the collection {0}? The files stay on disk.").format(name),
        )
        if answer == QMessageBox.StandardButton.Yes:
            self.documents.session.spawn(self.library.remove(name))

    def on_library_progress(self, name: str, done: int, total: int, _file: str) -> None:
        self.progress.setVisible(total > 0 and done < total)
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        if (row := self._row(name)) is not None:
            self._show_status(row, name)

    def on_library_done(self, name: str, result: IndexReport | DocumentError) -> None:
        self.progress.setVisible(bool(self.library.busy))
        self.summary.setText(
            describe(result) if name == WHOLE_INDEX else f"{name}: {describe(result)}"
        )
        if name == self.current_name():
            self.show_files()

    def _update_buttons(self) -> None:
        chosen = self.current_name() is not None
        self.rescan_button.setEnabled(chosen)
        self.remove_button.setEnabled(chosen)


def _catalogue_embedding_models() -> list[EmbeddingModel]:
    try:
        return load_embedding_models()
    except CorruptModelError:  # no catalogue to go by: no warning, indexing still works
        return []


def language_name(tag: str) -> str:
    """ "Chinese (zh-Hans)", "Italian (it)": Qt's English name of the language and the tag;
    the tag alone when Qt does not know it."""
    locale = QLocale(tag)
    if locale.language() == QLocale.Language.C:
        return tag
    return f"{QLocale.languageToString(locale.language())} ({tag})"


def _share_name(share: LanguageShare) -> str:
    return f"{language_name(share.tag)}: {round(share.share * 100)} %"


def describe(result: IndexReport | DocumentError) -> str:
    """One line for the end of an add or rescan ("4 added, 1 skipped, 2 removed")."""
    if isinstance(result, DocumentError):
        return str(result)
    t = QCoreApplication.translate  # literal calls: lupdate reads them
    parts = [
        t("CollectionsWindow", "{0} added").format(result.added) if result.added else "",
        t("CollectionsWindow", "{0} updated").format(result.updated) if result.updated else "",
        t("CollectionsWindow", "{0} removed").format(result.removed) if result.removed else "",
        t("CollectionsWindow", "{0} skipped").format(len(result.skipped)) if result.skipped else "",
        t("CollectionsWindow", "{0} failed").format(len(result.failed)) if result.failed else "",
    ]
    line = ", ".join(p for p in parts if p) or t("CollectionsWindow", "nothing changed")
    return line + (t("CollectionsWindow", " (stopped)") if result.cancelled else "")
