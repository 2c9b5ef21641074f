
(function () {
  var source = document.getElementById("case-data");
  if (!source) { return; }
  var data = JSON.parse(source.textContent);
  var rows = data.rows, size = data.pageSize, page = 0, shown = rows;
  var filter = document.getElementById("case-filter");
  var status = document.getElementById("case-status");
  var body = document.getElementById("case-rows");
  var info = document.getElementById("case-info");
  var prev = document.getElementById("case-prev");
  var next = document.getElementById("case-next");
  var labels = data.labels;
  rows.forEach(function (row) { row.search = row.c.join(" ").toLowerCase(); });
  function text(tag, value) {
    var node = document.createElement(tag);
    node.textContent = value;
    return node;
  }
  function fill(row, list) {
    row.d.forEach(function (item) {
      list.appendChild(text("dt", labels[item[0]]));
      var value = document.createElement("dd");
      if (Array.isArray(item[1])) {
        var items = document.createElement("ul");
        item[1].forEach(function (entry) { items.appendChild(text("li", entry)); });
        value.appendChild(items);
      } else {
        value.textContent = item[1];
      }
      list.appendChild(value);
    });
    if (row.w) {
      var link = document.createElement("a");
      link.href = "#" + row.w;
      link.textContent = "the two fixtures side by side";
      list.appendChild(text("dt", "where it was lost"));
      var cell = document.createElement("dd");
      cell.appendChild(link);
      list.appendChild(cell);
    }
  }
  function build(row) {
    var box = document.createElement("details");
    box.setAttribute("data-tags", row.t.join(" "));
    var head = document.createElement("summary");
    row.c.forEach(function (cell) { head.appendChild(text("span", cell)); });
    box.appendChild(head);
    box.addEventListener("toggle", function () {
      if (box.open && box.childNodes.length === 1) {
        var list = document.createElement("dl");
        fill(row, list);
        box.appendChild(list);
      }
    });
    return box;
  }
  function draw() {
    var pages = Math.max(1, Math.ceil(shown.length / size));
    page = Math.min(Math.max(page, 0), pages - 1);
    var nodes = shown.slice(page * size, (page + 1) * size).map(build);
    body.replaceChildren.apply(body, nodes);
    info.textContent = shown.length + " of " + rows.length + " case(s); page " +
      (page + 1) + " of " + pages;
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
  }
  function apply() {
    var needle = filter.value.trim().toLowerCase(), wanted = status.value;
    shown = rows.filter(function (row) {
      return (!wanted || row.t.indexOf(wanted) >= 0) &&
        (!needle || row.search.indexOf(needle) >= 0);
    });
    page = 0;
    draw();
  }
  filter.addEventListener("input", apply);
  status.addEventListener("change", apply);
  prev.addEventListener("click", function () { page -= 1; draw(); });
  next.addEventListener("click", function () { page += 1; draw(); });
  apply();
  document.body.setAttribute("data-ready", "1");
})();
