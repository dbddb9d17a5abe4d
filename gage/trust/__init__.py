"""Decisions: what this home knows about a key, the verdict, the frame, the ceremony, key statements applied and the unattended budget."""
