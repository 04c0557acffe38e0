"""``python -m headforms.hosted``: one contained worker (started by the server, never by hand)."""

from .child import main

main()
