"""Texts of a figure that are data, not language: the word beside each point of a scatter of word vectors.

:func:`data_text` marks such a text where it is drawn (``draw.word_label`` does it for a point's word).
Every language edition draws it as it is: the Chinese figures (attn_book/figures/language.py) never look
it up in the label catalogue, whatever message equals it (the vehicle "train" beside the legend "train",
训练), and it is no message of the catalogue.  The mark is an attribute of the Text, so it is pickled with
the figure.  No import here: every chapter's figures import this module through ``draw``.
"""

from __future__ import annotations

DATA = "_attn_book_data"  # the attribute of a Text that is data


def data_text(text):
    """Mark ``text`` (a matplotlib Text or Annotation) as data; returns ``text``."""
    setattr(text, DATA, True)
    return text


def is_data(text) -> bool:
    return bool(getattr(text, DATA, False))
