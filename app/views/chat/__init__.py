"""Widgets of the main chat window: the conversation list, the message view and its
delegate, the composer, the sampling panel and the status-bar pieces."""
