"""The "Catalogue" tab: the curated chat models, each with a verdict for this computer.

Shows every `engine.hub.catalogue` entry (name, size — for a mixture-of-experts model also the
parameters a token uses —, one-line description, a "中文" badge for models good in Chinese, a
reasoning badge, a "recommended" badge on the default pick, the licence linked to its text and
tinted where it has terms of its own, and "can see" for models that read images with their
vision projector, downloaded with them) with "checking…" at first, then, as each repo's file
list arrives from the Hub, the verdict (fits / tight / won't fit), RAM needed of RAM
available, fast path, expected speed and the recommended quant
(`app.hub.catalogue_fit`). When the Hub cannot be reached the verdicts are estimated from
the catalogue's sizes and marked as such; the list stays usable. "Download…" emits
``sig_download_requested(HubFile)``.
"""

from __future__ import annotations

import asyncio
import html
from typing import Any

from PySide6.QtCore import QEvent, QLocale, Qt, QTimer, Signal
from PySide6.QtGui import QPalette, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.hub import catalogue_fit, hub_calls
from app.hub.downloads import HubAccess
from app.views.models.format import (
    fast_path_text,
    format_bytes,
    hub_error_text,
    ram_text,
    tok_s_text,
    verdict_color,
    verdict_text,
)
from app.views.models.guards import GuardSection
from engine.errors import HubOfflineError

PARALLEL_CHECKS = 4  # Hub API calls in flight at once: quick, and polite to a mirror
COLUMNS = 7  # model, verdict, RAM, fast path, speed, quant, download
BADGE = '<span style="background-color:{bg}; color:{fg};">&nbsp;{text}&nbsp;</span>'


