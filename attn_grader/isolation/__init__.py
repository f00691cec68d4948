"""What a submission runs in."""
