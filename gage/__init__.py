"""gage: tell a person, and the agents who work for them, what they are holding before they act on it."""

__version__ = "0.1.0"
