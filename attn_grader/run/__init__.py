"""The run of ``make grade``."""
