"""nbgrader's OverwriteCells without the false "checksum has changed" warning (nbgrader issue 1961).

A released test cell has no hidden tests, so its checksum never equals the source cell's, and nbgrader
warns "Attribute 'checksum' for cell ... has changed!" for every test cell of every submission, even an
untouched copy of the release.  Those warnings hide the one that matters.  This subclass puts the
source's hidden tests back first when the *visible* part of the cell is the released one, so an
untouched cell matches its checksum and passes silently, while a cell whose visible part was edited is
still reported and restored by nbgrader as before.  Configured in ``nbgrader_config.py`` for the stock
``nbgrader autograde`` and for ``make grade`` alike.
"""

from __future__ import annotations

from nbgrader import utils
from nbgrader.api import MissingEntry
from nbgrader.preprocessors import OverwriteCells

from .sanitize import _visible


class OverwriteCellsKeepingHidden(OverwriteCells):
    def preprocess_cell(self, cell, resources, cell_index):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id and utils.is_grade(cell) and utils.is_locked(cell):
            try:
                source_cell = self.gradebook.find_source_cell(grade_id, self.notebook_id, self.assignment_id)
            except MissingEntry:
                source_cell = None
            if source_cell is not None and _visible(cell.source) == _visible(source_cell.source):
                cell.source = source_cell.source
        return super().preprocess_cell(cell, resources, cell_index)
