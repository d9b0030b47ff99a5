"""Sphinx configuration of Gantt's release notes (tox -e releasenotes).

reno's extension reads the notes in releasenotes/notes/ from the git
history: a note counts once it is committed.
"""

project = 'Gantt Release Notes'
copyright = '2026, the Gantt authors'
extensions = ['reno.sphinxext']
master_doc = 'index'
exclude_patterns = ['_build']
html_theme = 'alabaster'
