"""Build-time helpers of the documentation site (mkdocs.yml `hooks:`); not installed.

`hooks.py` is the MkDocs hook module; the others render the generated reference pages
(`openapi_page`, `cli_page`), check links that leave docs/ (`repo_links`) and find the code
examples that tests/unit/docs/ runs (`examples`).
"""
