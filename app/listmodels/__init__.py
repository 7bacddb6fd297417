"""Qt item models over the GUI's in-memory view of conversations and messages."""
