"""The book's figures: shared drawing primitives (:mod:`.draw`) and one module per chapter, named for the
chapter's file (``book/relevance.md`` -> :mod:`attn_book.figures.relevance`).

Every draw function draws on a given matplotlib ``ax`` and returns the artists it made (the tests count
them).  The maths they illustrate comes from :mod:`attn_ref`.
"""