class CatalogueTab(QWidget):
    """The curated list with a verdict per entry."""

    # engine.hub.search.HubFile of the model, and of its vision projector (None: text only)
    sig_download_requested = Signal(object, object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("catalogueTab")
        self.entries: list[Any] = []
        self.wanted_family = ""  # a family to show selected once the entries are read
        self.verdicts: dict[str, catalogue_fit.EntryVerdict] = {}  # by repo id
        self.offline = False
        self._build()

    def _build(self) -> None:
        self.status = QLabel(self)
        self.status.setObjectName("catalogueStatus")
        self.status.setWordWrap(True)
        self.table = QTableWidget(0, COLUMNS, self)
        self.table.setHorizontalHeaderLabels(
            [
                self.tr("Model"),
                self.tr("Verdict"),
                self.tr("RAM needed of available"),
                self.tr("Fast path"),
                self.tr("Speed"),
                self.tr("Recommended file"),
                "",
            ]
        )
        # One row can be shown selected: the model a hint asked for ("Get Qwen3.5…").
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self._tint_selection()
        self.table.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # rows are read, buttons are pressed
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(True)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for col in range(1, COLUMNS):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        # Rows grow to fit their wrapped text once the model column's width is known: after a
        # resize of the window or of another column (coalesced into one pass).
        self._refit = QTimer(self)
        self._refit.setSingleShot(True)
        self._refit.setInterval(0)
        self._refit.timeout.connect(self.on_refit_timeout)
        header.sectionResized.connect(lambda *_: self._refit.start())
        self.guards = GuardSection(self)  # the Safety section: guard models, apart
        layout = QVBoxLayout(self)
        layout.addWidget(self.status)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.guards)

    def _tint_selection(self) -> None:
        """A selected row is tinted, not filled: its cells' own grey text (descriptions,
        licences) stays readable on it, in either theme."""
        theme = self.palette()  # the tab's, inherited from the theme (the table's is set)
        tint = theme.color(QPalette.ColorRole.Highlight)
        tint.setAlpha(60)
        palette = self.table.palette()
        palette.setColor(QPalette.ColorRole.Highlight, tint)
        palette.setColor(QPalette.ColorRole.HighlightedText, theme.color(QPalette.ColorRole.Text))
        self.table.setPalette(palette)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:  # the theme changed: tint its colour
            self._tint_selection()

    def select_family(self, family: str) -> None:
        """Show ``family``'s pick (its recommended entry, else its first) selected, now or as
        soon as the catalogue is read (a hint asked for it: "Get Qwen3.5…")."""
        self.wanted_family = family
        self._select_wanted()

    def _select_wanted(self) -> None:
        rows = [r for r, e in enumerate(self.entries) if e.family == self.wanted_family]
        if not rows:
            return
        row = next((r for r in rows if self.entries[r].recommended), rows[0])
        self.table.selectRow(row)
        if (item := self.table.item(row, 0)) is not None:
            self.table.scrollToItem(item)

    # ---- loading --------------------------------------------------------------------------

    async def load(self, access: HubAccess, ram_available: int | None = None) -> None:
        """Show the catalogue at once, then fill in verdicts as the Hub answers."""
        self.entries = await hub_calls.catalogue()
        self.guards.show_guards()
        self.verdicts.clear()
        self.offline = False
        self.table.setRowCount(len(self.entries))
        for row, entry in enumerate(self.entries):
            self._show_entry(row, entry)
        self._select_wanted()
        self.status.setText(self.tr("Checking which models fit this computer…"))
        gate = asyncio.Semaphore(PARALLEL_CHECKS)
        await asyncio.gather(
            *(
                self._check(row, e, access, gate, ram_available)
                for row, e in enumerate(self.entries)
            )
        )
        self._show_summary()

    async def _check(
        self, row: int, entry: Any, access: HubAccess, gate: asyncio.Semaphore, ram: int | None
    ) -> None:
        async with gate:
            try:
                if not self.offline:
                    verdict = await catalogue_fit.check_entry(entry, access, ram)
                else:
                    verdict = await catalogue_fit.estimate_entry(entry, ram)
            except HubOfflineError as exc:
                self.offline = True  # one timeout is enough: the others estimate at once
                self._offline_reason = hub_error_text(exc)[0]
                verdict = await catalogue_fit.estimate_entry(entry, ram)
            except Exception as exc:  # unknown repo, gated, ...: this row says why
                self._show_error(row, exc)
                return
        self.verdicts[entry.repo_id] = verdict
        self._show_verdict(row, verdict)

    def _show_summary(self) -> None:
        if self.offline:
            self.status.setText(
                self.tr(
                    "The Hub cannot be reached, so these verdicts are estimates from the "
                    "catalogue. Downloads need a connection, or a mirror in the Hub tab."
                )
            )
            self.status.setProperty("error", True)
            return
        self.status.setProperty("error", False)
        any_fit = next(iter(self.verdicts.values()), None)
        available = format_bytes(any_fit.fit.ram_available_bytes) if any_fit else "?"
        self.status.setText(
            self.tr(
                "Verdicts for this computer: {0} of RAM available now. The recommended file "
                "is the best quant that fits."
            ).format(available)
        )

    # ---- rows -----------------------------------------------------------------------------

    def _show_entry(self, row: int, entry: Any) -> None:
        label = QLabel(self._entry_html(entry), self.table)
        label.setTextFormat(Qt.TextFormat.RichText)
        label.setWordWrap(True)
        label.setContentsMargins(6, 4, 6, 4)
        label.setOpenExternalLinks(True)  # the licence's text
        label.setToolTip(entry.repo_id)
        self.table.setCellWidget(row, 0, label)
        checking = QTableWidgetItem(self.tr("Checking…"))
        self.table.setItem(row, 1, checking)
        for col in range(2, COLUMNS - 1):
            self.table.setItem(row, col, QTableWidgetItem(""))
        button = QPushButton(self.tr("Download…"))
        button.setEnabled(False)
        button.clicked.connect(lambda _=False, r=row: self.on_download_clicked(r))
        self.table.setCellWidget(row, COLUMNS - 1, _centred(button, self.table))
        self._fit_row(row)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._refit.start()

    def on_refit_timeout(self) -> None:
        for row in range(self.table.rowCount()):
            self._fit_row(row)

    def _fit_row(self, row: int) -> None:
        """At least three lines of text (name and badges, the description, the licence) and
        some air; more where the column is too narrow for them."""
        label = self.table.cellWidget(row, 0)
        least = 3 * self.fontMetrics().lineSpacing() + 18
        wrapped = label.heightForWidth(self.table.columnWidth(0)) + 8 if label else 0
        self.table.setRowHeight(row, max(least, wrapped))

    def _entry_html(self, entry: Any) -> str:
        badges = []
        if entry.chinese:
            badges.append(BADGE.format(bg="#d8ecff", fg="#0b4f8a", text="中文"))
        if entry.reasoning:
            badges.append(
                BADGE.format(bg="#efe3ff", fg="#5b2a86", text=html.escape(self.tr("reasoning")))
            )
        if entry.recommended:
            badges.append(
                BADGE.format(bg="#ddf3e4", fg="#1d6b37", text=html.escape(self.tr("recommended")))
            )
        chinese_ui = QLocale().language() == QLocale.Language.Chinese
        description = getattr(entry, "description_zh", "") if chinese_ui else ""
        return (
            f"<b>{html.escape(entry.name)}</b> &nbsp;{' '.join(badges)}<br>"
            f"<span style='color:#777777;'>{html.escape(self._size_text(entry))} · "
            f"{html.escape(description or entry.description)}</span><br>"
            f"<span style='color:#777777;'>{self._terms_html(entry)}</span>"
        )

    def _size_text(self, entry: Any) -> str:
        if entry.active_params_b is None:
            return self.tr("{0}B parameters").format(f"{entry.params_b:g}")
        return self.tr("{0}B parameters, {1}B used per token").format(
            f"{entry.params_b:g}", f"{entry.active_params_b:g}"
        )

    def _terms_html(self, entry: Any) -> str:
        """The licence (a link to its text; amber where it has terms of its own) and, for a
        model that reads images, that it can see (its projector comes with it)."""
        name = html.escape(entry.licence)
        colour = "#777777" if entry.open_licence else "#9a6400"
        licence = (
            f"<a href='{html.escape(entry.licence_url)}' style='color:{colour};'>{name}</a>"
            if entry.licence_url
            else f"<span style='color:{colour};'>{name}</span>"
        )
        parts = [html.escape(self.tr("Licence: {0}")).format(licence)]
        if not entry.open_licence:
            parts.append(html.escape(self.tr("its own terms: read them before commercial use")))
        if entry.multimodal:
            parts.append(html.escape(self.tr("can see: downloads with its vision projector")))
        return " · ".join(parts)

    def _show_verdict(self, row: int, verdict: catalogue_fit.EntryVerdict) -> None:
        fit, file = verdict.fit, verdict.file
        text = verdict_text(fit.verdict)
        if verdict.estimated:
            text = self.tr("{0} (estimate)").format(text)
        item = QTableWidgetItem(text)
        item.setForeground(verdict_color(fit.verdict))
        item.setToolTip(fit.note)
        self.table.setItem(row, 1, item)
        self.table.setItem(row, 2, QTableWidgetItem(ram_text(fit)))
        self.table.setItem(row, 3, QTableWidgetItem(fast_path_text(fit.fast_path)))
        speed = QTableWidgetItem(tok_s_text(fit.expected_tok_s))
        speed.setToolTip(fit.note)  # says whether the speed was measured here or estimated
        self.table.setItem(row, 4, speed)
        quant = self.tr("{0} · {1}").format(file.quant or "?", format_bytes(file.size_bytes))
        tip = file.filename
        if verdict.projector is not None:  # fetched with it: the download is both files
            quant += " " + self.tr("+ projector {0}").format(
                format_bytes(verdict.projector.size_bytes)
            )
            tip += "\n" + verdict.projector.filename
        quant_item = QTableWidgetItem(quant)
        quant_item.setToolTip(tip)
        self.table.setItem(row, 5, quant_item)
        button = self.download_button(row)
        if button is not None:
            button.setEnabled(not verdict.estimated)
            button.setToolTip(
                self.tr("The Hub must be reachable to download.") if verdict.estimated else ""
            )

    def _show_error(self, row: int, exc: BaseException) -> None:
        text, _token = hub_error_text(exc)
        item = QTableWidgetItem(self.tr("Unavailable"))
        item.setToolTip(text)
        self.table.setItem(row, 1, item)

    # ---- actions --------------------------------------------------------------------------

    def verdict_of(self, row: int) -> str:
        """The verdict cell's text (tests and accessibility read it)."""
        item = self.table.item(row, 1)
        return item.text() if item is not None else ""

    def download_button(self, row: int) -> QPushButton | None:
        cell = self.table.cellWidget(row, COLUMNS - 1)
        return cell.findChild(QPushButton) if cell is not None else None

    def on_download_clicked(self, row: int) -> None:
        verdict = self.verdicts.get(self.entries[row].repo_id)
        if verdict is not None and not verdict.estimated:
            self.sig_download_requested.emit(verdict.file, verdict.projector)


def _centred(widget: QWidget, parent: QWidget) -> QWidget:
    """``widget`` in a cell, vertically centred at its natural height (not stretched)."""
    cell = QWidget(parent)
    layout = QVBoxLayout(cell)
    layout.setContentsMargins(6, 0, 6, 0)
    layout.addStretch(1)
    layout.addWidget(widget)
    layout.addStretch(1)
    return cell
