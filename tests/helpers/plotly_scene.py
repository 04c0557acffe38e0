"""Reading and clicking what plotly.js draws in a real browser (the browser tests): every head
marker's screen position in a 3D scene (once the page has settled), the most isolated of them, a
click the scene sees."""

from __future__ import annotations

import time

from waiting import DEADLINE_S

SCENE_POINTS_JS = """
(gd, role) => {
  role = role || "heads";
  // Screen position of every head marker of the 3D scene: data coordinates times the scene's
  // data scale, through the camera's projection x view x model matrices (column-major), into
  // the scene's domain of the plot area, offset by the plot's position in the page.
  const full = gd._fullLayout;
  const scene = full.scene._scene;
  const cam = scene.glplot.cameraParams;
  const scale = scene.dataScale;
  const size = full._size;
  const dom = full.scene.domain;
  const rect = gd.getBoundingClientRect();
  const mul = (m, v) =>
    [0, 1, 2, 3].map((r) => m[r] * v[0] + m[4 + r] * v[1] + m[8 + r] * v[2] + m[12 + r] * v[3]);
  const left = size.l + dom.x[0] * size.w, width = (dom.x[1] - dom.x[0]) * size.w;
  const top = size.t + (1 - dom.y[1]) * size.h, height = (dom.y[1] - dom.y[0]) * size.h;
  const points = [];
  gd._fullData.forEach((trace) => {
    if (!trace.meta || trace.meta.role !== role) return;
    for (let i = 0; i < trace.x.length; i++) {
      if (trace.x[i] === null || !isFinite(trace.x[i])) continue;  // a line break
      const world = [trace.x[i] * scale[0], trace.y[i] * scale[1], trace.z[i] * scale[2], 1];
      const clip = mul(cam.projection, mul(cam.view, mul(cam.model, world)));
      const ndc = [clip[0] / clip[3], clip[1] / clip[3]];
      points.push({
        x: rect.left + left + ((ndc[0] + 1) / 2) * width,
        y: rect.top + top + ((1 - ndc[1]) / 2) * height,
        inView: clip[3] > 0 && Math.abs(ndc[0]) < 0.95 && Math.abs(ndc[1]) < 0.95,
        layer: trace.customdata ? trace.customdata[i][1] : null,
        head: trace.customdata ? trace.customdata[i][2] : null,
      });
    }
  });
  return points;
}
"""


def scene_ready_js(key: str) -> str:
    """A page function: true once the 3D scene of the plot ``data-hf-plot=key`` is drawn."""
    return f"""() => {{
  const gd = document.querySelector('div[data-hf-plot="{key}"]');
  const scene = gd && gd._fullLayout && gd._fullLayout.scene && gd._fullLayout.scene._scene;
  return Boolean(scene && scene.glplot && scene.glplot.cameraParams);
}}"""


SCRIPT_RUNNING_JS = """
() => {
  const status = document.querySelector('[data-testid="stStatusWidget"]');
  return Boolean(status && status.offsetParent !== null);
}
"""


def wait_clickable(page, key: str) -> None:
    """Wait until the page's script has finished and the plot ``data-hf-plot=key`` takes clicks
    (ui/plot.js binds its click handler once the plot is drawn: ``gd.hfBound``). A click aimed as
    soon as the first point shows can land while the page is still running or the plot still
    drawing, and be lost (the container's run of the heatmap click once was)."""
    page.wait_for_function(
        f"""() => {{
  const gd = document.querySelector('div[data-hf-plot="{key}"]');
  return Boolean(gd && gd.hfBound) && !({SCRIPT_RUNNING_JS})();
}}"""
    )


def settled_points(page, plot, role: str = "heads", timeout_s: float = DEADLINE_S) -> list[dict]:
    """The markers' screen positions (:data:`SCENE_POINTS_JS`) once the page's script has
    finished and they are the same in two readings 300 ms apart: a scene can be read before its
    first frame has set the camera, or before the rest of the page arrives and moves or resizes
    the plot, and a click aimed from such a reading lands on nothing."""
    deadline = time.monotonic() + timeout_s
    last = None
    while True:
        points = None if page.evaluate(SCRIPT_RUNNING_JS) else plot.evaluate(SCENE_POINTS_JS, role)
        if points and points == last:
            return points
        if time.monotonic() > deadline:
            raise AssertionError(f"the scene's markers did not settle within {timeout_s:.0f} s")
        last = points
        page.wait_for_timeout(300)


def most_isolated(points: list[dict]) -> dict:
    """The point farthest from its nearest neighbour (a click cannot hit another one)."""

    def gap(point: dict) -> float:
        return min(
            (point["x"] - q["x"]) ** 2 + (point["y"] - q["y"]) ** 2
            for q in points
            if q is not point
        )

    return max(points, key=gap)


def click(page, point: dict) -> None:
    """Move the pointer onto the point once and click once, as fast as a script can (no wait
    for a hover, no held button): a 3D scene once lost such clicks."""
    page.mouse.move(point["x"], point["y"])
    page.mouse.click(point["x"], point["y"])
