"""Widgets for documents in the chat: attachment chips, the Sources fold and its context dialog."""
