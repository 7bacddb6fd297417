"""Chat state: the open conversation, its replies in flight and what the user typed."""
