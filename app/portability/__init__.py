"""Getting conversations in and out: Markdown/JSON export, import and their shared format."""
