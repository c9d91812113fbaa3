// The evaluation report's controls, inlined into report.html: filter and sort the problems, open
// or close them all, and open whatever the URL's #fragment names (report.html#p-NAME). The
// filter and the order are read from the URL's query too (report.html?status=failed&q=algebra
// &sort=correct), and written back to it, so a view can be shared as a link. The page is
// complete without this script: every problem, attempt and node is in the HTML, collapsed.
(function () {
  "use strict";
  var list = document.getElementById("problems");
  var controls = document.getElementById("controls");
  if (!list || !controls) { return; }
  var rows = Array.prototype.slice.call(list.children);
  var status = document.getElementById("filter-status");
  var text = document.getElementById("filter-text");
  var sortBy = document.getElementById("sort");
  var shown = document.getElementById("shown");
  var statusRank = { "solved": 0, "failed": 1, "unfinished": 2, "not run": 3 };

  function number(row, key) { return parseFloat(row.dataset[key]) || 0; }

  function filter() {
    var wanted = status.value, needle = text.value.trim().toLowerCase(), count = 0;
    rows.forEach(function (row) {
      var hit = (wanted === "" || row.dataset.status === wanted) &&
        (needle === "" || row.dataset.name.toLowerCase().indexOf(needle) >= 0);
      row.hidden = !hit;
      if (hit) { count += 1; }
    });
    shown.textContent = count + " of " + rows.length + " problems shown";
  }

  function sort() {
    var key = sortBy.value;
    var compare = {
      order: function (a, b) { return number(a, "order") - number(b, "order"); },
      name: function (a, b) { return a.dataset.name < b.dataset.name ? -1 : a.dataset.name > b.dataset.name ? 1 : 0; },
      status: function (a, b) { return statusRank[a.dataset.status] - statusRank[b.dataset.status]; },
      correct: function (a, b) { return number(b, "correct") - number(a, "correct"); },
      attempts: function (a, b) { return number(b, "attempts") - number(a, "attempts"); },
      tokens: function (a, b) { return number(b, "tokens") - number(a, "tokens"); },
      lean: function (a, b) { return number(b, "lean") - number(a, "lean"); }
    }[key];
    // Array.prototype.sort is stable: ties keep the benchmark's order.
    var sorted = rows.slice().sort(function (a, b) { return compare(a, b) || number(a, "order") - number(b, "order"); });
    var fragment = document.createDocumentFragment();
    sorted.forEach(function (row) { fragment.appendChild(row); });
    list.appendChild(fragment);
  }

  function setOpen(open) {
    rows.forEach(function (row) { if (!row.hidden) { row.open = open; } });
  }

  function openFragment() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var target = id ? document.getElementById(id) : null;
    if (!target) { return; }
    for (var el = target; el; el = el.parentElement) {
      if (el.tagName === "DETAILS") { el.open = true; }
    }
    target.scrollIntoView();
  }

  function fromQuery() {
    var query = new URLSearchParams(window.location.search);
    if (query.has("status")) { status.value = query.get("status"); }
    if (query.has("q")) { text.value = query.get("q"); }
    if (query.has("sort")) { sortBy.value = query.get("sort"); }
    // A value the select does not offer leaves it empty: fall back to the first option.
    if (status.selectedIndex < 0) { status.selectedIndex = 0; }
    if (sortBy.selectedIndex < 0) { sortBy.selectedIndex = 0; }
  }

  function toQuery() {
    var query = new URLSearchParams();
    if (status.value) { query.set("status", status.value); }
    if (text.value) { query.set("q", text.value); }
    if (sortBy.value !== "order") { query.set("sort", sortBy.value); }
    var search = query.toString();
    try {
      window.history.replaceState(null, "", (search ? "?" + search : window.location.pathname) + window.location.hash);
    } catch (e) { /* a browser that keeps file:// pages from changing their URL */ }
  }

  status.addEventListener("change", function () { filter(); toQuery(); });
  text.addEventListener("input", function () { filter(); toQuery(); });
  sortBy.addEventListener("change", function () { sort(); toQuery(); });
  document.getElementById("open-all").addEventListener("click", function () { setOpen(true); });
  document.getElementById("close-all").addEventListener("click", function () { setOpen(false); });
  window.addEventListener("hashchange", openFragment);
  controls.hidden = false;
  fromQuery();
  if (sortBy.value !== "order") { sort(); }
  filter();
  openFragment();
  // How long the page took to be usable, for the report's own load-time test.
  document.body.dataset.readyMs = String(Math.round(window.performance.now()));
})();
