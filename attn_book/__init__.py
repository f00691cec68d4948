"""The book's support code: what the chapters draw, train and time, and the toy data they use.

``attn_ref`` is the reference maths (NumPy only) that the exercises are graded against; this package
needs matplotlib and PyTorch and is never imported by ``attn_ref`` or by the grader (``lint-imports``).
"""
