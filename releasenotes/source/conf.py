# Release notes of OPIE, written with reno: ``tox -e releasenotes``.
# Each change adds a note with ``reno new SLUG``; reno groups the notes
# by the release tag that first contains them.

project = 'OPIE release notes'
copyright = 'OPIE developers'
author = 'OPIE developers'

extensions = ['reno.sphinxext']

root_doc = 'index'
exclude_patterns = ['build']
html_theme = 'alabaster'
