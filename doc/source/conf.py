# Sphinx configuration of OPIE's documentation: ``tox -e docs``, i.e.
# ``sphinx-build -W --keep-going -b html doc/source doc/build/html``.

project = 'OPIE'
copyright = 'OPIE developers'
author = 'OPIE developers'

extensions = [
    # ``.. show-options:: opie`` renders the [opie] options from the
    # ``oslo.config.opts`` entry point, so the reference never drifts.
    'oslo_config.sphinxext',
]

root_doc = 'index'
exclude_patterns = ['build']
pygments_style = 'sphinx'
html_theme = 'alabaster'
html_title = 'OPIE documentation'
