"""The "Search the Hub" tab: find GGUF repositories, see their files and a verdict per file.

A query lists matching GGUF repos (most downloaded first, `engine.hub.search.search_repos`);
expanding one lists its .gguf files with sizes and a first verdict judged from the size;
selecting a file reads its header by HTTP range requests (`summarize_url`, a small share of
the file) and replaces that with the verdict from the header (`assess`): architecture,
context, fast path. A repo's vision projectors (``mmproj*`` files) are listed apart from its
models, under a row of their own; on a model of such a repo "Download with its projector…"
fetches both. The buttons emit ``sig_download_requested(HubFile, projector HubFile or
None)``. Calls run off the GUI thread (`app.hub.hub_calls`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)
from qasync import asyncSlot

from app.hub import catalogue_fit, hub_calls
from app.hub.downloads import HubAccess
from app.views.models.format import (
    fast_path_text,
    format_bytes,
    format_params,
    hub_error_text,
    ram_text,
    tok_s_text,
    verdict_color,
    verdict_text,
)

_DATA = Qt.ItemDataRole.UserRole  # a RepoHit on repo rows, a HubFile on file rows
_PROJECTOR = Qt.ItemDataRole.UserRole + 1  # True on a projector's row


class SearchTab(QWidget):
    """Hub search with file lists and verdicts."""

    # engine.hub.search.HubFile, and the projector to fetch with it (None: the file alone)
    sig_download_requested = Signal(object, object)
    sig_token_requested = Signal()

    def __init__(self, access: Callable[[], HubAccess], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("searchTab")
        self._access = access
        self._listing: set[str] = set()  # repos whose files are listed (or being listed)
        self.projectors: dict[str, Any] = {}  # repo id -> the projector to fetch with a model
        self._build()

    def show_examples(self, entries: Sequence[Any]) -> None:
        """Suggest searches for families the catalogue offers now (its first few)."""
        examples = search_examples(entries)
        if examples:
            self.query.setPlaceholderText(self.tr("e.g. {0}").format(examples))

    def _build(self) -> None:
        self.query = QLineEdit(self)
        # Examples come from the catalogue once it is read (`show_examples`): a hint typed
        # here suggested qwen2.5 after the catalogue had retired it.
        self.query.setPlaceholderText(self.tr("Search the Hub for GGUF models"))
        self.search_button = QPushButton(self.tr("Search"), self)
        row = QHBoxLayout()
        row.addWidget(self.query, 1)
        row.addWidget(self.search_button)
        self.tree = QTreeWidget(self)
        self.tree.setColumnCount(7)
        self.tree.setHeaderLabels(
            [
                self.tr("Repository / file"),
                self.tr("Quant"),
                self.tr("Size"),
                self.tr("Verdict"),
                self.tr("RAM needed of available"),
                self.tr("Fast path"),
                self.tr("Speed"),
            ]
        )
        header = self.tree.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for col in range(1, 7):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        self.status = QLabel(self)
        self.status.setObjectName("searchStatus")
        self.status.setWordWrap(True)
        self.download_button = QPushButton(self.tr("Download…"), self)
        self.download_button.setEnabled(False)
        self.pair_button = QPushButton(self.tr("Download with its projector…"), self)
        self.pair_button.setToolTip(
            self.tr("The model and its vision projector (mmproj), so it can read images")
        )
        self.pair_button.setVisible(False)
        bottom = QHBoxLayout()
        bottom.addWidget(self.status, 1)
        bottom.addWidget(self.pair_button)
        bottom.addWidget(self.download_button)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.tree, 1)
        layout.addLayout(bottom)
        self.query.returnPressed.connect(self.on_search_clicked)
        self.search_button.clicked.connect(self.on_search_clicked)
        self.tree.itemExpanded.connect(self.on_tree_item_expanded)
        self.tree.currentItemChanged.connect(self.on_tree_current_changed)
        self.download_button.clicked.connect(self.on_download_clicked)
        self.pair_button.clicked.connect(self.on_pair_clicked)

    def _say(self, text: str, error: bool = False) -> None:
        self.status.setProperty("error", error)
        self.status.setText(text)

    def _fail(self, exc: BaseException) -> None:
        text, token = hub_error_text(exc)
        self._say(text, error=True)
        if token:
            self.sig_token_requested.emit()

    # ---- search ---------------------------------------------------------------------------

    @asyncSlot()
    async def on_search_clicked(self) -> None:
        await self.search(self.query.text())

    async def search(self, query: str) -> list[Any]:
        query = query.strip()
        if not query:
            self._say(self.tr("Type a model name to search for."))
            return []
        self._say(self.tr("Searching the Hub…"))
        self.search_button.setEnabled(False)
        try:
            hits = await hub_calls.search(query, self._access())
        except Exception as exc:  # HubError with words a user can act on
            self._fail(exc)
            return []
        finally:
            self.search_button.setEnabled(True)
        self.tree.clear()
        self._listing.clear()
        for hit in hits:
            item = QTreeWidgetItem(self.tree, [hit.repo_id])
            item.setData(0, _DATA, hit)
            item.setText(2, self.tr("%n download(s)", "", hit.downloads))
            if hit.gated:
                item.setText(3, self.tr("gated: needs a token"))
            item.setChildIndicatorPolicy(QTreeWidgetItem.ChildIndicatorPolicy.ShowIndicator)
        self._say(self.tr("%n repositories found. Expand one to see its files.", "", len(hits)))
        return hits

    # ---- files ----------------------------------------------------------------------------

    @asyncSlot(QTreeWidgetItem)
    async def on_tree_item_expanded(self, item: QTreeWidgetItem) -> None:
        if item.parent() is None and item.childCount() == 0:
            await self.list_files(item)

    async def list_files(self, item: QTreeWidgetItem) -> list[Any]:
        hit = item.data(0, _DATA)
        if hit.repo_id in self._listing:  # expanded again while its files are on the way
            return []
        self._listing.add(hit.repo_id)
        self._say(self.tr("Listing the files of {0}…").format(hit.repo_id))
        try:
            listing = await hub_calls.repo_listing(hit.repo_id, self._access())
        except Exception as exc:
            self._listing.discard(hit.repo_id)  # collapse and expand to try again
            self._fail(exc)
            return []
        files = listing.models
        for file in files:
            child = QTreeWidgetItem(
                item, [file.filename, file.quant, format_bytes(file.size_bytes)]
            )
            child.setData(0, _DATA, file)
            if file.split_parts > 1:
                child.setText(3, self.tr("split into {0} parts").format(file.split_parts))
                continue
            fit = await asyncio.to_thread(catalogue_fit.file_fit, file)
            self._show_fit(child, fit, estimated=True)
        self._list_projectors(item, listing)
        if not files:
            self._say(self.tr("{0} has no GGUF files.").format(hit.repo_id))
        else:
            self._say(self.tr("Select a file to read its header and check it precisely."))
        return list(files)

    def _list_projectors(self, item: QTreeWidgetItem, listing: Any) -> None:
        """The repo's vision projectors under a row of their own, apart from the models."""
        from engine.hub.projectors import projector_of

        if not listing.projectors:
            return
        hit = item.data(0, _DATA)
        self.projectors[hit.repo_id] = projector_of(listing)
        group = QTreeWidgetItem(item, [self.tr("Vision projectors (mmproj)")])
        group.setText(3, self.tr("let this repo's models read images"))
        group.setFlags(Qt.ItemFlag.ItemIsEnabled)  # a heading: not selectable, not a file
        for file in listing.projectors:
            child = QTreeWidgetItem(
                group, [file.filename, file.quant, format_bytes(file.size_bytes)]
            )
            child.setData(0, _DATA, file)
            child.setData(0, _PROJECTOR, True)
            child.setText(3, self.tr("vision projector"))
        group.setExpanded(True)

    @asyncSlot(QTreeWidgetItem, QTreeWidgetItem)
    async def on_tree_current_changed(self, current: QTreeWidgetItem | None, _prev: Any) -> None:
        file = current.data(0, _DATA) if current is not None and current.parent() else None
        single = file is not None and file.split_parts == 1
        self.download_button.setEnabled(single)
        projector = current is not None and bool(current.data(0, _PROJECTOR))
        paired = self.projectors.get(file.repo_id) if file and single and not projector else None
        self.pair_button.setVisible(paired is not None)
        if projector and file is not None:
            self._say(
                self.tr(
                    "{0} is a vision projector: it lets a model of this repo read images. "
                    "Download it with a model, or alone for a model you already have."
                ).format(file.filename)
            )
        elif single and current is not None:
            await self.check_file(current)

    async def check_file(self, item: QTreeWidgetItem) -> Any:
        """Read the file's header from the Hub and show the verdict it gives."""
        file = item.data(0, _DATA)
        self._say(self.tr("Reading the header of {0}…").format(file.filename))
        try:
            summary = await hub_calls.remote_summary(file, self._access())
            fit = await hub_calls.assess(summary)
        except Exception as exc:
            self._fail(exc)
            return None
        self._show_fit(item, fit, estimated=False)
        text = self.tr("{0}: {1}, {2} parameters, context {3} tokens. {4}").format(
            file.filename,
            summary.architecture,
            format_params(summary.parameters),
            summary.context_length or "?",
            fit.note,
        )
        if summary.licence:  # as the file states it; the model card on the Hub is the reference
            text += " " + self.tr("Licence stated in the file: {0}.").format(summary.licence)
        self._say(text)
        return fit

    def _show_fit(self, item: QTreeWidgetItem, fit: Any, *, estimated: bool) -> None:
        text = verdict_text(fit.verdict)
        item.setText(3, self.tr("{0} (from size)").format(text) if estimated else text)
        item.setForeground(3, verdict_color(fit.verdict))
        item.setToolTip(3, fit.note)
        item.setText(4, ram_text(fit))
        item.setText(5, fast_path_text(fit.fast_path) if not estimated else "?")
        item.setText(6, tok_s_text(fit.expected_tok_s))
        item.setToolTip(6, fit.note)  # measured here, or estimated from a bandwidth probe

    def on_download_clicked(self) -> None:
        item = self.tree.currentItem()
        file = item.data(0, _DATA) if item is not None and item.parent() else None
        if file is not None:
            self.sig_download_requested.emit(file, None)

    def on_pair_clicked(self) -> None:
        item = self.tree.currentItem()
        file = item.data(0, _DATA) if item is not None and item.parent() else None
        projector = self.projectors.get(file.repo_id) if file is not None else None
        if file is not None and projector is not None:
            self.sig_download_requested.emit(file, projector)


def search_examples(entries: Sequence[Any], count: int = 3) -> str:
    """ "qwen3.5 0.8b, llama 3.2 1b instruct, phi-4 mini instruct": the first model of each of
    the catalogue's first ``count`` families, as one would type it."""
    families: dict[str, str] = {}
    for entry in entries:
        families.setdefault(entry.family, entry.name.lower())
    return ", ".join(list(families.values())[:count])
