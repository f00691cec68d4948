"""One module per assignment (``psNN_topic``): its tasks, hidden inputs and catalogued mistakes."""
