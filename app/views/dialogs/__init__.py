"""The smaller windows and dialogs: preferences, endpoints, Trash, the prompt library,
Chinese options, crash and store problems, and their shared helpers."""
