"""The rules core: plain Python, no RL imports, owns no random generator (callers pass one in)."""
