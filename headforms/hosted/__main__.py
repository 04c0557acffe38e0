"""``python -m headforms.hosted``: one contained worker (started by the server, never by hand)."""

from .workers import worker_main

worker_main()
