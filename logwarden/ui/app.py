"""Entry script of the audit UI: `streamlit run logwarden/ui/app.py` (what `logwarden ui` starts).

Sets up the page, the optional password gate, the sidebar scope and the page navigation; each
page lives in `views/`. The store URL comes from `LOGWARDEN_DB` (or the settings' default).
Knows nothing of what the pages show.
"""

from __future__ import annotations

import streamlit as st

from logwarden.errors import LogwardenError
from logwarden.ui import auth, data, scope, style
from logwarden.ui.text import escape_markdown

# Long evidence lines wrap instead of running off the page.
TABLE_CSS = "[data-testid='stCode'] pre, [data-testid='stCode'] code {white-space: pre-wrap !important; word-break: break-all;}"

PAGES = (  # (file under views/, relative to this script; title; icon; url path)
    ("overview.py", "Overview", ":material/dashboard:", "overview"),
    ("records.py", "Records", ":material/table_rows:", "records"),
    ("record.py", "Record detail", ":material/description:", "record"),
    ("incidents.py", "Incidents", ":material/hub:", "incidents"),
    ("incident.py", "Incident detail", ":material/timeline:", "incident"),
    ("triage.py", "Triage", ":material/bolt:", "triage"),
    ("runs.py", "Runs & sources", ":material/history:", "runs"),
    ("export.py", "Export", ":material/download:", "export"),
)


def main() -> None:
    # The icon is an image this server serves: a :material/…: or emoji icon is fetched from a CDN.
    st.set_page_config(page_title="logwarden", page_icon=style.page_icon(), layout="wide")
    st.html(f"<style>{style.font_face_css()}{TABLE_CSS}</style>")
    auth.require_password()
    url = data.db_url()
    try:
        data.store_for(url)
        scope.render_sidebar(url)
    except LogwardenError as exc:
        st.error(escape_markdown(str(exc), one_line=True))
        st.stop()
    pages = [st.Page(f"views/{file}", title=title, icon=icon, url_path=path, default=(i == 0))
             for i, (file, title, icon, path) in enumerate(PAGES)]
    st.navigation(pages).run()


main()
