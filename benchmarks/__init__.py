"""Performance harnesses: plain scripts that print figures, never run by pytest."""
