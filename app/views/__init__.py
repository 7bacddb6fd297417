"""Widgets: main window, chat view and its delegate, composer, sidebar, sampling panel, dialogs."""
