// The ring the chooser of overlapping heads (ui/plot.js) draws around the marker of the entry
// under the pointer or the keyboard (the nearest at first), over the plot, so the visitor sees
// which of the crowded markers each entry is. Concatenated before ui/plot.js (ui/plot.py).
// Linted by eslint (eslint.config.mjs: a classic script whose functions plot.js calls).
/* exported showRing, hideRing */

// Ring the point `xy` (px from the plot's top left corner); one ring per plot.
function showRing(wrap, xy) {
  let ring = wrap.querySelector(".hf-ring");
  if (!ring) {
    ring = document.createElement("div");
    ring.className = "hf-ring";
    ring.setAttribute("aria-hidden", "true");
    wrap.appendChild(ring);
  }
  ring.style.left = xy[0] + "px";
  ring.style.top = xy[1] + "px";
}

function hideRing(wrap) {
  const ring = wrap.querySelector(".hf-ring");
  if (ring) ring.remove();
}
