"""Whether an answer is right."""
