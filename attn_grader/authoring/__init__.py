"""The instructor's tools."""
