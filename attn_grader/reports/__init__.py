"""What grading tells."""
