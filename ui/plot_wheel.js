// The mouse wheel over a plot of the dashboard (ui/plot.py, concatenated before ui/plot.js):
// it scrolls the page, as anywhere else on it. plotly.js would take every wheel over a 3D scene
// (zooming, or turning it on a sideways wheel, even with scrollZoom off) and over 2D axes with
// scrollZoom on, so a page of plots could only be scrolled by its margins. With Ctrl (or ⌘) held,
// or a trackpad's pinch (which browsers send as a wheel with ctrlKey), the wheel zooms a plot
// that allows it (data.scroll_zoom); over one that does not, the browser zooms the page.
// Linted by eslint (eslint.config.mjs: a classic script whose functions plot.js calls).
/* exported guardWheel */

const WHEEL_HINT_MS = 1500;

// Whether a wheel event is one plotly.js may have: a zoom the visitor asked for.
function wheelZooms(event, allowed) {
  return Boolean(allowed) && (event.ctrlKey || event.metaKey);
}

function wheelHintText() {
  const mac = /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent);
  return (mac ? "⌘" : "Ctrl") + " + scroll to zoom";
}

// A short note over the plot, while the wheel scrolls past a plot that can zoom.
function showWheelHint(wrap) {
  let hint = wrap.querySelector(".hf-wheel-hint");
  if (!hint) {
    hint = document.createElement("div");
    hint.className = "hf-wheel-hint";
    hint.setAttribute("aria-hidden", "true");
    hint.textContent = wheelHintText();
    wrap.appendChild(hint);
  }
  hint.classList.add("hf-shown");
  clearTimeout(wrap.hfWheelHintTimer);
  wrap.hfWheelHintTimer = setTimeout(() => hint.classList.remove("hf-shown"), WHEEL_HINT_MS);
}

// Listen on the plot's frame before plotly.js's own listeners (capture): a wheel that is not a
// zoom goes no further, and its default, the page's scroll, happens (nothing prevents it).
function guardWheel(wrap) {
  wrap.addEventListener(
    "wheel",
    (event) => {
      const allowed = wrap.hfData && wrap.hfData.scroll_zoom;
      if (wheelZooms(event, allowed)) return;
      event.stopPropagation();
      if (allowed) showWheelHint(wrap);
    },
    { capture: true, passive: true }
  );
}
