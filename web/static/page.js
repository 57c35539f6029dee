// Conveniences of the analyzer UI; every page works without them.
// Served from 'self' only: the CSP allows no inline script, so injected
// markup still cannot run any.
(function () {
  "use strict";
  // The zone select's "browser's" option carries the browser's IANA name.
  var zone = "";
  try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) {}
  document.querySelectorAll("option[data-browser-zone]").forEach(function (o) {
    if (zone) { o.value = zone; o.textContent = "browser's (" + zone + ")"; }
  });
  // Copy buttons copy their data-copy text.
  document.querySelectorAll("button[data-copy]").forEach(function (b) {
    b.hidden = false;
    b.addEventListener("click", function () {
      navigator.clipboard.writeText(b.getAttribute("data-copy")).then(function () {
        b.textContent = "copied";
        setTimeout(function () { b.textContent = "copy"; }, 1500);
      });
    });
  });
  // On a phone the filters fold behind their summary (served open, so the
  // form works without this script).
  if (window.matchMedia && window.matchMedia("(max-width: 600px)").matches) {
    document.querySelectorAll("details.filters-fold").forEach(function (d) { d.open = false; });
  }
  // The log box scrolls to the decisive line (the page itself stays put).
  var box = document.getElementById("log"), hit = document.getElementById("decisive");
  if (box && hit && !location.hash) {
    box.scrollTop = Math.max(0, hit.offsetTop - box.offsetTop - 48);
  }
})();
