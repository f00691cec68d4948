// Accessibility repairs of what the theme, docutils and the widget manager write; axe-core checks
// every page with them (tests/test_book_pages.py). Fetches nothing, changes nothing visible.
(function () {
  "use strict";
  let serial = 0;
  function idOf(el, prefix) {
    if (!el.id) { el.id = prefix + "-" + (++serial); }
    return el.id;
  }
  function repair() {
    // Bibliography: docutils puts entries of the deprecated role doc-biblioentry in a role="list",
    // which may only hold listitems (axe: aria-required-children, aria-deprecated-role).
    document.querySelectorAll('[role="list"] > [role="doc-biblioentry"]').forEach(function (e) {
      e.setAttribute("role", "listitem");
    });
    // ipywidgets sliders: the handle (role="slider") is not tied to the widget's own label
    // (axe: aria-input-field-name).
    document.querySelectorAll('.widget-slider [role="slider"]:not([aria-labelledby]):not([aria-label])')
      .forEach(function (handle) {
        const label = handle.closest(".widget-slider").querySelector(".widget-label");
        if (label && label.textContent.trim()) {
          handle.setAttribute("aria-labelledby", idOf(label, "a11y-label"));
        }
      });
    // An image drawn inside a widget's output (an interactive cell) has no alt text. Inside a figure
    // (MyST-NB `figure:` cell option) it is named by the caption; otherwise by the paragraph closest
    // before its cell, which says what the control redraws (code cells in between are skipped, a
    // heading stops the search). Both are the page's own text, so the Chinese page names it in Chinese.
    document.querySelectorAll(".jupyter-widgets img:not([alt]):not([aria-labelledby])")
      .forEach(function (img) {
        let label = null;
        const figure = img.closest("figure");
        if (figure) {
          label = figure.querySelector("figcaption .caption-text");
        } else {
          const cell = img.closest(".cell");
          for (let el = cell && cell.previousElementSibling; el && !label; el = el.previousElementSibling) {
            if (/^H[1-6]$/.test(el.tagName)) break;
            if (el.tagName === "P") label = el;
          }
        }
        if (label && label.textContent.trim()) {
          img.setAttribute("aria-labelledby", idOf(label, "a11y-caption"));
        }
      });
  }
  let queued = false;
  function later() {
    if (!queued) {
      queued = true;
      window.requestAnimationFrame(function () { queued = false; repair(); });
    }
  }
  function start() {
    repair();
    // The widget manager renders after the page has loaded.
    new MutationObserver(later).observe(document.body, { childList: true, subtree: true });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
