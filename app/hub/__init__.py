"""Glue between the models dialog and `engine.hub`, free of Qt.

Runs the Hub and models-folder calls off the GUI thread (``asyncio.to_thread`` on the app's
qasync loop), carries download progress from the worker thread to the loop, and measures speed
and time left. Does not own the HTTP, the verdicts or the files (`engine.hub`), nor any widget
(`app.views.models.dialog`, `app.views.models.download_dialog`).
"""
