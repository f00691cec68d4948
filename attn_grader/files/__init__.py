"""The grader's files."""
