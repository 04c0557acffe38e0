"""A browser-like Streamlit client over the real websocket protocol, for tests and benchmarks.

It speaks what the browser speaks (``/_stcore/stream``, ``BackMsg``/``ForwardMsg`` protobufs):
:meth:`Session.run` asks for a script run with a query string, a page and widget states, and
collects what the run drew until it finishes (following reruns a callback asks for). Widget
states can be anything the protocol carries, so a test can send what no browser would (NaN
for an integer input, a string for a number, any click payload for a component).

    with Session(port) as session:
        first = session.run("model=minilm-l6")
        layer = session.widget("number_input", "Layer")
        forged = session.run(widget_states=[number_state(layer, float("nan"))])
        assert not forged.exceptions
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

FINAL = {
    "FINISHED_SUCCESSFULLY",
    "FINISHED_WITH_COMPILE_ERROR",
    "FINISHED_FRAGMENT_RUN_SUCCESSFULLY",
}
"""Script-finished statuses that end a run (an early finish for a rerun does not)."""


@dataclass
class Run:
    """What one script run (and the reruns it asked for) drew."""

    status: str = ""
    seconds: float = 0.0
    elements: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    toasts: list[str] = field(default_factory=list)
    exceptions: list[dict[str, Any]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    query_string: str | None = None
    widgets: dict[tuple[str, str], str] = field(default_factory=dict)
    components: dict[str, str] = field(default_factory=dict)
    new_sessions: list[bytes] = field(default_factory=list)
    """The ``NewSession`` messages that started its runs, as sent (serialised ``ForwardMsg``)."""

    @property
    def messages(self) -> list[str]:
        """Every message a visitor reads: errors, warnings, toasts and exception texts."""
        out = [*self.errors, *self.warnings, *self.toasts]
        for exc in self.exceptions:
            out.extend([exc["type"], exc["message"], *exc["stack_trace"]])
        return out


class Session:
    """One websocket session with a Streamlit server on loopback."""

    def __init__(self, port: int, timeout: float = 120.0, forwarded_for: str | None = None) -> None:
        """``forwarded_for``: an ``X-Forwarded-For`` header, as a proxy in front would send."""
        from websockets.sync.client import connect

        self.timeout = timeout
        url = f"ws://127.0.0.1:{port}/_stcore/stream"
        headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else None
        self._stack = contextlib.ExitStack()
        self._ws = self._stack.enter_context(
            connect(
                url,
                subprotocols=["streamlit"],
                open_timeout=30,
                max_size=None,
                additional_headers=headers,
            )
        )
        self.widgets: dict[tuple[str, str], str] = {}
        self.components: dict[str, str] = {}

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the websocket (the server then stops this session's script run)."""
        self._stack.close()

    def widget(self, kind: str, label: str) -> str:
        """The id of the ``kind`` widget labelled ``label`` drawn by the last run."""
        return self.widgets[(kind, label)]

    def send_rerun(
        self,
        query_string: str = "",
        page_name: str = "",
        widget_states: list[Any] | None = None,
    ) -> None:
        """Ask for a script run without waiting for it."""
        from streamlit.proto.BackMsg_pb2 import BackMsg

        request = BackMsg()
        request.rerun_script.query_string = query_string
        request.rerun_script.page_script_hash = ""
        request.rerun_script.page_name = page_name
        if widget_states:
            request.rerun_script.widget_states.widgets.extend(widget_states)
        self._ws.send(request.SerializeToString())

    def run(
        self,
        query_string: str = "",
        page_name: str = "",
        widget_states: list[Any] | None = None,
    ) -> Run:
        """Ask for a script run and collect what it draws until it finishes."""
        start = time.monotonic()
        self.send_rerun(query_string, page_name, widget_states)
        run = self.collect(start)
        self.widgets.update(run.widgets)
        self.components.update(run.components)
        return run

    def collect(self, start: float | None = None) -> Run:
        """Read messages until the current run finishes (TimeoutError past ``timeout``)."""
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        start = time.monotonic() if start is None else start
        deadline = start + self.timeout
        run = Run()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no end of the script run within {self.timeout} s")
            data = self._ws.recv(timeout=remaining)
            message = ForwardMsg()
            message.ParseFromString(data)
            kind = message.WhichOneof("type")
            if kind == "delta" and message.delta.WhichOneof("type") == "new_element":
                _record(run, message.delta.new_element)
            elif kind == "new_session":
                run.new_sessions.append(data)
            elif kind == "page_info_changed":
                run.query_string = message.page_info_changed.query_string
            elif kind == "script_finished":
                run.status = ForwardMsg.ScriptFinishedStatus.Name(message.script_finished)
                if run.status in FINAL:
                    run.seconds = time.monotonic() - start
                    return run


def _record(run: Run, element: Any) -> None:
    name = element.WhichOneof("type")
    run.elements[name] = run.elements.get(name, 0) + 1
    if name == "exception":
        exc = element.exception
        run.exceptions.append(
            {"type": exc.type, "message": exc.message, "stack_trace": list(exc.stack_trace)}
        )
    elif name == "alert":
        alert = element.alert
        if alert.format == alert.ERROR:
            run.errors.append(alert.body)
        elif alert.format == alert.WARNING:
            run.warnings.append(alert.body)
        else:
            run.texts.append(alert.body)
    elif name == "toast":
        run.toasts.append(element.toast.body)
    elif name in ("markdown", "heading", "text"):
        run.texts.append(getattr(element, name).body)
    elif name == "bidi_component":
        run.components[element.bidi_component.id.rsplit("-", 1)[-1]] = element.bidi_component.id
    else:
        proto = getattr(element, name)
        if hasattr(proto, "id") and hasattr(proto, "label"):
            run.widgets[(name, proto.label)] = proto.id


def number_state(widget_id: str, value: Any) -> Any:
    """A number input's state carrying ``value`` (a float, or a string no browser would send)."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    state = WidgetState(id=widget_id)
    if isinstance(value, str):
        state.string_value = value
    else:
        state.double_value = float(value)
    return state


def text_state(widget_id: str, text: str) -> Any:
    """A text-valued widget's state (a selectbox that accepts new options, a text input)."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    return WidgetState(id=widget_id, string_value=text)


def click_states(component_id: str, value: Any, raw: str | None = None) -> list[Any]:
    """The widget states of a click on a ``st.components.v2`` component, as its frontend sends
    them (its state and its ``clicked`` trigger), carrying ``value`` (or the raw JSON text
    ``raw`` of the trigger list, e.g. with NaN in it)."""
    from streamlit.components.v2.bidi_component.main import _make_trigger_id
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    payload = raw if raw is not None else json.dumps([{"event": "clicked", "value": value}])
    return [
        WidgetState(id=component_id, json_value="{}"),
        WidgetState(id=_make_trigger_id(component_id, "events"), json_trigger_value=payload),
    ]
