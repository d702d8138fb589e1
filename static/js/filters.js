// Progressive enhancement for the filter form (the page works without it as a plain GET form).
(function () {
  "use strict";

  // Drops empty fields from htmx requests so the pushed URL carries only the filters in use.
  document.addEventListener("htmx:configRequest", function (event) {
    var params = event.detail.parameters;
    if (params instanceof FormData) {
      var empty = [];
      params.forEach(function (value, key) { if (value === "") { empty.push(key); } });
      empty.forEach(function (key) { params.delete(key); });
    } else {
      Object.keys(params).forEach(function (key) { if (params[key] === "") { delete params[key]; } });
    }
  });

  // The compare boxes sit in the table but belong to the filter form (form="filters"); their
  // change events bubble through the table, not the form, so hand them to the form here.
  document.addEventListener("change", function (event) {
    var input = event.target;
    if (input.form && input.form.id === "filters" && !input.closest("#filters")) {
      input.form.requestSubmit();
    }
  });

  // Sets the form's controls to a query string: after a link in the results (a column header,
  // the pager, "drop it") changed the filters, so the next change to the form keeps them.
  function syncForm(form, params) {
    Array.prototype.forEach.call(form.elements, function (el) {
      if (!el.name || !form.contains(el)) { return; }
      var values = params.getAll(el.name);
      if (el.type === "checkbox" || el.type === "radio") {
        el.checked = values.some(function (value) {
          // A bare region code chooses that code at every provider (`provider:code` boxes).
          return value === el.value ||
            (el.name === "region" && value.indexOf(":") === -1 &&
             el.value.slice(el.value.indexOf(":") + 1) === value);
        });
      } else if (el.tagName === "SELECT") {
        el.value = values.length ? values[0] : "";
        if (el.selectedIndex === -1) { el.value = ""; }
      } else if (el.type !== "submit" && el.type !== "button" && el.type !== "reset") {
        el.value = values.length ? values[0] : "";
      }
    });
  }

  // Points every link built from the page's query at the current one: the language switch (in
  // the header, outside what htmx swaps) and the feed's <link rel="alternate"> in the head.
  function syncLinks(search) {
    document.querySelectorAll("a[data-keeps-query]").forEach(function (link) {
      var url = new URL(link.href, location.href);
      url.search = search;
      link.href = url.pathname + url.search + url.hash;
    });
    var feed = document.getElementById("feed-link");
    var alternate = document.getElementById("feed-alternate");
    if (feed && alternate) { alternate.setAttribute("href", feed.getAttribute("href")); }
  }

  document.addEventListener("htmx:afterSettle", function (event) {
    var detail = event.detail;
    if (!detail.target || detail.target.id !== "results" || !detail.xhr) { return; }
    var url = new URL(detail.xhr.responseURL || location.href, location.href);
    syncLinks(url.search);
    var trigger = detail.requestConfig && detail.requestConfig.elt;
    var form = document.getElementById("filters");
    if (form && trigger && trigger !== form && !form.contains(trigger)) {
      syncForm(form, url.searchParams);
    }
    var header = trigger && trigger.closest && trigger.closest("th[data-sort-key]");
    if (header) {
      // A sort header was used: keep the keyboard on that header in the new table.
      var again = document.querySelector(
        '#results th[data-sort-key="' + header.getAttribute("data-sort-key") + '"] a');
      if (again) { again.focus({ preventScroll: true }); }
    }
    if (trigger && trigger.hasAttribute("data-focus-results")) {
      // "Next page": read on from the top of the new rows, not from the pager at the bottom.
      var results = document.getElementById("results");
      results.focus({ preventScroll: true });
      results.scrollIntoView({ block: "start" });
    }
  });

  // A filter box over each long checkbox list (GPU, provider, region): typing hides the choices
  // that do not match; ticked ones stay in view. Its own events never reach the form.
  function narrow(box) {
    var list = document.getElementById(box.getAttribute("aria-controls"));
    var words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    list.querySelectorAll("label").forEach(function (label) {
      var input = label.querySelector("input");
      var text = (label.textContent + " " + input.value).toLowerCase();
      var match = input.checked || words.every(function (w) { return text.indexOf(w) !== -1; });
      label.hidden = !match;
      if (match) { shown += 1; }
    });
    var none = list.parentNode.querySelector(".checklist-none");
    if (none) { none.hidden = shown > 0; }
  }

  function setUpChecklists() {
    document.querySelectorAll(".checklist-filter").forEach(function (box) {
      box.hidden = false;
      box.addEventListener("input", function (event) { event.stopPropagation(); narrow(box); });
      box.addEventListener("change", function (event) { event.stopPropagation(); });
      box.addEventListener("keydown", function (event) {
        if (event.key === "Enter") { event.preventDefault(); }  // not a form submission
        if (event.key === "Escape" && box.value) { box.value = ""; narrow(box); }
      });
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setUpChecklists);
  } else {
    setUpChecklists();
  }
})();
