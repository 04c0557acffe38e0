"""The dashboard's server: Streamlit running ``app.py``, behind the HTTP rules of
:mod:`headforms.hosted.http` (host names answered, framing, hosted mode's hidden endpoints).

``streamlit run server.py`` (what ``scripts/start.sh``, ``make run``, the image and ``headforms
serve`` do) serves the same app as ``streamlit run app.py``, with those rules; tests of pages
run ``app.py`` directly (Streamlit's ``AppTest``).
"""

from __future__ import annotations

import streamlit as st
from starlette.middleware import Middleware

from headforms.hosted.http import HttpRules

app = st.App("app.py", middleware=[Middleware(HttpRules)])
