"""`python -m app`: start Hearth; also `export`, `import` and `--screenshot`.

Owns argument parsing, creating the QApplication and the qasync event loop, crash logging,
the single-instance check, translators, and the offscreen screenshot mode. Does not own
behaviour (see `app.application`).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from app.demo import fill_demo
from app.system import crashlog, paths
from app.system.input_method import prepare_input_method
from app.system.qt_libs import check as check_qt_libs

APP_ID = "hearth"


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] in ("export", "import", "docs"):
        from app.cli import main as cli_main

        return cli_main(args_list)
    args = _parser().parse_args(args_list)
    if args.screenshot and args.models:
        from app.views.models.screenshot import save_models_screenshot

        make_qapp()
        return save_models_screenshot(Path(args.screenshot), theme=args.theme or "light")
    if args.screenshot:
        theme = args.theme or "light"
        return _screenshot(
            Path(args.screenshot), demo=args.demo, slow=args.slow_path, theme=theme,
            chat=args.demo_chat,
        )  # fmt: skip

    if check_qt_libs():  # X11 libraries missing: the install command, instead of a Qt abort
        return 1
    return _run(args.model, args.theme)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hearth",
        description="Private desktop chat.",
        epilog="Also: `export` and `import` (see `python -m app export --help`).",
    )
    parser.add_argument("--model", default="", help='"bundled", a model folder or a .gguf file')
    parser.add_argument("--screenshot", metavar="PATH", help="save the window as PNG and exit")
    parser.add_argument("--demo", action="store_true", help="with --screenshot: a demo chat")
    parser.add_argument(
        "--demo-chat",
        choices=("main", "reasoning", "documents", "safety", "images", "images-refused"),
        default="main",
        help="with --demo: which demo chat is open (reasoning: a thinking model's replies;"
        " documents: a reply citing an attached file, its Sources open; safety: turns stopped"
        " by the safety review; images: a picture and its reply, another waiting with its"
        " budget; images-refused: that chat on a text-only model)",
    )  # fmt: skip
    parser.add_argument(
        "--slow-path", action="store_true", help="with --demo: the model on the slower path"
    )
    parser.add_argument(
        "--models", action="store_true", help="with --screenshot: the model catalogue instead"
    )
    parser.add_argument("--theme", choices=("system", "light", "dark"), help="override the theme")
    return parser


def make_qapp() -> object:
    from PySide6.QtGui import QGuiApplication, QIcon
    from PySide6.QtWidgets import QApplication

    from app.system.i18n import install_translators

    QGuiApplication.setApplicationName("Hearth")
    QGuiApplication.setOrganizationName("Hearth")
    QGuiApplication.setDesktopFileName(APP_ID)
    qapp = cast(QApplication, QApplication.instance() or QApplication([sys.argv[0]]))
    icon = Path(__file__).resolve().parents[1] / "assets" / "icons" / "hearth.svg"
    if icon.is_file():
        qapp.setWindowIcon(QIcon(str(icon)))
    qapp.setProperty("hearth_translators", install_translators(qapp))
    return qapp


def _run(model: str, theme: str | None) -> int:
    import qasync

    from app.application import Application
    from app.system.settings import Settings
    from app.system.single_instance import SingleInstance

    log_dir = crashlog.install(paths.log_dir())  # another folder if that one is read-only

    input_method = prepare_input_method()  # sets Qt's variables: before the QApplication exists
    qapp = make_qapp()
    instance = SingleInstance(APP_ID)
    if not instance.try_acquire():
        return 0  # the running Hearth was asked to come to the front
    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    settings = Settings()
    if theme:
        settings.set_theme(theme)
    hearth = Application(qapp, settings)  # type: ignore[arg-type]
    instance.sig_activation_requested.connect(_raiser(hearth.window))
    hearth.window.show()  # before the model loads: the app is usable at once
    if log_dir is not None:
        _offer_crash_log(hearth.window, log_dir)
    from app.views.chat.input_method_notice import advise_input_method

    advise_input_method(hearth.window, input_method, settings)
    closed = asyncio.Event()
    # Closing the window ends the session coroutine, which shuts down in order and only then
    # lets the loop stop (Qt quitting on its own would stop the loop mid-shutdown).
    qapp.setQuitOnLastWindowClosed(False)  # type: ignore[attr-defined]
    hearth.window.sig_closing.connect(closed.set)
    qapp.aboutToQuit.connect(closed.set)  # type: ignore[attr-defined]
    _end_on_terminate(loop, closed)

    async def run() -> bool:
        if await hearth.start(model=model):  # False: the database problem dialog said Quit
            await closed.wait()
        return await hearth.shutdown()

    with loop:
        loop.run_until_complete(run())
    instance.release()
    # Everything is saved now: the chats (the store is closed), the settings (synced) and, when
    # the engine stopped, the model's state. Tearing down torch, onnxruntime and Qt object by
    # object took a second or more after the window closed (issue 22 B: "quitting takes over
    # 3 s"), and a model still loading cannot be interrupted at all: leave at once.
    crashlog.end_normally()  # what atexit would have done
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _end_on_terminate(loop: asyncio.AbstractEventLoop, closed: asyncio.Event) -> None:
    """SIGTERM (logout, `kill`, a service manager) and Ctrl+C end Hearth like closing the
    window: shutdown runs, exit code 0. asyncio has no signal handlers on Windows."""
    import contextlib
    import signal

    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, closed.set)


def _raiser(window: object) -> object:
    def raise_window() -> None:
        window.showNormal()  # type: ignore[attr-defined]
        window.raise_()  # type: ignore[attr-defined]
        window.activateWindow()  # type: ignore[attr-defined]

    return raise_window


def _offer_crash_log(window: object, log_dir: Path) -> None:
    from app.views.dialogs.crash import CrashDialog

    pending = crashlog.pending_crash_log(log_dir)
    if pending is not None:
        CrashDialog(pending, window).open()  # type: ignore[arg-type]


def _screenshot(
    path: Path, *, demo: bool, slow: bool = False, theme: str, chat: str = "main"
) -> int:
    """Render the main window offscreen (no model is loaded) and save it as PNG."""
    import qasync

    from app.application import Application
    from app.system.settings import Settings

    qapp = make_qapp()
    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    with tempfile.TemporaryDirectory(prefix="hearth-shot-") as tmp:
        settings = Settings(str(Path(tmp) / "settings.ini"))
        settings.set_theme(theme)  # "system" offscreen is whatever Qt guesses: be explicit
        hearth = Application(qapp, settings)  # type: ignore[arg-type]

        async def shoot() -> bool:
            db_path = Path(tmp) / "demo.sqlite3" if demo else None
            await hearth.start(db_path=db_path, model=None)
            if demo:
                await _demo_hook()(hearth, slow_path=slow, chat=chat)
            hearth.window.resize(1280, 820)
            hearth.window.show()
            # The first paint corrects estimated row heights; the list then re-lays out in
            # batches. Paint and wait twice so the saved frame is the settled one.
            for _ in range(2):
                hearth.window.grab()
                for _ in range(6):
                    await asyncio.sleep(0.05)
            path.parent.mkdir(parents=True, exist_ok=True)
            ok = hearth.window.grab().save(str(path), "PNG")
            await hearth.session.close()
            hearth.db.close_blocking()
            return ok

        with loop:
            ok = loop.run_until_complete(shoot())
    return 0 if ok else 1


def _demo_hook() -> Any:
    """The demo chat's filler (`app.demo.fill_demo`), imported only when ``--demo`` asks."""

    return fill_demo


if __name__ == "__main__":
    sys.exit(main())
