"""The dashboard's pages, one script per page, run by Streamlit's multipage navigation (`ui/app.py`
lists them in `PAGES`). A page reads through `ui.data` and shows; it holds no store or model logic.
Being a package keeps them importable for tests and visible to the linters and the layer contracts.
"""
