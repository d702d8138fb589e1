// Progressive enhancement for the filter form (the page works without it as a plain GET form).
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
